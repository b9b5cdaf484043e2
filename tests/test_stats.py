"""Tests for bench_pipeline.core.stats."""

from __future__ import annotations

import dataclasses
import itertools
import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.core import stats as stats_module
from bench_pipeline.core.stats import (
    MAX_EXACT_TERMS,
    PairResult,
    RankRange,
    cohen_kappa,
    dominates,
    holm,
    margin95,
    paired_comparisons,
    rank_ranges,
    repeat_spread,
    sign_flip_pvalue,
    significantly_better_pairs,
    weighted_ci90,
)

pytestmark = pytest.mark.unit

# --------------------------------------------------------------------------------------
# sign_flip_pvalue: independent reference implementations
# --------------------------------------------------------------------------------------

REL_TOL = 1e-9  # the documented tie tolerance, relative to sum |x_t|


@cache
def _sign_matrix(n: int) -> np.ndarray:
    """Every sign vector in {-1, +1}^n, one per row, from itertools.product."""
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)), dtype=np.float64)


def brute_force_p(differences: list[float], weights: list[float]) -> float:
    """Enumerate all 2^n sign vectors (zero terms are kept, they must not matter)."""
    x = [w * d for w, d in zip(weights, differences, strict=True)]
    n = len(x)
    if n == 0:
        return 1.0
    observed = abs(math.fsum(x))
    scale = math.fsum(abs(v) for v in x)
    sums = _sign_matrix(n) @ np.array(x, dtype=np.float64)
    extreme = int(np.count_nonzero(np.abs(sums) >= observed - REL_TOL * scale))
    return extreme / 2**n


def _half_distribution(values: list[int]) -> dict[int, int]:
    """Exact count of each signed sum of ``values`` (integer dynamic programming)."""
    counts: dict[int, int] = {0: 1}
    for v in values:
        nxt: dict[int, int] = defaultdict(int)
        for s, c in counts.items():
            nxt[s + v] += c
            nxt[s - v] += c
        counts = nxt
    return counts


