"""The exact sign-flip test on lattice data: any size, exact ties, no tolerance."""

from __future__ import annotations

import itertools
import math
import random
from decimal import Decimal
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.core.stats import (
    extreme_count,
    lattice_terms,
    paired_comparisons,
    sign_flip_pvalue,
)


@cache
def _signs(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1, -1), repeat=n)), dtype=np.int64)


def brute_force(terms: list[Fraction]) -> Fraction:
    """Every one of the 2^n sign vectors: a ±1 matrix times the terms, in exact integers
    (each term times the common denominator; int64 holds these sums exactly)."""
    n = len(terms)
    if n == 0:
        return Fraction(1)
    scale = math.lcm(*(t.denominator for t in terms))
    integers = np.array([int(t * scale) for t in terms], dtype=np.int64)
    signs = _signs(n)
    extreme = int(np.count_nonzero(np.abs(signs @ integers) >= abs(int(integers.sum()))))
    return Fraction(extreme, 2**n)


def plain_count(terms: list[int]) -> Fraction:
    """An independent exact count: a dict of signed sums, one term at a time."""
    counts = {0: 1}
    for term in terms:
        following: dict[int, int] = {}
        for total, ways in counts.items():
            for signed in (total + term, total - term):
                following[signed] = following.get(signed, 0) + ways
        counts = following
    observed = abs(sum(terms))
    extreme = sum(ways for total, ways in counts.items() if abs(total) >= observed)
    return Fraction(extreme, 2 ** len(terms))


_fraction = st.fractions(min_value=-3, max_value=3, max_denominator=12)


@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, 16).flatmap(
        lambda n: st.tuples(
            st.lists(_fraction, min_size=n, max_size=n), st.lists(_fraction, min_size=n, max_size=n)
        )
    )
)
def test_lattice_equals_brute_force_up_to_16(data: tuple[list[Fraction], list[Fraction]]) -> None:
    differences, weights = data
    terms = [w * d for w, d in zip(weights, differences, strict=True)]
    expected = float(brute_force([t for t in terms if t]))
    assert sign_flip_pvalue(differences, weights) == expected
    # The same values as floats are detected as the same lattice.
    as_float = sign_flip_pvalue([float(d) for d in differences], [float(w) for w in weights])
    assert as_float == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([-1, 0, 1]), min_size=1, max_size=16))
def test_zero_one_outcomes_equal_brute_force(differences: list[int]) -> None:
    expected = float(brute_force([Fraction(d) for d in differences if d]))
    assert sign_flip_pvalue(differences) == expected
    assert sign_flip_pvalue(np.array(differences, dtype=np.float64)) == expected


@pytest.mark.parametrize("n", [60, 200, 500])
def test_large_lattice_equals_an_independent_count(n: int) -> None:
    rng = random.Random(n)
    # 0/1 outcomes with a drift (discordant items favour one side) ...
    outcomes = [rng.choice([1, 1, 1, -1, 0]) for _ in range(n)]
    assert sign_flip_pvalue(outcomes) == float(plain_count([d for d in outcomes if d]))
    # ... and weighted lattice terms: category weights over task counts, scores in sixths.
    differences = [Fraction(rng.randint(-6, 6), 6) for _ in range(n)]
    weights = [Fraction(rng.choice([15, 10]), rng.choice([3, 5])) for _ in range(n)]
    magnitudes, statistic = lattice_terms(differences, weights)
    scale = 6 * 15  # the common denominator: 6 × lcm(3, 5)
    integers = [int(w * d * scale) for w, d in zip(weights, differences, strict=True) if w * d]
    assert sign_flip_pvalue(differences, weights) == float(plain_count(integers))
    assert extreme_count(magnitudes, statistic) == plain_count(integers) * 2 ** len(integers)


def test_large_lattice_in_the_far_tail_and_at_the_centre() -> None:
    assert sign_flip_pvalue([1] * 500) == 2 / 2**500
    assert sign_flip_pvalue([1, -1] * 250) == 1.0
    # 260 of 500 discordant items favour A: p = 2 × P(Binomial(500, 1/2) <= 240).
    tail = sum(Fraction(math.comb(500, j), 2**500) for j in range(241))
    assert sign_flip_pvalue([1] * 260 + [-1] * 240) == float(2 * tail)


@settings(max_examples=6, deadline=None)
@given(
    st.lists(st.integers(-6, 6), min_size=40, max_size=40),
    st.lists(st.sampled_from([3, 2]), min_size=40, max_size=40),
    st.integers(0, 3),
)
def test_lattice_equals_meet_in_the_middle_at_40_exactly(
    numerators: list[int], weights: list[int], drift: int
) -> None:
    differences = [Fraction(k + drift, 6) for k in numerators]
    floats = [float(d) for d in differences]
    counted = sign_flip_pvalue(differences, weights, method="count")
    mitm = sign_flip_pvalue(floats, [float(w) for w in weights], method="meet_in_the_middle")
    assert counted == mitm


def test_decimal_and_fraction_inputs_are_exact() -> None:
    # 0.1 + 0.2 - 0.3 is not 0 in floats; in Decimal it is, so the three terms tie exactly.
    decimals = [Decimal("0.1"), Decimal("0.2"), Decimal("-0.3")]
    assert sign_flip_pvalue(decimals) == 1.0
    assert sign_flip_pvalue([Fraction(1, 3)] * 3) == 2 / 8


def test_real_values_keep_meet_in_the_middle_and_fine_lattices_say_why() -> None:
    real = np.sqrt(np.arange(2, 12))
    assert sign_flip_pvalue(real) == sign_flip_pvalue(real, method="meet_in_the_middle")
    with pytest.raises(ValueError, match="not on a lattice"):
        sign_flip_pvalue(real, method="count")
    # 60 exact terms whose common denominator makes the integer sums astronomically wide.
    primes = [p for p in range(2, 400) if all(p % q for q in range(2, p))][:60]
    with pytest.raises(ValueError, match="too fine to count"):
        sign_flip_pvalue([Fraction(1, p) for p in primes])


def test_paired_comparisons_keep_exact_scores() -> None:
    # A beats B on 30 of 40 tasks by 1/3 and loses 10 by 1/3: exact binomial, via Fractions.
    tasks = [f"t{i}" for i in range(40)]
    a = {t: Fraction(2, 3) if i < 30 else Fraction(1, 3) for i, t in enumerate(tasks)}
    b = {t: Fraction(1, 3) if i < 30 else Fraction(2, 3) for i, t in enumerate(tasks)}
    weights = {t: Fraction(15, 7) for t in tasks}
    (result,) = paired_comparisons({"A": a, "B": b}, weights)
    expected = 2 * sum(Fraction(math.comb(40, j), 2**40) for j in range(11))
    assert result.p_value == float(expected)
    assert result.better == "A"
    assert result.statistic == pytest.approx(float(Fraction(15, 7) * 20 / 3))
