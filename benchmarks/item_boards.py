"""Item boards at scale: every pair at once against the per-pair path it replaced.

The recorded SWE-bench file is enlarged 10× and 50× (`benchmarks.enlarge_snapshots`: every
entry copied under new names, so a board's ranked entries grow k-fold and its pairs k²-fold:
31,125 pairs a board at 10×, 780,625 at 50×) and parsed by the production parser. Timed on
its two boards, from the same `BoardEntry` lists:

* ours: `scores.item_boards.item_board` and `board_frames` (one 0/1 matrix per board, pair
  counts by matrix products, `stats.sign_test_pvalues`, Holm on arrays, a columnar pairs
  table);
* baseline: the per-pair path it replaced (`per_pair_frames` below: `stats.paired_comparisons`
  with a `sign_flip_pvalue` call, set intersections and a record per pair, frames built row by
  row). It is kept here as the oracle the tests compare the new path with.

Up to 10× both run whole and their tables must be identical. At 50× the baseline would take
about 25 minutes, so it runs on each board's first `--sample` ranked entries (every pair
among them) and its time per pair is multiplied by the boards' pairs: the printed ratio is
against that projection, and says so. Goal: ours at least 20× faster at 10×.

    python -m benchmarks --only boards
    python -m benchmarks.item_boards [--multipliers 10,50] [--sample 150]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from bench_pipeline.core import settings
from bench_pipeline.core.stats import (
    PairResult,
    dominates,
    paired_comparisons,
    rank_ranges,
    significantly_better_pairs,
)
from bench_pipeline.ingest.parsers import swebench
from bench_pipeline.ingest.payload import RawFile
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.scores.item_boards import (
    ALPHA,
    BoardEntry,
    BoardPair,
    BoardRow,
    ItemResult,
    board_frames,
    clopper_pearson,
    item_board,
)
from bench_pipeline.scores.navigator import cost_per_success
from bench_pipeline.scores.parity import parity
from benchmarks.enlarge_snapshots import enlarge

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
MULTIPLIERS = (10, 50)
SAMPLE = 150
FULL_UP_TO = 10
"""Largest multiplier at which the baseline runs whole (beyond it, on a sample)."""
GOAL = 20.0


# The per-pair path (the baseline, and the tests' oracle) --------------------------------------


def per_pair_board(
    board: str, entries: Iterable[BoardEntry], *, alpha: float = ALPHA
) -> tuple[list[BoardRow], list[BoardPair]]:
    """The board's rows and pairs as the per-pair path computed them."""
    listed = list(entries)
    keys = [e.key for e in listed]
    if len(set(keys)) != len(keys):
        raise ValueError(f"board {board}: an entry key appears twice")
    with_items = [e for e in listed if e.items]
    resolved = {e.key: sum(r.resolved for r in e.items.values()) for e in with_items}
    held = {}  # parity before rank (`scores.parity`, the one rule)
    for e in with_items:
        if e.published_percent is not None:
            n, k = len(e.items), resolved[e.key]
            checked = parity(100.0 * k / n, e.published_percent, basis=f"{k} of {n} items",
                             unit="%")  # fmt: skip
            if not checked.agrees:
                held[e.key] = checked.reason
    ranked = [e for e in with_items if e.key not in held]
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
    for e in sorted(
        (e for e in with_items if e.key in held),
        key=lambda e: (-resolved[e.key] / len(e.items), e.entry, e.key),
    ):
        n, k = len(e.items), resolved[e.key]
        low, high = clopper_pearson(k, n)
        total, per = cost_per_success(
            [r.cost_usd for r in e.items.values()], [float(r.resolved) for r in e.items.values()]
        )
        rows.append(
            BoardRow(
                board, e.key, e.entry, e.model_id, e.published_percent, n, k, 100.0 * k / n,
                low, high, None, None, None, total, per, parity=held[e.key],
            )
        )  # fmt: skip
    rows.extend(
        BoardRow(
            board, e.key, e.entry, e.model_id, e.published_percent, None, None, None, None,
            None, None, None, None, None, None,
        )
        for e in unranked
    )  # fmt: skip
    pairs = [_pair(board, t, items_of, outcomes, names, dominated_by) for t in tests]
    return rows, pairs


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
    "board": pl.String, "entry": pl.String, "model_id": pl.String, "items": pl.Int64,
    "resolved": pl.Int64, "score": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "rank_best": pl.Int64, "rank_worst": pl.Int64, "tied": pl.Boolean,
    "cost_usd": pl.String, "cost_per_success_usd": pl.String,
    "published_percent": pl.Float64, "entry_key": pl.String, "dominated_by": pl.String,
    "parity": pl.String,
}  # fmt: skip
_PAIR_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "board": pl.String, "entry_a": pl.String, "entry_b": pl.String, "items": pl.Int64,
    "discordant": pl.Int64, "p_value": pl.Float64, "significant": pl.Boolean,
    "better": pl.String, "dominates": pl.String, "wins_a": pl.Int64, "wins_b": pl.Int64,
    "entry_key_a": pl.String, "entry_key_b": pl.String,
}  # fmt: skip


