"""Bradley–Terry at 150 groups: the production fit against a plain scipy fit of the same model.

Results: 150 groups with a seeded latent skill play 6,000 games (a tie when the draw falls
near the middle), what a large UseCaseRank board's rerun pairs look like.

* baseline: tally the games with numpy, then `scipy.optimize.minimize` (L-BFGS-B, analytic
  gradient) on the same regularised negative log-likelihood, from all strengths 1.
* measured: `bench_pipeline.scores.bradley_terry.bradley_terry` on the same results.

Both must reach the same strengths (relative difference under 1e-6, checked). Each side
runs `--repeat` times, the best shown. Goal: the production fit at most 1.5× the baseline's
time (a ratio of at most 1.5).
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import minimize

from bench_pipeline.scores.bradley_terry import bradley_terry

GROUPS = 150
GAMES = 6_000
SEED = 20_261_201
REPEAT = 15
GOAL = 1.5


def synthetic_games(groups: int = GROUPS, games: int = GAMES, seed: int = SEED) -> list:
    """`games` results among `groups` groups drawn from a seeded latent skill."""
    rng = random.Random(seed)
    names = [f"group-{i:03d}" for i in range(groups)]
    skill = {name: rng.gauss(0.0, 1.0) for name in names}
    results = []
    for _ in range(games):
        a, b = rng.sample(names, 2)
        p = 1.0 / (1.0 + math.exp(skill[b] - skill[a]))
        draw = rng.random()
        outcome = 0.5 if abs(draw - p) < 0.05 else (1.0 if draw < p else 0.0)
        results.append((a, b, outcome))
    return results


def scipy_fit(results: Sequence[tuple[str, str, float]]) -> dict[str, float]:
    """The same regularised fit, written plainly with numpy and scipy's L-BFGS-B."""
    names = sorted({a for a, _, _ in results} | {b for _, b, _ in results})
    index = {name: i for i, name in enumerate(names)}
    first = np.array([index[a] for a, _, _ in results])
    second = np.array([index[b] for _, b, _ in results])
    score = np.array([s for _, _, s in results])
    wins = np.full(len(names), 0.5)
    np.add.at(wins, first, score)
    np.add.at(wins, second, 1.0 - score)

    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        pair = np.logaddexp(theta[first], theta[second])
        value = -(wins @ theta - pair.sum() - np.logaddexp(theta, 0.0).sum())
        p_first = np.exp(theta[first] - pair)
        expected = np.bincount(first, p_first, len(names))
        expected += np.bincount(second, 1.0 - p_first, len(names))
        expected += 1.0 / (1.0 + np.exp(-theta))
        return float(value), expected - wins

    fit = minimize(
        negative,
        np.zeros(len(names)),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10_000},
    )
    return {name: math.exp(t) for name, t in zip(names, fit.x, strict=True)}


def _best(fit: Callable[[], dict[str, float]], repeat: int) -> tuple[float, dict[str, float]]:
    best, result = math.inf, {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = fit()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit status 1 when the goal is missed or the fits disagree."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bradley_terry")
    parser.add_argument("--repeat", type=int, default=REPEAT)
    args = parser.parse_args(argv)
    results = synthetic_games()
    baseline, expected = _best(lambda: scipy_fit(results), args.repeat)
    measured, actual = _best(lambda: bradley_terry(results), args.repeat)
    gap = max(abs(actual[k] - expected[k]) / expected[k] for k in expected)
    ratio = measured / baseline
    print(f"Bradley–Terry, {GROUPS} groups, {GAMES:,} games (best of {args.repeat})")
    print(f"  baseline  scipy L-BFGS-B fit   {baseline * 1000:8.1f} ms")
    print(f"  measured  bradley_terry        {measured * 1000:8.1f} ms")
    print(
        f"  ratio {ratio:.2f}× the baseline's time (goal ≤ {GOAL}×); "
        f"largest relative difference {gap:.1e}"
    )
    met = ratio <= GOAL and gap < 1e-6
    print("  goal met" if met else "  goal NOT met")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
