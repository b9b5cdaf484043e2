"""Exact paired tests at any size: three measurements, each against a baseline timed here.

1. n = 500 on 0/1 outcomes (one test over 500 items, 300 of them discordant, 170 for A):
   `sign_flip_pvalue` against a plain Python integer count (a dict of signed sums, one term
   at a time: the textbook exact count). Same p-value required. Goal: ≥ 10× faster.
2. The whole SWE-bench bash-only board from the recorded `leaderboards.json`, end to end:
   parse, build the entries, 300 exact tests + Holm, rank ranges, costs and dominance
   (`scores.item_boards.item_board`). Baseline: the same 300 tests alone by the plain count.
3. 4,950 Navigator-size tests (100 synthetic models × 40 real-valued task scores,
   `benchmarks.pairs.synthetic_scores`) against a plain numpy meet in the middle (all 2^20
   sums of each half, sorted, two `searchsorted` per sum; no pruning, no sign fixing). The
   baseline runs on a spread sample of pairs (`--sample`, default 12) and the ratio is per
   test on that same sample; ours also runs all 4,950 (`--all`, off by default: 78 s
   measured on the shared 2-core machine at load 9). Each test is timed as the best of 3
   runs, ours and the baseline alike, so that another process taking the shared core does
   not decide the ratio. Same p-values required. Goal: ≥ 20× faster.

    python -m benchmarks --only exact [--sample N] [--all]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Sequence
from decimal import Decimal
from itertools import combinations

import numpy as np

from bench_pipeline.core import settings
from bench_pipeline.core.stats import holm, sign_flip_pvalue
from bench_pipeline.ingest.parsers import swebench
from bench_pipeline.ingest.payload import RawFile
from benchmarks.pairs import synthetic_scores

SNAPSHOT = settings.REPO_ROOT / "sources" / "snapshots" / "swebench" / "leaderboards.json"
SAMPLE = 12
REPEAT = 3
GOAL_500 = 10.0
GOAL_MITM = 20.0


def plain_count(terms: Sequence[int]) -> float:
    """The exact two-sided p-value by counting signed sums in a dict, term by term."""
    counts = {0: 1}
    for term in terms:
        following: dict[int, int] = {}
        for total, ways in counts.items():
            for signed in (total + term, total - term):
                following[signed] = following.get(signed, 0) + ways
        counts = following
    observed = abs(sum(terms))
    return sum(w for t, w in counts.items() if abs(t) >= observed) / 2 ** len(terms)


def _signed_sums(values: np.ndarray) -> np.ndarray:
    sums = np.zeros(1)
    for value in values:
        sums = np.concatenate((sums - value, sums + value))
    return sums


def plain_mitm(terms: np.ndarray) -> float:
    """Plain numpy meet in the middle with the same tie tolerance as `sign_flip_pvalue`."""
    x = terms[terms != 0]
    scale = float(np.abs(x).sum())
    threshold = abs(float(x.sum())) - 1e-9 * scale
    if threshold <= 0:
        return 1.0
    left, right = _signed_sums(x[: x.size // 2]), np.sort(_signed_sums(x[x.size // 2 :]))
    count = right.size * left.size - int(np.searchsorted(right, threshold - left).sum())
    count += int(np.searchsorted(right, -threshold - left, side="right").sum())
    return count / 2.0**x.size


def _best(function, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def bench_500() -> bool:
    outcomes = [1] * 170 + [-1] * 130 + [0] * 200
    random.Random(500).shuffle(outcomes)
    ours_s, ours = _best(lambda: sign_flip_pvalue(outcomes), 5)
    plain_s, plain = _best(lambda: plain_count([d for d in outcomes if d]), 3)
    ratio = plain_s / ours_s
    print("one exact test, n = 500 (0/1 outcomes, 300 discordant)")
    print(f"  ours              {1e3 * ours_s:.3f} ms   p = {ours:.6g}")
    print(f"  plain Python      {1e3 * plain_s:.1f} ms   p = {plain:.6g}")
    print(f"  ratio             {ratio:,.0f}x (goal ≥ {GOAL_500:.0f}x), same p: {ours == plain}")
    return ratio >= GOAL_500 and ours == plain


def bench_board() -> bool:
    from bench_pipeline.scores.item_boards import BoardEntry, ItemResult, item_board

    raw = RawFile(SNAPSHOT.name, SNAPSHOT.read_bytes())

    def end_to_end():
        frames = swebench.parse([raw])
        entries, items = frames["swebench_entries"], frames["swebench_item_results"]
        by_folder: dict[str, dict[str, ItemResult]] = {}
        for row in items.filter(items["leaderboard"] == "bash-only").iter_rows(named=True):
            cost = None if row["cost_usd"] is None else Decimal(row["cost_usd"])
            by_folder.setdefault(row["folder"], {})[row["instance_id"]] = ItemResult(
                row["resolved"] == "true", cost
            )
        listed = [
            BoardEntry(r["folder"], r["entry"], None, float(r["resolved_percent"]),
                       by_folder.get(r["folder"], {}))
            for r in entries.filter(entries["leaderboard"] == "bash-only").iter_rows(named=True)
        ]  # fmt: skip
        return item_board("bash-only", listed), by_folder

    ours_s, (board, by_folder) = _best(end_to_end, 3)

    def plain_tests():
        pvalues = []
        for a, b in combinations(sorted(by_folder), 2):
            shared = by_folder[a].keys() & by_folder[b].keys()
            terms = [int(by_folder[a][i].resolved) - int(by_folder[b][i].resolved) for i in shared]
            pvalues.append(plain_count([t for t in terms if t]))
        return holm(pvalues)

    plain_s, _ = _best(plain_tests, 1)
    print(f"SWE-bench bash-only board, end to end ({len(board.pairs)} pairs)")
    print(f"  ours              {ours_s:.2f} s (parse, entries, tests, Holm, ranks, costs)")
    print(f"  plain count       {plain_s:.2f} s (the {len(board.pairs)} tests and Holm only)")
    print(f"  ratio             {plain_s / ours_s:,.1f}x")
    return len(board.pairs) == 300


def bench_navigator(sample: int, run_all: bool) -> bool:
    scores, weights = synthetic_scores(100)
    tasks = list(weights)
    a = np.array([weights[t] for t in tasks])
    pairs = list(combinations(list(scores), 2))
    chosen = pairs[:: max(1, len(pairs) // sample)][:sample]
    ours_s = plain_s = 0.0
    same = 0
    for x, y in chosen:
        d = np.array([scores[x][t] - scores[y][t] for t in tasks])
        seconds, ours = _best(lambda d=d: sign_flip_pvalue(d, a), REPEAT)
        ours_s += seconds
        seconds, plain = _best(lambda d=d: plain_mitm(a * d), REPEAT)
        plain_s += seconds
        same += ours == plain
    ratio = plain_s / ours_s
    print(f"Navigator-size tests, n = 40 real-valued ({len(chosen)} of {len(pairs):,} pairs)")
    print(f"  ours              {1e3 * ours_s / len(chosen):.1f} ms a test")
    print(f"  plain numpy MITM  {1e3 * plain_s / len(chosen):.1f} ms a test")
    goal = f"goal ≥ {GOAL_MITM:.0f}x"
    print(f"  ratio             {ratio:,.1f}x ({goal}), same p: {same} of {len(chosen)}")
    if run_all:
        started = time.perf_counter()
        for x, y in pairs:
            sign_flip_pvalue([scores[x][t] - scores[y][t] for t in tasks], a)
        total = time.perf_counter() - started
        print(f"  all {len(pairs):,} (ours)   {total:.1f} s")
    return ratio >= GOAL_MITM and same == len(chosen)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks --only exact")
    parser.add_argument("--sample", type=int, default=SAMPLE, help="Navigator pairs timed")
    parser.add_argument("--all", action="store_true", help="also time all 4,950 tests")
    args = parser.parse_args(argv)
    print(f"exact paired tests (load {os.getloadavg()[0]:.1f})")
    ok = bench_500()
    ok = bench_board() and ok
    ok = bench_navigator(args.sample, args.all) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