def per_pair_frames(
    boards: Iterable[tuple[str, Sequence[BoardEntry]]], *, alpha: float = ALPHA
) -> dict[str, pl.DataFrame]:
    """`item_boards` and `item_board_pairs` as the per-pair path built them, row by row."""
    rows: list[dict[str, object]] = []
    pairs: list[dict[str, object]] = []
    for board, entries in boards:
        board_rows, board_pairs = per_pair_board(board, entries, alpha=alpha)
        rows += [
            {
                "board": r.board, "entry": r.entry, "model_id": r.model_id, "items": r.items,
                "resolved": r.resolved, "score": r.score, "ci_low": r.ci_low,
                "ci_high": r.ci_high, "rank_best": r.rank_best, "rank_worst": r.rank_worst,
                "tied": r.tied, "cost_usd": format_usd(r.cost_usd),
                "cost_per_success_usd": format_usd(r.cost_per_success_usd),
                "published_percent": r.published_percent, "entry_key": r.key,
                "dominated_by": "; ".join(r.dominated_by) or None, "parity": r.parity,
            }
            for r in board_rows
        ]  # fmt: skip
        pairs += [
            {
                "board": p.board, "entry_a": p.entry_a, "entry_b": p.entry_b,
                "items": p.items, "discordant": p.discordant, "p_value": p.p_value,
                "significant": p.significant, "better": p.better, "dominates": p.dominates,
                "wins_a": p.wins_a, "wins_b": p.wins_b, "entry_key_a": p.key_a,
                "entry_key_b": p.key_b,
            }
            for p in board_pairs
        ]  # fmt: skip
    return {
        "item_boards": pl.DataFrame(rows, schema=_BOARD_SCHEMA, orient="row"),
        "item_board_pairs": pl.DataFrame(pairs, schema=_PAIR_SCHEMA, orient="row"),
    }


# The benchmark ----------------------------------------------------------------------------------


def enlarged_boards(copies: int, work: Path) -> dict[str, list[BoardEntry]]:
    """The SWE-bench boards of the recorded file enlarged `copies` times, parsed."""
    source = work / f"source-{copies}"
    shutil.copytree(SNAPSHOTS / "swebench", source / "swebench")
    enlarge(source, work / f"x{copies}", copies)
    path = work / f"x{copies}" / "swebench" / "leaderboards.json"
    frames = swebench.parse([RawFile(path.name, path.read_bytes())])
    items: dict[tuple[str, str], dict[str, ItemResult]] = {}
    for board, folder, instance, resolved, cost in (
        frames["swebench_item_results"]
        .select("leaderboard", "folder", "instance_id", "resolved", "cost_usd")
        .iter_rows()
    ):
        items.setdefault((board, folder), {})[instance] = ItemResult(
            resolved in (True, "true"), None if cost is None else Decimal(str(cost))
        )
    boards: dict[str, list[BoardEntry]] = {}
    for board, folder, name, percent in (
        frames["swebench_entries"]
        .select("leaderboard", "folder", "entry", "resolved_percent")
        .iter_rows()
    ):
        boards.setdefault(board, []).append(
            BoardEntry(
                folder, name, None, None if percent is None else float(percent),
                items.get((board, folder), {}),
            )
        )  # fmt: skip
    return {b: listed for b, listed in sorted(boards.items()) if any(e.items for e in listed)}


def _timed(function):
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def _first_ranked(entries: Sequence[BoardEntry], count: int) -> list[BoardEntry]:
    """The board's first `count` entries with per-item results (the baseline's sample)."""
    return [e for e in entries if e.items][:count]


def bench(copies: int, sample: int, work: Path) -> bool:
    boards = enlarged_boards(copies, work)
    ours_s, ours = _timed(lambda: board_frames(item_board(b, e) for b, e in boards.items()))
    pairs = ours["item_board_pairs"].height
    print(f"{copies}× the recorded SWE-bench boards ({len(boards)} boards, {pairs:,} pairs)")
    print(f"  ours              {ours_s:.2f} s")
    if copies <= FULL_UP_TO:
        base_s, base = _timed(lambda: per_pair_frames(boards.items()))
        same = all(_equal(ours[name], base[name]) for name in ("item_boards", "item_board_pairs"))
        print(f"  per-pair path     {base_s:.2f} s")
        ratio = base_s / ours_s
        print(f"  ratio             {ratio:,.1f}x (goal ≥ {GOAL:.0f}x), same tables: {same}")
        return ratio >= GOAL and same
    sampled = {b: _first_ranked(e, sample) for b, e in boards.items()}
    base_s, base = _timed(lambda: per_pair_frames(sampled.items()))
    per_pair = base_s / base["item_board_pairs"].height
    projected = per_pair * pairs
    print(
        f"  per-pair path     {base_s:.2f} s on {base['item_board_pairs'].height:,} pairs "
        f"({sample} entries a board): {1e6 * per_pair:.0f} µs a pair, "
        f"{projected:,.0f} s projected for all"
    )
    print(f"  ratio             {projected / ours_s:,.0f}x against the projection")
    return True


def _equal(left: pl.DataFrame, right: pl.DataFrame) -> bool:
    try:
        assert_frame_equal(left, right, check_exact=True)
    except AssertionError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.item_boards")
    parser.add_argument("--multipliers", default=",".join(map(str, MULTIPLIERS)))
    parser.add_argument("--sample", type=int, default=SAMPLE, help="baseline entries at 50×")
    args = parser.parse_args(argv)
    print(f"item boards at scale (load {os.getloadavg()[0]:.1f})")
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-item-boards-") as work:
        for copies in (int(m) for m in args.multipliers.split(",")):
            ok = bench(copies, args.sample, Path(work)) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
