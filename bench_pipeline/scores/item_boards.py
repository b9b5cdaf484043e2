"""Boards from published per-item results: paired exact tests, rank ranges and dominance.

A board is one leaderboard whose entries publish, per item (a SWE-bench instance), whether
it was resolved and what it cost. For each entry with per-item results:

* items, resolved, score = 100 × resolved / items, and the exact (Clopper–Pearson) 95%
  interval of the score;
* total cost = the exact decimal sum of per-item costs (None when any item has no cost:
  never a partial sum) and cost per resolved item (`navigator.cost_per_success`, the one
  rule for it: total ÷ successes, to 10⁻¹² USD).

For each pair, over the items both entries ran: d_t = resolved_a − resolved_b, zero
differences dropped; the exact two-sided sign-flip test of Σ d_t, which on 0/1 outcomes is
the exact binomial count over the discordant items (`stats.sign_flip_pvalue`, exact at any
size on lattice data). Holm over every pair of the board at 5%; rank ranges and `tied` as
the Navigator Index defines them (`stats.rank_ranges`); dominance = significantly better
and strictly cheaper per resolved item (`stats.dominates`). Entries without per-item results
are listed after the ranked ones with their published percentage and no rank range.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import polars as pl
from scipy import stats as scipy_stats

from bench_pipeline.core.stats import (
    PairResult,
    dominates,
    paired_comparisons,
    rank_ranges,
    significantly_better_pairs,
)
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.scores.navigator import cost_per_success

ALPHA = 0.05
LEVEL = 0.95


@dataclass(frozen=True)
class ItemResult:
    """One entry's published result on one item."""

    resolved: bool
    cost_usd: Decimal | None = None


@dataclass(frozen=True)
class BoardEntry:
    """One published entry of a leaderboard.

    Attributes:
        key: Unique within the board (SWE-bench's submission folder; names can repeat).
        entry: The publisher's entry name, verbatim.
        model_id: The registry model the entry names, when the identity rules allow.
        published_percent: The percentage the publisher shows.
        items: Per-item results by item id; empty when none are published.
    """

    key: str
    entry: str
    model_id: str | None = None
    published_percent: float | None = None
    items: Mapping[str, ItemResult] = field(default_factory=dict)


@dataclass(frozen=True)
class BoardRow:
    """One row of `item_boards`."""

    board: str
    key: str
    entry: str
    model_id: str | None
    published_percent: float | None
    items: int | None
    resolved: int | None
    score: float | None
    ci_low: float | None
    ci_high: float | None
    rank_best: int | None
    rank_worst: int | None
    tied: bool | None
    cost_usd: Decimal | None
    cost_per_success_usd: Decimal | None
    dominated_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class BoardPair:
    """One row of `item_board_pairs`: entry_a is ranked above (or level with) entry_b."""

    board: str
    key_a: str
    key_b: str
    entry_a: str
    entry_b: str
    items: int
    discordant: int
    wins_a: int
    wins_b: int
    p_value: float
    significant: bool
    better: str | None
    dominates: str | None


@dataclass(frozen=True)
class ItemBoard:
    """A board: its rows (ranked entries first) and every pair of ranked entries."""

    board: str
    rows: tuple[BoardRow, ...]
    pairs: tuple[BoardPair, ...]


