"""The vectorised Bradley–Terry fit: the regularised maximum, whatever the games."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.scores.bradley_terry import bradley_terry, log_likelihood
from benchmarks.bradley_terry import scipy_fit, synthetic_games

pytestmark = pytest.mark.unit


def _stationarity_gap(games: list[tuple[str, str, float]], pi: dict[str, float]) -> float:
    """Largest |wins + ½ − expected wins − π/(π + 1)| over groups, computed game by game."""
    wins = dict.fromkeys(pi, 0.5)
    expected = {g: s / (s + 1.0) for g, s in pi.items()}
    for a, b, s in games:
        wins[a] += s
        wins[b] += 1.0 - s
        expected[a] += pi[a] / (pi[a] + pi[b])
        expected[b] += pi[b] / (pi[a] + pi[b])
    return max(abs(wins[g] - expected[g]) for g in pi)


results = st.lists(
    st.tuples(
        st.sampled_from("abcdef"), st.sampled_from("abcdef"), st.sampled_from([0.0, 0.5, 1.0])
    ).filter(lambda r: r[0] != r[1]),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(results)
def test_the_fit_is_the_stationary_point_for_any_games(games) -> None:
    # Even one-sided records (a group that won everything) have a finite maximum, thanks to
    # the virtual drawn game against the reference.
    pi = bradley_terry(games)
    assert set(pi) == {a for a, _, _ in games} | {b for _, b, _ in games}
    assert all(math.isfinite(s) and s > 0 for s in pi.values())
    if games:
        assert _stationarity_gap(games, pi) < 1e-9


def test_the_fit_equals_an_independent_scipy_fit_at_150_groups() -> None:
    games = synthetic_games(groups=150, games=6_000, seed=7)
    ours, theirs = bradley_terry(games), scipy_fit(games)
    assert max(abs(ours[g] - theirs[g]) / theirs[g] for g in theirs) < 1e-6
    assert _stationarity_gap(games, ours) < 1e-9


def test_the_fit_is_the_maximum_of_the_likelihood() -> None:
    rng = random.Random(3)
    games = [(a, b, rng.choice([0.0, 0.5, 1.0])) for a, b in [("a", "b"), ("b", "c")] * 10]
    pi = bradley_terry(games)
    names = sorted(pi)
    index = {n: i for i, n in enumerate(names)}
    wins = np.full(3, 0.5)
    counts = np.zeros((3, 3))
    for a, b, s in games:
        wins[index[a]] += s
        wins[index[b]] += 1 - s
        counts[index[a], index[b]] += 1
        counts[index[b], index[a]] += 1
    best = np.log([pi[n] for n in names])
    top = log_likelihood(best, wins, counts)
    for nudge in np.eye(3) * 1e-3:
        assert log_likelihood(best + nudge, wins, counts) < top
        assert log_likelihood(best - nudge, wins, counts) < top


def test_a_single_win_solved_by_hand() -> None:
    # a beat b once. Stationarity: 1.5 = π_a/(π_a + π_b) + π_a/(π_a + 1), and by symmetry
    # (θ → −θ) π_b = 1/π_a, so with x = π_a: 1.5 = x²/(x² + 1) + x/(x + 1).
    pi = bradley_terry([("a", "b", 1.0)])
    x = pi["a"]
    assert pi["b"] == pytest.approx(1 / x, rel=1e-12)
    assert x / (x + pi["b"]) + x / (x + 1) == pytest.approx(1.5, abs=1e-12)
    assert bradley_terry([("x", "y", 0.5)] * 4) == pytest.approx({"x": 1.0, "y": 1.0})
    assert bradley_terry([]) == {}


@pytest.mark.parametrize(
    ("games", "message"),
    [([("a", "a", 1.0)], "cannot play itself"), ([("a", "b", 1.5)], "must be in 0..1")],
)
def test_bad_results_are_refused(games, message) -> None:
    with pytest.raises(ValueError, match=message):
        bradley_terry(games)


def test_no_convergence_is_an_error() -> None:
    with pytest.raises(ValueError, match="did not converge"):
        bradley_terry([("a", "b", 1.0), ("b", "c", 0.0)], max_iterations=1)
