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
the Navigator Index defines them (`stats.rank_ranges`). Parity before rank: an entry whose
score from its items disagrees with its published percentage at the published rounding
(`scores.parity`) is listed with both numbers and the reason, and is not ranked. Dominance
= significantly better and strictly cheaper per resolved item (`stats.dominates`). Entries
without per-item results are listed after the ranked ones with their published percentage
and no rank range.

Pairs are computed for the whole board at once (a board at 50× the recorded data has ~1,250
ranked entries and ~780,000 pairs): an entries × items 0/1 matrix of what each entry ran and
resolved gives every pair's shared items and wins by three matrix products
(:mod:`bench_pipeline.scores.board_matrix`); the p-values are
`stats.sign_test_pvalues` (bit for bit `stats.sign_flip_pvalue` on the same items), Holm is
`stats.holm_rejected`, and the pairs table is built from the arrays, column by column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
import numpy.typing as npt
import polars as pl
from scipy import stats as scipy_stats

from bench_pipeline.core.stats import holm_rejected, rank_bounds, sign_test_pvalues
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.scores.board_matrix import ItemResults, pair_counts
from bench_pipeline.scores.navigator import cost_per_success
from bench_pipeline.scores.parity import parity

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
    parity: str | None = None
    """Why an entry with per-item results has no rank: they disagree with its published
    score (`scores.parity`); None otherwise."""


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


@dataclass(frozen=True, eq=False)
class ItemBoard:
    """A board: its rows (ranked entries first) and every pair of ranked entries.

    Attributes:
        board: The leaderboard's name.
        rows: One per entry, ranked entries first.
        pair_frame: Its `item_board_pairs` rows, one per pair of ranked entries in ranked
            order (a before b), as published.
    """

    board: str
    rows: tuple[BoardRow, ...]
    pair_frame: pl.DataFrame

    @property
    def pairs(self) -> tuple[BoardPair, ...]:
        """The pairs as records, for reading a board (the frame is what is published)."""
        columns = self.pair_frame.select(_PAIR_FIELDS)
        return tuple(BoardPair(*row) for row in columns.iter_rows())


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


