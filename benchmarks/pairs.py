"""Paired ranks at scale: every pair of 100 models × 40 tasks (4,950 exact tests + Holm).

The population is generated from a fixed seed: 8 categories × 5 tasks, weights a_t =
weight(category) / 5 as the Navigator Index uses them. Each model has a skill and each task
a difficulty; a task score is logistic(skill − difficulty + noise), a continuous value in
0–1, so no two differences tie and every test has all 40 non-zero terms (the hardest case:
no repeated magnitudes to share work).

* measured: `stats.paired_comparisons` over all 4,950 pairs, what `navigator_board` runs:
  one exact sign-flip test per pair at n = 40, then Holm over all of them. Goal: < 60 s.
* baseline: `scipy.stats.permutation_test`, exact (`n_resamples=inf`,
  `permutation_type='samples'` on the weighted differences, which flips their signs), on a
  sample of pairs restricted to their first 20 tasks: at n = 40 it would enumerate 2^40
  sign vectors per pair, which cannot be run. Our `sign_flip_pvalue` runs on the same
  20-task pairs, and its p-values must equal scipy's. scipy's work grows as 2^n, so its
  time per pair at n = 40 is extrapolated as its measured time at n = 20 × 2^20; that
  extrapolation (not a measurement) gives the ratio at n = 40.
* two processes: `navigator.paired_results(..., workers=2)`, what
  `navigator_board(..., workers=2)` runs: the same tests shared by `--workers` processes
  (default 2, the cores of this machine; process start-up included), then Holm. Its
  results must equal the single-process ones.

The load average is printed first: the machine may be shared, and the figures are wall
times.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from bench_pipeline.core.stats import paired_comparisons, sign_flip_pvalue
from bench_pipeline.scores.navigator import CATEGORY_WEIGHTS, paired_results, task_weights

SEED = 20_260_601
MODELS = 100
TASKS_PER_CATEGORY = 5
SAMPLE = 4
WORKERS = 2
BASELINE_TASKS = 20
GOAL_SECONDS = 60.0


def synthetic_scores(
    models: int, seed: int = SEED
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """`scores[model][task]` in 0–1 and the task weights a_t, from a fixed seed."""
    rng = np.random.default_rng(seed)
    tasks = {
        f"{category}/{k}": category
        for category in CATEGORY_WEIGHTS
        for k in range(TASKS_PER_CATEGORY)
    }
    skill = rng.uniform(-1.5, 1.5, size=models)
    difficulty = rng.normal(0.0, 0.7, size=len(tasks))
    noise = rng.normal(0.0, 0.6, size=(models, len(tasks)))
    values = 1.0 / (1.0 + np.exp(-(skill[:, None] - difficulty[None, :] + noise)))
    scores = {
        f"model-{m:03d}": dict(zip(tasks, values[m].tolist(), strict=True)) for m in range(models)
    }
    return scores, task_weights(tasks)


def _scipy_pvalue(terms: np.ndarray) -> float:
    from scipy import stats

    result = stats.permutation_test(
        (terms,),
        lambda x, axis: np.sum(x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="two-sided",
    )
    return float(result.pvalue)


def main(argv: Sequence[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks --only pairs", description=summary)
    parser.add_argument("--models", type=int, default=MODELS, help="synthetic models")
    parser.add_argument(
        "--sample", type=int, default=SAMPLE, help="pairs timed against scipy (n = 20)"
    )
    parser.add_argument("--seed", type=int, default=SEED, help="population seed")
    parser.add_argument(
        "--workers", type=int, default=WORKERS, help="processes for the split run (0: skip)"
    )
    args = parser.parse_args(argv)

    load = os.getloadavg()[0]
    scores, weights = synthetic_scores(args.models, args.seed)
    pairs = args.models * (args.models - 1) // 2
    started = time.perf_counter()
    results = paired_comparisons(scores, weights)
    seconds = time.perf_counter() - started
    rejected = sum(r.significant for r in results)
    terms = min(r.n_tasks for r in results) if results else 0

    split_seconds = math.nan
    split_equal = True
    if args.workers > 0:
        started = time.perf_counter()
        split = paired_results(scores, weights, workers=args.workers)
        split_seconds = time.perf_counter() - started
        split_equal = split == results

    # Baseline: a spread of pairs (every k-th), first 20 tasks, same weights.
    names = list(scores)
    every = max(1, pairs // max(1, args.sample))
    sample = list(combinations(names, 2))[::every][: args.sample]
    first = list(weights)[:BASELINE_TASKS]
    a = np.array([weights[t] for t in first])
    ours_s = theirs_s = 0.0
    equal = 0
    for model_a, model_b in sample:
        d = np.array([scores[model_a][t] - scores[model_b][t] for t in first])
        started = time.perf_counter()
        ours = sign_flip_pvalue(d, a)
        ours_s += time.perf_counter() - started
        started = time.perf_counter()
        theirs = _scipy_pvalue(a * d)
        theirs_s += time.perf_counter() - started
        equal += ours == theirs
    n_sample = max(1, len(sample))
    scipy_pair_20 = theirs_s / n_sample
    scipy_pair_40 = scipy_pair_20 * 2.0**20  # extrapolated: exact enumeration is 2^n work
    scipy_all_40 = scipy_pair_40 * pairs

    print(f"paired ranks, {args.models} models × {len(weights)} tasks (load {load:.1f})")
    print(f"  pairs             {pairs:,} exact sign-flip tests (n = {terms}) + Holm")
    print(f"  seconds           {seconds:.1f} in one process (goal < {GOAL_SECONDS:.0f})")
    print(f"  per test          {1e3 * seconds / max(1, pairs):.1f} ms")
    if args.workers > 0:
        same = "results identical to one process" if split_equal else "DIFFERENT RESULTS"
        print(f"  {args.workers} processes       {split_seconds:.1f} s ({same})")
    print(f"  Holm rejections   {rejected:,} of {pairs:,} at alpha 0.05")
    print(
        f"  scipy, n = {BASELINE_TASKS}     {len(sample)} pair(s): {scipy_pair_20:.2f} s a pair "
        f"(ours {1e3 * ours_s / n_sample:.2f} ms: {scipy_pair_20 * n_sample / ours_s:,.0f}x)"
    )
    print(f"  same p-values     {equal} of {len(sample)} equal to scipy's")
    print(
        f"  scipy, n = 40     {scipy_pair_40 / 86_400:,.0f} days a pair, "
        f"{scipy_all_40 / (365.25 * 86_400):,.0f} years for all pairs "
        "(extrapolated ×2^20 from n = 20, not measured)"
    )
    print(f"  ratio at n = 40   {scipy_all_40 / seconds:.2e}x (extrapolated)")
    best = min(seconds, split_seconds) if args.workers > 0 else seconds
    ok = best < GOAL_SECONDS and equal == len(sample) and split_equal
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