def integer_mitm_p(x: list[int]) -> Fraction:
    """Exact p for integer terms: dict distributions of two halves joined with bisect."""
    target = abs(sum(x))
    if target == 0:
        return Fraction(1)
    left = _half_distribution(x[: len(x) // 2])
    right = _half_distribution(x[len(x) // 2 :])
    keys = sorted(right)
    cumulative = [0, *itertools.accumulate(right[k] for k in keys)]
    total_right = cumulative[-1]
    extreme = 0
    for s, c in left.items():
        at_least = total_right - cumulative[bisect_left(keys, target - s)]  # t >= target - s
        at_most = cumulative[bisect_right(keys, -target - s)]  # t <= -target - s
        extreme += c * (at_least + at_most)
    return Fraction(extreme, 2 ** len(x))


real = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_subnormal=False)


def _paired_lists(n: int) -> st.SearchStrategy[tuple[list[float], list[float]]]:
    return st.tuples(st.lists(real, min_size=n, max_size=n), st.lists(real, min_size=n, max_size=n))


# --------------------------------------------------------------------------------------
# sign_flip_pvalue
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 17))
def test_sign_flip_matches_brute_force(n: int) -> None:
    @settings(max_examples=60, deadline=None)
    @given(_paired_lists(n))
    def check(data: tuple[list[float], list[float]]) -> None:
        differences, weights = data
        expected = brute_force_p(differences, weights)
        assert sign_flip_pvalue(differences, weights) == pytest.approx(expected, abs=1e-12)
        unweighted = brute_force_p(differences, [1.0] * n)
        assert sign_flip_pvalue(differences) == pytest.approx(unweighted, abs=1e-12)

    check()


# The low sums are counted per key (few keys) or merged with the keys in one sort: 0 forces
# the first wherever there are keys, 2**62 the second.
COUNTING_PATHS = [0, 2**62]


@pytest.mark.parametrize("few_keys", COUNTING_PATHS)
@pytest.mark.parametrize("n", [3, 7, 12])
def test_sign_flip_both_counting_paths(
    n: int, few_keys: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stats_module, "_FEW_KEYS", few_keys)

    @settings(max_examples=40, deadline=None)
    @given(_paired_lists(n))
    def check(data: tuple[list[float], list[float]]) -> None:
        differences, weights = data
        expected = brute_force_p(differences, weights)
        got = sign_flip_pvalue(differences, weights, method="meet_in_the_middle")
        assert got == pytest.approx(expected, abs=1e-12)

    check()


@settings(max_examples=100, deadline=None)
@given(
    _paired_lists(8),
    st.lists(st.tuples(st.integers(0, 8), real), max_size=6),
    st.lists(st.tuples(st.integers(0, 8), real), max_size=6),
)
def test_sign_flip_zero_terms_are_dropped(
    data: tuple[list[float], list[float]],
    zero_differences: list[tuple[int, float]],
    zero_weights: list[tuple[int, float]],
) -> None:
    differences, weights = data
    base = sign_flip_pvalue(differences, weights)
    d, w = list(differences), list(weights)
    for position, weight in zero_differences:  # d_t == 0 with any weight
        d.insert(position, 0.0)
        w.insert(position, weight)
    for position, difference in zero_weights:  # any d_t with weight 0
        d.insert(position, difference)
        w.insert(position, 0.0)
    assert sign_flip_pvalue(d, w) == base


def test_sign_flip_no_terms_gives_one() -> None:
    assert sign_flip_pvalue([]) == 1.0
    assert sign_flip_pvalue([0.0, 0.0, 0.0]) == 1.0
    assert sign_flip_pvalue([1.0, -2.0], [0.0, 0.0]) == 1.0


def test_sign_flip_hand_checked() -> None:
    # ±1±2±3 takes the values ±6, ±4, ±2, 0, 0: only the observed 6 and its mirror -6.
    assert sign_flip_pvalue([1, 2, 3]) == 0.25
    # Five equal terms: only all-plus and all-minus reach |5|.
    assert sign_flip_pvalue([1, 1, 1, 1, 1]) == 2 / 32
    # x = a*d = [2, -1, 2, 1], D = 4. With F the sum of flipped magnitudes, S = ±(6 - 2F) and
    # |S| >= 4 iff F <= 1 or F >= 5: subsets {}, {1}, {1'}, and their 3 complements -> 6/16.
    assert sign_flip_pvalue([2, -1, 1, 1], [1, 1, 2, 1]) == 6 / 16
    # Exact ties in the null distribution count: x = [1, 1, 2], D = 4 -> 2/8; D = 0 -> 1.
    assert sign_flip_pvalue([1, 1, 1], [1, 1, 2]) == 0.25
    assert sign_flip_pvalue([1, -1]) == 1.0


def test_sign_flip_accepts_numpy_arrays() -> None:
    d = np.array([0.5, 1.5, -0.25, 2.0, 1.0])
    w = np.array([1.0, 2.0, 1.0, 0.5, 3.0])
    assert sign_flip_pvalue(d, w) == sign_flip_pvalue(d.tolist(), w.tolist())
    assert sign_flip_pvalue(np.arange(1, 6)) == sign_flip_pvalue([1, 2, 3, 4, 5])


_int_difference = st.integers(1, 20).flatmap(lambda v: st.sampled_from([v, -v]))


@settings(max_examples=8, deadline=None)
@given(
    st.lists(_int_difference, min_size=40, max_size=40),
    st.lists(st.integers(1, 4), min_size=40, max_size=40),
    st.integers(-3, 3),
)
def test_sign_flip_n40_matches_independent_mitm(
    differences: list[int], weights: list[int], drift: int
) -> None:
    # A drift pushes some examples into the far tail, where p is tiny.
    differences = [d + drift if d + drift != 0 else d for d in differences]
    x = [w * d for w, d in zip(weights, differences, strict=True)]
    expected = integer_mitm_p(x)
    assert sign_flip_pvalue(differences, weights) == pytest.approx(float(expected), abs=1e-12)
    # Real-valued weights: scaling every weight by 0.37 turns the integer ties into
    # rounding-level near-ties, which the documented tolerance must still count.
    real_weights = [0.37 * w for w in weights]
    assert sign_flip_pvalue(differences, real_weights) == pytest.approx(float(expected), abs=1e-12)


@pytest.mark.parametrize("few_keys", [*COUNTING_PATHS, stats_module._FEW_KEYS])
def test_sign_flip_pruned_tail_matches_brute_force(
    few_keys: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A drift moves most examples into the tail, where blocks of sums that can never reach
    # |D| (or always do) are counted without being built, and keys beyond every low sum
    # are never built: the counts must not change.
    monkeypatch.setattr(stats_module, "_FEW_KEYS", few_keys)

    @settings(max_examples=60, deadline=None)
    @given(
        st.integers(4, 16).flatmap(_paired_lists),
        st.floats(min_value=0.5, max_value=6.0),
    )
    def check(data: tuple[list[float], list[float]], drift: float) -> None:
        differences, weights = data
        differences = [d + drift for d in differences]
        weights = [abs(w) + 0.1 for w in weights]
        expected = brute_force_p(differences, weights)
        got = sign_flip_pvalue(differences, weights, method="meet_in_the_middle")
        assert got == pytest.approx(expected, abs=1e-12)

    check()


def _plain_mitm_count(terms: np.ndarray) -> int:
    """An independent meet in the middle: every signed sum of each half, one half sorted,
    two binary searches per sum of the other (no pruning, no folding, no tagging)."""
    scale = math.fsum(np.abs(terms).tolist())
    threshold = abs(math.fsum(terms.tolist())) - REL_TOL * scale
    half = terms.size // 2
    left = _sign_matrix(half) @ terms[:half]
    right = np.sort(_sign_matrix(terms.size - half) @ terms[half:])
    count = right.size * left.size - int(np.searchsorted(right, threshold - left).sum())
    return count + int(np.searchsorted(right, -threshold - left, side="right").sum())


@pytest.mark.parametrize("few_keys", [*COUNTING_PATHS, stats_module._FEW_KEYS])
def test_sign_flip_real_valued_n24_equals_an_independent_mitm(
    few_keys: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real-valued Navigator-like terms (logistic task scores, category weights), from close
    # pairs (p near 1) to far ones (p tiny), so every pruning and both counting paths run.
    monkeypatch.setattr(stats_module, "_FEW_KEYS", few_keys)
    rng = np.random.default_rng(24)
    weights = np.repeat([3.0, 2.0, 3.0, 2.0], 6)
    for shift in (0.0, 0.3, 0.8, 2.0):
        scores = 1 / (1 + np.exp(-rng.normal(0.0, 1.0, size=(2, 24)) - [[shift], [0.0]]))
        differences = scores[0] - scores[1]
        expected = _plain_mitm_count(weights * differences) / 2**24
        assert sign_flip_pvalue(differences, weights) == expected


@pytest.mark.parametrize("few_keys", [2**62, stats_module._FEW_KEYS])  # 0 would search 2**22 keys
@settings(max_examples=4, deadline=None)
@given(
    st.lists(_int_difference, min_size=44, max_size=44),
    st.integers(0, 2),
)
def test_sign_flip_real_valued_near_ties_at_44(
    few_keys: int, differences: list[int], drift: int
) -> None:
    # Integers times sqrt(2) are not on a lattice, and their many equal sums become
    # rounding-level near-ties: the real-valued count must equal the exact integer one.
    stats_module._FEW_KEYS, saved = few_keys, stats_module._FEW_KEYS
    try:
        differences = [d + drift if d + drift != 0 else d for d in differences]
        expected = integer_mitm_p(differences)
        got = sign_flip_pvalue([math.sqrt(2) * d for d in differences])
    finally:
        stats_module._FEW_KEYS = saved
    assert got == float(expected)


def test_sign_flip_pruning_keeps_exact_ties_at_the_threshold() -> None:
    # Sums that reach |D| exactly must survive the pruning.
    # 3, 1, 1, 1 (D = 6): only all-plus and all-minus reach 6 (3 + 1 + 1 - 1 = 4): 2 of 16.
    assert sign_flip_pvalue([3.0, 1.0, 1.0, 1.0]) == 2 / 16
    # 3, 2, 1 (D = 6): 3 + 2 - 1 = 4 falls short: 2 of 8.
    assert sign_flip_pvalue([3.0, 2.0, 1.0]) == 2 / 8
    # 2, 1, -1, 1 (D = 3): with +2, the three ±1 sum to k in {3, 1, 1, 1, -1, ...}; 2 + k
    # reaches 3 for k = 3 (1 way) and k = 1 (3 ways); the mirrors add 4 more: 8 of 16.
    assert sign_flip_pvalue([2.0, 1.0, -1.0, 1.0]) == 8 / 16


def test_sign_flip_n40_extremes() -> None:
    assert sign_flip_pvalue([1.0] * 40) == 2 / 2**40
    assert sign_flip_pvalue([1.0, -1.0] * 20) == 1.0
    # 40 non-zero terms plus zero differences / zero weights: those do not count towards
    # the limit.
    assert sign_flip_pvalue([0.0] * 10 + [1.0] * 40) == 2 / 2**40
    assert sign_flip_pvalue([1.0] * 50, [1.0] * 40 + [0.0] * 10) == 2 / 2**40


def test_sign_flip_beyond_limit_raises() -> None:
    # Real-valued terms (square roots are not on a lattice) beyond the limit; lattice terms
    # of any size are counted instead (tests/test_sign_flip_lattice.py).
    with pytest.raises(ValueError, match=r"real-valued.*at most"):
        sign_flip_pvalue(np.sqrt(np.arange(2, MAX_EXACT_TERMS + 3)))
    with pytest.raises(ValueError, match="at most"):
        sign_flip_pvalue(np.linspace(0.1, 5.0, 200))


def test_sign_flip_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        sign_flip_pvalue([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        sign_flip_pvalue([1.0, float("nan")])
    with pytest.raises(ValueError):
        sign_flip_pvalue([1.0, 2.0], [1.0, float("inf")])


# --------------------------------------------------------------------------------------
# holm
# --------------------------------------------------------------------------------------


def test_holm_hand_worked() -> None:
    # Sorted: 0.005*4 = 0.02 <= .05 reject; 0.01*3 = 0.03 reject; 0.03*2 = 0.06 stop.
    assert holm([0.01, 0.04, 0.03, 0.005], alpha=0.05) == [True, False, False, True]
    # Step-down rejects more than Bonferroni: 0.01*3, 0.02*2, 0.04*1 are all <= 0.05.
    assert holm([0.04, 0.01, 0.02]) == [True, True, True]


def test_holm_nothing_rejected() -> None:
    # All below 0.05 uncorrected, but the smallest needs 0.02*3 = 0.06 <= 0.05: stop at once.
    assert holm([0.02, 0.03, 0.04]) == [False, False, False]
    assert holm([]) == []


def test_holm_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        holm([0.5, 1.5])
    with pytest.raises(ValueError):
        holm([0.5], alpha=0.0)


@given(st.lists(st.floats(0, 1), max_size=20), st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_is_monotone_and_at_least_bonferroni(pvalues: list[float], alpha: float) -> None:
    rejected = holm(pvalues, alpha)
    m = len(pvalues)
    for p, r in zip(pvalues, rejected, strict=True):
        if p <= alpha / m:
            assert r  # Bonferroni rejections are always Holm rejections
        if r:
            assert all(rq for q, rq in zip(pvalues, rejected, strict=True) if q < p)


# --------------------------------------------------------------------------------------
# cohen_kappa
# --------------------------------------------------------------------------------------


def test_cohen_kappa_hand_worked_2x2() -> None:
    # 50 items: both "yes" 20, a yes / b no 5, a no / b yes 10, both "no" 15.
    # p_o = 35/50 = 0.7; P_a(yes) = 25/50, P_b(yes) = 30/50;
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_edge_cases() -> None:
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == 1.0
    assert cohen_kappa([0, 1], [1, 0]) == -1.0  # p_o = 0, p_e = 0.5
    assert cohen_kappa([1, 1, 1, 1], [1, 1, 0, 0]) == 0.0  # p_o = 0.5 = p_e
    assert cohen_kappa(["x", "x"], ["x", "x"]) == 1.0  # p_e = 1 convention
    with pytest.raises(ValueError):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError):
        cohen_kappa([], [])


# --------------------------------------------------------------------------------------
# weighted_ci90, margin95, repeat_spread
# --------------------------------------------------------------------------------------


def test_weighted_ci90_hand_computed() -> None:
    # mu = (60 + 80) / 2 = 70; n_eff = 4/2 = 2; var = (100 + 100)/2 = 100;
    # half = 1.645 * sqrt(100 / 2) = 11.63172...
    mu, low, high = weighted_ci90([60, 80], [1, 1])
    half = 1.645 * math.sqrt(50)
    assert mu == pytest.approx(70)
    assert low == pytest.approx(70 - half)
    assert high == pytest.approx(70 + half)
    # mu = (50 + 3*90)/4 = 80; n_eff = 16/10 = 1.6; var = (900 + 3*100)/4 = 300;
    # half = 1.645 * sqrt(300/1.6) = 22.525...; high 102.5 is clipped to 100.
    mu, low, high = weighted_ci90([50, 90], [1, 3])
    assert mu == pytest.approx(80)
    assert low == pytest.approx(80 - 1.645 * math.sqrt(187.5))
    assert high == 100.0
    # mu = 5, var = 25, n_eff = 2, half = 1.645 * sqrt(12.5) = 5.816 -> low clipped to 0.
    mu, low, high = weighted_ci90([0, 10], [2, 2])
    assert (mu, low) == (pytest.approx(5), 0.0)
    assert high == pytest.approx(5 + 1.645 * math.sqrt(12.5))


def test_weighted_ci90_no_interval_when_n_eff_at_most_one() -> None:
    assert weighted_ci90([42.0], [3.0]) == (42.0, None, None)
    assert weighted_ci90([30.0, 90.0], [1.0, 0.0]) == (30.0, None, None)
    with pytest.raises(ValueError):
        weighted_ci90([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        weighted_ci90([1.0, 2.0], [0.0, 0.0])


def test_margin95() -> None:
    # mean 14, squared deviations 16+4+0+4+16 = 40, s^2 = 40/4 = 10, s/sqrt(5) = sqrt(2);
    # t(0.975, 4) = 2.776445 (scipy).
    assert margin95([10, 12, 14, 16, 18]) == pytest.approx(2.776445 * math.sqrt(2), rel=1e-6)
    assert margin95([10, 12, 14, 16]) is None


def test_repeat_spread() -> None:
    # mean 2.5, squared deviations 2.25+0.25+0.25+2.25 = 5, s = sqrt(5/3).
    assert repeat_spread([1, 2, 3, 4]) == pytest.approx(math.sqrt(5 / 3))
    assert repeat_spread([7.0]) is None
    assert repeat_spread([]) is None


# --------------------------------------------------------------------------------------
# rank_ranges, paired_comparisons, dominates
# --------------------------------------------------------------------------------------

EXPECTED_RANGES = {
    "A": RankRange(rank_best=1, rank_worst=2, tied=True),
    "B": RankRange(rank_best=1, rank_worst=2, tied=True),
    "C": RankRange(rank_best=3, rank_worst=3, tied=False),
    "D": RankRange(rank_best=4, rank_worst=4, tied=False),
}


def test_rank_ranges_with_ties() -> None:
    # A ~ B (no significant difference), both beat C, everyone beats D.
    better = {("A", "C"), ("B", "C"), ("A", "D"), ("B", "D"), ("C", "D")}
    assert rank_ranges(["A", "B", "C", "D"], better) == EXPECTED_RANGES


def test_rank_ranges_rejects_bad_pairs() -> None:
    with pytest.raises(ValueError):
        rank_ranges(["A", "B"], [("A", "B"), ("B", "A")])
    with pytest.raises(ValueError):
        rank_ranges(["A", "B"], [("A", "Z")])
    with pytest.raises(ValueError):
        rank_ranges(["A", "A"], [])


def _four_model_scores() -> dict[str, dict[str, float]]:
    tasks = [f"t{i:02d}" for i in range(1, 13)]
    a = [70, 62, 55, 80, 66, 73, 58, 61, 77, 69, 64, 71]
    # A - B = [2, -1, -2, 1, ...]; with weights [1, 2, 1, 2, ...] the terms are
    # [2, -2, -2, 2, ...] so D = 0 and p = 1.
    b = [s - step for s, step in zip(a, [2, -1, -2, 1] * 3, strict=True)]
    c = [min(x, y) - 5 for x, y in zip(a, b, strict=True)]  # below A and B on all 12
    d = [z - 3 for z in c]  # below everyone; D has no score for t12
    scores = {
        name: dict(zip(tasks, values, strict=True))
        for name, values in (("A", a), ("B", b), ("C", c), ("D", d))
    }
    del scores["D"]["t12"]
    return scores


@pytest.mark.parametrize("reverse", [False, True])
def test_paired_comparisons_end_to_end(reverse: bool) -> None:
    scores = _four_model_scores()
    if reverse:
        scores = dict(reversed(scores.items()))
    weights = {f"t{i:02d}": (1.0 if i % 2 else 2.0) for i in range(1, 13)}
    results = paired_comparisons(scores, weights, alpha=0.05)
    assert len(results) == 6
    by_pair = {frozenset((r.model_a, r.model_b)): r for r in results}

    ab = by_pair[frozenset("AB")]
    assert (ab.n_tasks, ab.statistic, ab.p_value, ab.significant, ab.better) == (
        12,
        0.0,
        1.0,
        False,
        None,
    )
    # 12 same-sign differences: only all-plus / all-minus are as extreme -> 2/2^12.
    for pair, winner in (("AC", "A"), ("BC", "B")):
        result = by_pair[frozenset(pair)]
        assert result.n_tasks == 12
        assert result.p_value == 2 / 2**12
        assert result.significant and result.better == winner
    # Pairs with D share 11 tasks -> p = 2/2^11, still below Holm's smallest cut 0.05/6.
    for pair, winner in (("AD", "A"), ("BD", "B"), ("CD", "C")):
        result = by_pair[frozenset(pair)]
        assert result.n_tasks == 11
        assert result.p_value == 2 / 2**11
        assert result.significant and result.better == winner
    for r in results:  # statistic is oriented as model_a minus model_b
        if r.better is not None:
            assert (r.statistic > 0) == (r.better == r.model_a)

    ranges = rank_ranges(list(scores), significantly_better_pairs(results))
    assert ranges == EXPECTED_RANGES


def test_paired_comparisons_holm_correction_bites() -> None:
    # X > Y > Z on all 6 tasks: raw p = 2/64 = 0.03125 < 0.05 for each pair, but Holm's
    # smallest cut is 0.05/3 = 0.0167, so nothing is significant.
    tasks = [f"t{i}" for i in range(6)]
    scores = {
        "X": {t: 90.0 + i for i, t in enumerate(tasks)},
        "Y": {t: 80.0 + i for i, t in enumerate(tasks)},
        "Z": {t: 70.0 + i for i, t in enumerate(tasks)},
    }
    results = paired_comparisons(scores, dict.fromkeys(tasks, 1.0))
    assert [r.p_value for r in results] == [2 / 64] * 3
    assert not any(r.significant for r in results)
    assert all(r.better is None for r in results)
    assert significantly_better_pairs(results) == set()


def test_paired_comparisons_missing_weight_raises() -> None:
    scores = {"X": {"t1": 1.0, "t2": 2.0}, "Y": {"t1": 0.0, "t2": 1.0}}
    with pytest.raises(ValueError, match="no weight"):
        paired_comparisons(scores, {"t1": 1.0})


def test_results_are_frozen() -> None:
    result = PairResult("A", "B", 3, 1.0, 0.25, False, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.p_value = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        EXPECTED_RANGES["A"].tied = False  # type: ignore[misc]


def test_dominates() -> None:
    assert dominates(True, 1.0, 2.0)
    assert not dominates(True, 2.0, 2.0)  # equal cost is not strictly cheaper
    assert not dominates(True, 3.0, 2.0)
    assert not dominates(False, 1.0, 2.0)
    assert not dominates(True, None, 2.0)
    assert not dominates(True, 1.0, None)


def test_dominates_compares_exact_decimal_costs() -> None:
    # Costs per successful task are exact decimals; these two are equal as floats.
    cheaper, dearer = Decimal("0.10000000000000000001"), Decimal("0.10000000000000000002")
    assert float(cheaper) == float(dearer)
    assert dominates(True, cheaper, dearer)
    assert not dominates(True, dearer, cheaper)
