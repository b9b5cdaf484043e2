"""Bradley–Terry strengths from head-to-head results: a vectorised maximum-likelihood fit.

Model: P(i beats j) = π_i / (π_i + π_j). Each result `(i, j, s)` is one game in which `i`
scored `s` (1 win, 0.5 tie, 0 loss) and `j` scored `1 − s`.

A plain maximum-likelihood fit does not exist when a group won (or lost) every game, or when
the groups split into parts that never met. So every group also plays one virtual game,
drawn (half a win each way), against a fixed reference of strength 1. This keeps every
strength finite and the fit unique, and pulls little once a group has many real games (at
20 pairs it is 1 game in 21).

The log-likelihood in θ = log π is strictly concave, so Newton's method with a backtracking
line search climbs to its unique maximum; the results are first gathered into a matrix of
game counts and a vector of wins, so each step is a few array operations and one linear
solve, whatever the number of games.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve

__all__ = ["bradley_terry", "log_likelihood", "mean_win_probability"]

Array = NDArray[np.float64]


def _tally(pairs: Iterable[tuple[str, str, float]]) -> tuple[list[str], Array, Array]:
    """Names (sorted), wins per group (the virtual half-win included) and game counts."""
    results = list(pairs)
    firsts, seconds, scores = zip(*results, strict=True) if results else ((), (), ())
    names: list[str] = sorted(set(firsts) | set(seconds))
    index = {name: i for i, name in enumerate(names)}
    first = np.array([index[a] for a in firsts], dtype=np.intp)
    second = np.array([index[b] for b in seconds], dtype=np.intp)
    score = np.array(scores, dtype=np.float64)
    if np.any(first == second):
        at = int(np.argmax(first == second))
        raise ValueError(f"group {firsts[at]!r} cannot play itself")
    outside = ~((score >= 0.0) & (score <= 1.0))
    if np.any(outside):
        raise ValueError(f"a result must be in 0..1, got {scores[int(np.argmax(outside))]}")
    size = len(names)
    wins = np.asarray(
        0.5 + np.bincount(first, score, size) + np.bincount(second, 1.0 - score, size),
        dtype=np.float64,
    )
    games = np.bincount(first * size + second, minlength=size * size).reshape(size, size)
    return names, wins, (games + games.T).astype(np.float64)


def log_likelihood(theta: Array, wins: Array, games: Array) -> float:
    """The regularised log-likelihood at log-strengths `theta` (for a fit or a check).

    Args:
        theta: Log-strength per group.
        wins: Wins per group, ties counted half and the virtual half-win included.
        games: Symmetric matrix of games between each two groups (zero diagonal).
    """
    # Σ_i W_i θ_i − Σ_{i<j} n_ij log(π_i + π_j) − Σ_i log(π_i + 1), in a stable form:
    # log(π_i + π_j) = θ_j + log1p(exp(θ_i − θ_j)) = logaddexp(θ_i, θ_j).
    pair_terms = np.logaddexp(theta[:, None], theta[None, :])
    return float(wins @ theta - 0.5 * np.sum(games * pair_terms) - np.sum(np.logaddexp(theta, 0.0)))


def bradley_terry(
    pairs: Iterable[tuple[str, str, float]],
    *,
    tolerance: float = 1e-12,
    max_iterations: int = 200,
) -> dict[str, float]:
    """Bradley–Terry strengths from head-to-head results (the regularised maximum).

    At the maximum, for every group, its wins (ties half, plus the virtual half-win) equal
    its expected wins Σ_j n_ij π_i / (π_i + π_j) + π_i / (π_i + 1).

    Args:
        pairs: Results `(i, j, s)`: `i` scored `s` against `j`.
        tolerance: Stop once no log-strength moves by more than this in a step.
        max_iterations: Newton steps allowed (a concave fit needs a handful).

    Returns:
        Strength per group met in `pairs` (the reference is not included).

    Raises:
        ValueError: On a result outside 0–1, a group playing itself, or no convergence.
    """
    names, wins, games = _tally(pairs)
    if not names:
        return {}
    theta = np.zeros(len(names))
    current = log_likelihood(theta, wins, games)
    for _ in range(max_iterations):
        beats = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i beats j)
        beats_reference = 1.0 / (1.0 + np.exp(-theta))
        gradient = wins - np.sum(games * beats, axis=1) - beats_reference
        weight = games * beats * beats.T
        # The negated Hessian: positive definite because of the reference games.
        curvature = -weight
        np.fill_diagonal(curvature, weight.sum(axis=1) + beats_reference * (1 - beats_reference))
        step = cho_solve(cho_factor(curvature, check_finite=False), gradient, check_finite=False)
        scale = 1.0
        while True:
            trial = theta + scale * step
            value = log_likelihood(trial, wins, games)
            if value >= current - 1e-12 * abs(current) or scale < 1e-8:
                break
            scale /= 2.0
        moved = float(np.max(np.abs(trial - theta)))
        theta, current = trial, value
        if moved <= tolerance:
            return {name: math.exp(t) for name, t in zip(names, theta.tolist(), strict=True)}
    raise ValueError(f"Bradley–Terry did not converge in {max_iterations} iterations")


def mean_win_probability(strength: Mapping[str, float]) -> dict[str, float]:
    """Each group's mean P(win) against every other rated group (a lone group gets none)."""
    out = {}
    for i, si in strength.items():
        others = [si / (si + sj) for j, sj in strength.items() if j != i]
        if others:
            out[i] = math.fsum(others) / len(others)
    return out