def clopper_pearson(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact binomial interval for a proportion, in percent.

    ``low`` is the ``(1 - level) / 2`` quantile of Beta(k, n − k + 1) and ``high`` the
    ``(1 + level) / 2`` quantile of Beta(k + 1, n − k); by convention ``low = 0`` when
    ``k = 0`` and ``high = 100`` when ``k = n``.

    Raises:
        ValueError: Unless ``0 <= successes <= trials`` and ``trials > 0``.
    """
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    tail = (1.0 - level) / 2.0
    low = 0.0 if successes == 0 else scipy_stats.beta.ppf(tail, successes, trials - successes + 1)
    high = (
        1.0
        if successes == trials
        else scipy_stats.beta.ppf(1.0 - tail, successes + 1, trials - successes)
    )
    return 100.0 * float(low), 100.0 * float(high)


def item_board(board: str, entries: Iterable[BoardEntry], *, alpha: float = ALPHA) -> ItemBoard:
    """The board of one leaderboard (see the module docstring).

    Ranked entries are ordered by score (highest first), then entry name, then key; the
    entries without per-item results follow by published percentage.

    Raises:
        ValueError: On two entries with the same key.
    """
    listed = list(entries)
    keys = [e.key for e in listed]
    if len(set(keys)) != len(keys):
        raise ValueError(f"board {board}: an entry key appears twice")
    ranked = [e for e in listed if e.items]
    resolved = {e.key: sum(r.resolved for r in e.items.values()) for e in ranked}
    ranked.sort(key=lambda e: (-resolved[e.key] / len(e.items), e.entry, e.key))
    unranked = sorted(
        (e for e in listed if not e.items),
        key=lambda e: (-(e.published_percent or 0.0), e.entry, e.key),
    )

    outcomes = {e.key: {i: int(r.resolved) for i, r in e.items.items()} for e in ranked}
    items_of = {e.key: set(e.items) for e in ranked}
    weights = {item: 1 for e in ranked for item in e.items}
    tests = paired_comparisons(outcomes, weights, alpha=alpha)
    better_pairs = significantly_better_pairs(tests)
    ranges = rank_ranges([e.key for e in ranked], better_pairs)
    costs = {
        e.key: cost_per_success(
            [r.cost_usd for r in e.items.values()], [float(r.resolved) for r in e.items.values()]
        )
        for e in ranked
    }
    dominated_by: dict[str, list[str]] = {e.key: [] for e in listed}
    names = {e.key: e.entry for e in listed}
    for winner, loser in sorted(better_pairs):
        if dominates(True, costs[winner][1], costs[loser][1]):
            dominated_by[loser].append(winner)

    rows = []
    for e in ranked:
        n, k = len(e.items), resolved[e.key]
        low, high = clopper_pearson(k, n)
        rank = ranges[e.key]
        rows.append(
            BoardRow(
                board, e.key, e.entry, e.model_id, e.published_percent, n, k, 100.0 * k / n,
                low, high, rank.rank_best, rank.rank_worst, rank.tied, *costs[e.key],
                tuple(names[w] for w in dominated_by[e.key]),
            )
        )  # fmt: skip
    rows.extend(
        BoardRow(
            board, e.key, e.entry, e.model_id, e.published_percent, None, None, None, None,
            None, None, None, None, None, None,
        )
        for e in unranked
    )  # fmt: skip
    pairs = tuple(_pair(board, t, items_of, outcomes, names, dominated_by) for t in tests)
    return ItemBoard(board=board, rows=tuple(rows), pairs=pairs)


def _pair(
    board: str,
    test: PairResult,
    items_of: Mapping[str, set[str]],
    outcomes: Mapping[str, Mapping[str, int]],
    names: Mapping[str, str],
    dominated_by: Mapping[str, list[str]],
) -> BoardPair:
    a, b = test.model_a, test.model_b
    shared = items_of[a] & items_of[b]
    wins_a = sum(1 for i in shared if outcomes[a][i] > outcomes[b][i])
    wins_b = sum(1 for i in shared if outcomes[a][i] < outcomes[b][i])
    winner = None
    if a in dominated_by[b]:
        winner = names[a]
    elif b in dominated_by[a]:
        winner = names[b]
    return BoardPair(
        board, a, b, names[a], names[b], len(shared), wins_a + wins_b, wins_a, wins_b,
        test.p_value, test.significant, None if test.better is None else names[test.better],
        winner,
    )  # fmt: skip


_BOARD_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "board": pl.String,
    "entry": pl.String,
    "model_id": pl.String,
    "items": pl.Int64,
    "resolved": pl.Int64,
    "score": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "rank_best": pl.Int64,
    "rank_worst": pl.Int64,
    "tied": pl.Boolean,
    "cost_usd": pl.String,
    "cost_per_success_usd": pl.String,
    "published_percent": pl.Float64,
    "entry_key": pl.String,
    "dominated_by": pl.String,
}
_PAIR_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "board": pl.String,
    "entry_a": pl.String,
    "entry_b": pl.String,
    "items": pl.Int64,
    "discordant": pl.Int64,
    "p_value": pl.Float64,
    "significant": pl.Boolean,
    "better": pl.String,
    "dominates": pl.String,
    "wins_a": pl.Int64,
    "wins_b": pl.Int64,
    "entry_key_a": pl.String,
    "entry_key_b": pl.String,
}


def _row_record(r: BoardRow) -> dict[str, object]:
    return {
        "board": r.board,
        "entry": r.entry,
        "model_id": r.model_id,
        "items": r.items,
        "resolved": r.resolved,
        "score": r.score,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "rank_best": r.rank_best,
        "rank_worst": r.rank_worst,
        "tied": r.tied,
        "cost_usd": format_usd(r.cost_usd),
        "cost_per_success_usd": format_usd(r.cost_per_success_usd),
        "published_percent": r.published_percent,
        "entry_key": r.key,
        "dominated_by": "; ".join(r.dominated_by) or None,
    }


def _pair_record(p: BoardPair) -> dict[str, object]:
    return {
        "board": p.board,
        "entry_a": p.entry_a,
        "entry_b": p.entry_b,
        "items": p.items,
        "discordant": p.discordant,
        "p_value": p.p_value,
        "significant": p.significant,
        "better": p.better,
        "dominates": p.dominates,
        "wins_a": p.wins_a,
        "wins_b": p.wins_b,
        "entry_key_a": p.key_a,
        "entry_key_b": p.key_b,
    }


def board_frames(boards: Iterable[ItemBoard]) -> dict[str, pl.DataFrame]:
    """`item_boards` and `item_board_pairs`; costs as exact decimal strings, null when unknown."""
    listed = list(boards)
    rows = [_row_record(r) for board in listed for r in board.rows]
    pairs = [_pair_record(p) for board in listed for p in board.pairs]
    return {
        "item_boards": pl.DataFrame(rows, schema=_BOARD_SCHEMA, orient="row"),
        "item_board_pairs": pl.DataFrame(pairs, schema=_PAIR_SCHEMA, orient="row"),
    }


__all__ = [
    "BoardEntry",
    "BoardPair",
    "BoardRow",
    "ItemBoard",
    "ItemResult",
    "board_frames",
    "clopper_pearson",
    "item_board",
]