def clopper_pearson_many(
    successes: npt.NDArray[np.int64], trials: npt.NDArray[np.int64], level: float = LEVEL
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """:func:`clopper_pearson` of many proportions at once (the same quantiles, in percent).

    Raises:
        ValueError: Unless every ``0 <= successes <= trials`` and ``trials > 0``.
    """
    k, n = np.asarray(successes, dtype=np.int64), np.asarray(trials, dtype=np.int64)
    bad = (n <= 0) | (k < 0) | (k > n)
    if bad.any():
        where = int(np.argmax(bad))
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {k[where]}/{n[where]}")
    tail = (1.0 - level) / 2.0
    low, high = np.zeros(k.shape), np.ones(k.shape)
    some, short = k > 0, k < n
    low[some] = scipy_stats.beta.ppf(tail, k[some], n[some] - k[some] + 1)
    high[short] = scipy_stats.beta.ppf(1.0 - tail, k[short] + 1, n[short] - k[short])
    return 100.0 * low, 100.0 * high


def item_board(board: str, entries: Iterable[BoardEntry], *, alpha: float = ALPHA) -> ItemBoard:
    """The board of one leaderboard (see the module docstring).

    Ranked entries are ordered by score (highest first), then entry name, then key; the
    entries without per-item results follow by published percentage.

    Raises:
        ValueError: On two entries with the same key.
    """
    listed = list(entries)
    codes: dict[str, int] = {}
    entry_index, item_codes, resolved = [], [], []
    costs: dict[int, tuple[Decimal | None, Decimal | None]] = {}
    for index, e in enumerate(listed):
        if not e.items:
            continue
        entry_index += [index] * len(e.items)
        item_codes += [codes.setdefault(item, len(codes)) for item in e.items]
        outcomes = [r.resolved for r in e.items.values()]
        resolved += outcomes
        costs[index] = cost_per_success(
            [r.cost_usd for r in e.items.values()], [float(r) for r in outcomes]
        )
    results = ItemResults(
        entry=np.array(entry_index, dtype=np.int64),
        item=np.array(item_codes, dtype=np.int64),
        resolved=np.array(resolved, dtype=np.bool_),
    )
    return board_from_results(board, listed, results, costs, alpha=alpha)


def board_from_results(
    board: str,
    entries: Sequence[BoardEntry],
    results: ItemResults,
    costs: Mapping[int, tuple[Decimal | None, Decimal | None]],
    *,
    alpha: float = ALPHA,
) -> ItemBoard:
    """The board of one leaderboard from its per-item results in columns.

    Args:
        board: The leaderboard's name.
        entries: Its entries; their ``items`` are not read (``results`` holds them).
        results: One row per (entry, item), ``entry`` indexing ``entries``; an entry with
            no row publishes only a percentage.
        costs: ``navigator.cost_per_success`` (total, per resolved item) of every entry
            with results, by index.
        alpha: Family-wise level of Holm over the board's pairs.

    Raises:
        ValueError: On two entries with the same key.
    """
    keys = [e.key for e in entries]
    if len(set(keys)) != len(keys):
        raise ValueError(f"board {board}: an entry key appears twice")
    n_items = np.bincount(results.entry, minlength=len(entries)).tolist()
    n_resolved = np.bincount(results.entry[results.resolved], minlength=len(entries)).tolist()
    held: dict[int, str | None] = {}  # parity before rank (`scores.parity`)
    for i, e in enumerate(entries):
        if n_items[i] and e.published_percent is not None:
            checked = parity(
                100.0 * n_resolved[i] / n_items[i], e.published_percent,
                basis=f"{n_resolved[i]} of {n_items[i]} items", unit="%",
            )  # fmt: skip
            if not checked.agrees:
                held[i] = checked.reason
    ranked = [i for i in range(len(entries)) if n_items[i] and i not in held]
    ranked.sort(key=lambda i: (-n_resolved[i] / n_items[i], entries[i].entry, entries[i].key))
    unranked = sorted(
        (i for i in range(len(entries)) if not n_items[i]),
        key=lambda i: (-(entries[i].published_percent or 0.0), entries[i].entry, entries[i].key),
    )
    counts = pair_counts(results, ranked)
    a, b = counts.a, counts.b
    pvalues = sign_test_pvalues(counts.wins_a, counts.wins_b)
    significant = holm_rejected(pvalues, alpha)
    size = len(ranked)
    better = np.where(significant, np.where(counts.wins_a > counts.wins_b, a, b), size)
    winners = better[significant]
    losers = np.where(winners == a[significant], b[significant], a[significant])
    best, worst = rank_bounds(size, winners, losers)
    # Dominance (`stats.dominates`): significantly better and strictly cheaper per resolved
    # item, never with an unknown cost. Costs are compared as exact decimals, through
    # their rank among the board's distinct known costs.
    per_success = [costs[i][1] for i in ranked]
    known_costs = sorted({c for c in per_success if c is not None})
    cost_rank = {c: r for r, c in enumerate(known_costs)}
    order = np.array([-1 if c is None else cost_rank[c] for c in per_success], dtype=np.int64)
    dominant = (order[winners] >= 0) & (order[losers] >= 0) & (order[winners] < order[losers])
    dominance = np.full(a.size, size)
    dominance[np.flatnonzero(significant)[dominant]] = winners[dominant]
    dominated_by = _dominated_by(entries, ranked, winners[dominant], losers[dominant])

    low, high = clopper_pearson_many(
        np.array([n_resolved[i] for i in ranked], dtype=np.int64),
        np.array([n_items[i] for i in ranked], dtype=np.int64),
    )
    rows = []
    for position, i in enumerate(ranked):
        e, n, k = entries[i], n_items[i], n_resolved[i]
        rank_best, rank_worst = int(best[position]), int(worst[position])
        rows.append(
            BoardRow(
                board, e.key, e.entry, e.model_id, e.published_percent, n, k, 100.0 * k / n,
                float(low[position]), float(high[position]), rank_best, rank_worst,
                rank_best != rank_worst, *costs[i], dominated_by[position],
            )
        )  # fmt: skip
    held_order = sorted(
        held, key=lambda i: (-n_resolved[i] / n_items[i], entries[i].entry, entries[i].key)
    )
    for i in held_order:  # per-item results at odds with the published score: no rank
        e, n, k = entries[i], n_items[i], n_resolved[i]
        ci_low, ci_high = clopper_pearson(k, n)
        rows.append(
            BoardRow(
                board, e.key, e.entry, e.model_id, e.published_percent, n, k, 100.0 * k / n,
                ci_low, ci_high, None, None, None, *costs[i], parity=held[i],
            )
        )  # fmt: skip
    rows.extend(
        BoardRow(
            board, e.key, e.entry, e.model_id, e.published_percent, None, None, None, None,
            None, None, None, None, None, None,
        )
        for e in (entries[i] for i in unranked)
    )  # fmt: skip
    names = pl.Series([*(entries[i].entry for i in ranked), None], dtype=pl.String)
    ranked_keys = pl.Series([entries[i].key for i in ranked], dtype=pl.String)
    pair_frame = pl.DataFrame(
        {
            "board": pl.repeat(board, a.size, dtype=pl.String, eager=True),
            "entry_a": names.gather(a),
            "entry_b": names.gather(b),
            "items": counts.shared,
            "discordant": counts.wins_a + counts.wins_b,
            "p_value": pvalues,
            "significant": significant,
            "better": names.gather(better),
            "dominates": names.gather(dominance),
            "wins_a": counts.wins_a,
            "wins_b": counts.wins_b,
            "entry_key_a": ranked_keys.gather(a),
            "entry_key_b": ranked_keys.gather(b),
        },
        schema=_PAIR_SCHEMA,
    )
    return ItemBoard(board=board, rows=tuple(rows), pair_frame=pair_frame)


def _dominated_by(
    entries: Sequence[BoardEntry],
    ranked: Sequence[int],
    winners: npt.NDArray[np.int64],
    losers: npt.NDArray[np.int64],
) -> list[tuple[str, ...]]:
    """Per ranked position, the names of the entries dominating it, in their keys' order."""
    key_order = np.empty(len(ranked), dtype=np.int64)
    key_order[sorted(range(len(ranked)), key=lambda p: entries[ranked[p]].key)] = np.arange(
        len(ranked)
    )
    order = np.lexsort((key_order[winners], losers))
    names = np.array([entries[i].entry for i in ranked] or [""], dtype=object)
    cuts = np.searchsorted(losers[order], np.arange(len(ranked) + 1))
    sorted_winners = winners[order]
    return [
        tuple(names[sorted_winners[cuts[p] : cuts[p + 1]]].tolist()) for p in range(len(ranked))
    ]


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
    "parity": pl.String,
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
_PAIR_FIELDS = (
    "board", "entry_key_a", "entry_key_b", "entry_a", "entry_b", "items", "discordant",
    "wins_a", "wins_b", "p_value", "significant", "better", "dominates",
)  # fmt: skip
"""The pairs table's columns in the order of :class:`BoardPair`'s fields."""


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
        "parity": r.parity,
    }


def board_frames(boards: Iterable[ItemBoard]) -> dict[str, pl.DataFrame]:
    """`item_boards` and `item_board_pairs`; costs as exact decimal strings, null when unknown."""
    listed = list(boards)
    rows = [_row_record(r) for board in listed for r in board.rows]
    pairs = [board.pair_frame for board in listed]
    return {
        "item_boards": pl.DataFrame(rows, schema=_BOARD_SCHEMA, orient="row"),
        "item_board_pairs": pl.concat(pairs) if pairs else pl.DataFrame(schema=_PAIR_SCHEMA),
    }


__all__ = [
    "BoardEntry",
    "BoardPair",
    "BoardRow",
    "ItemBoard",
    "ItemResult",
    "ItemResults",
    "board_frames",
    "board_from_results",
    "clopper_pearson",
    "clopper_pearson_many",
    "item_board",
]
