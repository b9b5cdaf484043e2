"""The PM suite's checks: contamination (public vs private cases) and task admission.

Expectations are worked out by hand in the comments."""

from __future__ import annotations

import math

import pytest
from scipy.stats import kendalltau

from bench_pipeline.scores.admission import (
    TaskScore,
    admission_rows,
    concordance_pvalue,
    inversion_counts,
)
from bench_pipeline.scores.contamination import CaseScore, contamination_rows

pytestmark = pytest.mark.unit


def case(setup: str, case_id: str, score: float, *, private: bool = False, task: str = "",
         category: str = "c") -> CaseScore:  # fmt: skip
    return CaseScore(setup, case_id, task or case_id.split("/")[0], category, private, score)


def leaky_and_honest(cases: int = 8) -> list[CaseScore]:
    """Tasks t0..t{n-1}, each with one public and one private case. `leaky` scores 90 on
    every public case and 50 on every private one; `honest` is 10 points better on the
    private case of even tasks and 10 worse on odd ones."""
    rows = []
    for i in range(cases):
        rows += [case("leaky", f"t{i}/pub", 90), case("leaky", f"t{i}/prv", 50, private=True)]
        private = 70 if i % 2 == 0 else 50
        rows += [case("honest", f"t{i}/pub", 60), case("honest", f"t{i}/prv", private,
                                                       private=True)]  # fmt: skip
    return rows


def test_a_setup_far_better_on_public_cases_is_flagged_and_an_honest_one_is_not() -> None:
    by_setup = {r.setup_id: r for r in contamination_rows(leaky_and_honest())}
    leaky, honest = by_setup["leaky"], by_setup["honest"]
    # leaky: eight gaps of +40; only the observed signs and their mirror reach |D| = 320:
    # p = 2 / 2^8 = 0.0078125. Holm over two setups: 0.0078 ≤ 0.05 / 2, rejected.
    assert (leaky.matched_by_task, leaky.gap, leaky.p_value) == (8, 40.0, 2 / 256)
    assert leaky.significant and leaky.flagged
    # honest: gaps −10, +10, −10, ... sum to 0, so p = 1; gap 0.
    assert (honest.gap, honest.p_value) == (0.0, 1.0)
    assert not honest.significant and not honest.flagged
    assert leaky.min_p_value == honest.min_p_value == 2 / 256


def test_too_few_private_cases_can_never_flag_however_large_the_gap() -> None:
    (row,) = [r for r in contamination_rows(leaky_and_honest(3)) if r.setup_id == "leaky"]
    # three gaps of +40: p = 2 / 2^3 = 0.25, which is also the smallest p three cases allow
    assert (row.gap, row.p_value, row.min_p_value) == (40.0, 0.25, 0.25)
    assert not row.flagged


def test_better_on_private_cases_is_significant_but_not_contamination() -> None:
    rows = [r for r in leaky_and_honest() if r.setup_id == "leaky"]
    swapped = [case(r.setup_id, r.case_id, 140 - r.score, private=r.private) for r in rows]
    (row,) = contamination_rows(swapped)
    assert row.gap == -40.0 and row.significant and not row.flagged


def test_pairing_by_task_then_category_and_unmatched_cases_counted() -> None:
    rows = [
        # private p1 shares task "a" with public a1 (two repeats: mean 70) -> gap 70 - 40 = 30
        case("s", "a1", 60, task="a"), case("s", "a1", 80, task="a"),
        case("s", "p1", 40, private=True, task="a"),
        # private p2 (task "b", no public case of task b) -> category "c": public cases a1
        # (mean 70) and c1 (50), mean 60 -> gap 60 - 45 = 15
        case("s", "c1", 50, task="c1"),
        case("s", "p2", 45, private=True, task="b"),
        # private p3 in a category no public case has -> unmatched
        case("s", "p3", 10, private=True, task="z", category="elsewhere"),
    ]  # fmt: skip
    (row,) = contamination_rows(rows)
    assert (row.private_cases, row.matched_by_task, row.matched_by_category, row.unmatched) == (
        3, 1, 1, 1,
    )  # fmt: skip
    assert row.gap == pytest.approx((30 + 15) / 2)
    # two gaps 30 and 15 on the lattice: |±30 ± 15| >= 45 only for (+,+) and (−,−): p = 2/4
    assert row.p_value == 0.5


def test_a_setup_without_private_runs_gets_no_row_and_contradictions_are_refused() -> None:
    assert contamination_rows([case("s", "a", 50)]) == []
    with pytest.raises(ValueError, match="case a: runs disagree"):
        contamination_rows([case("s", "a", 50), case("t", "a", 50, private=True)])


# --- admission --------------------------------------------------------------------------------


def test_inversion_counts_are_the_mahonian_numbers() -> None:
    assert inversion_counts(3) == [1, 2, 2, 1]
    assert inversion_counts(4) == [1, 3, 5, 6, 5, 3, 1]
    assert sum(inversion_counts(6)) == math.factorial(6)


def test_concordance_pvalue_by_hand() -> None:
    assert concordance_pvalue(4, 6) == 1 / 24  # only the one perfect order
    assert concordance_pvalue(4, 5) == 4 / 24  # 0 or 1 inversion: 1 + 3 orders
    assert concordance_pvalue(3, 3) == 1 / 6
    assert concordance_pvalue(4, 0) == 1.0


BOARD = {
    # rest order on every task below is A > B > C > D
    "A": {"t1": 90, "t2": 80, "t3": 70, "flat": 50, "reversed": 10, "one_swap": 60},
    "B": {"t1": 70, "t2": 60, "t3": 60, "flat": 50, "reversed": 20, "one_swap": 70},
    "C": {"t1": 50, "t2": 40, "t3": 50, "flat": 50, "reversed": 30, "one_swap": 30},
    "D": {"t1": 30, "t2": 20, "t3": 40, "flat": 50, "reversed": 40, "one_swap": 20},
}


def board(setups: dict[str, dict[str, float]]) -> list[TaskScore]:
    return [TaskScore(s, t, v) for s, tasks in setups.items() for t, v in tasks.items()]


def test_admission_by_hand() -> None:
    rows = {r.task: r for r in admission_rows(board(BOARD))}
    # t1: rest of A = (80+70+50+10+60)/5 = 54, B = 52, C = 40, D = 34: A > B > C > D, and
    # t1 orders all six pairs that way: p = 1/24 ≈ 0.042 ≤ 0.05.
    t1 = rows["t1"]
    assert (t1.setups, t1.pairs, t1.consistent_pairs, t1.tied_pairs) == (4, 6, 6, 0)
    assert t1.p_value == 1 / 24 and t1.separates and t1.share_consistent == 1.0
    # one_swap: rest A = (90+80+70+50+10)/5 = 60, B = 52, C = 44, D = 36; the task puts B
    # above A: 5 of 6 consistent, p = 4/24.
    assert (rows["one_swap"].consistent_pairs, rows["one_swap"].p_value) == (5, 4 / 24)
    assert not rows["one_swap"].separates
    # flat: every pair tied, none consistent; reversed: every pair the wrong way.
    assert (rows["flat"].tied_pairs, rows["flat"].consistent_pairs) == (6, 0)
    assert not rows["flat"].separates and rows["flat"].p_value == 1.0
    assert rows["reversed"].consistent_pairs == 0 and not rows["reversed"].separates


def test_three_setups_are_too_few_to_admit_and_a_lone_setup_is_not_judged() -> None:
    three = {k: v for k, v in BOARD.items() if k != "D"}
    t1 = {r.task: r for r in admission_rows(board(three))}["t1"]
    assert (t1.consistent_pairs, t1.p_value) == (3, 1 / 6)
    assert not t1.separates and "too few setups" in t1.reason
    solo = admission_rows([TaskScore("A", "t1", 10), TaskScore("A", "t2", 20),
                           TaskScore("B", "t1", 30)])  # fmt: skip
    # t1: only A has another task; t2: only A has it
    assert [(r.task, r.setups, r.p_value) for r in solo] == [("t1", 1, None), ("t2", 1, None)]
    with pytest.raises(ValueError, match="two scores on task t1"):
        admission_rows([TaskScore("A", "t1", 1), TaskScore("A", "t1", 2)])


def with_inversions(n: int, inversions: int) -> list[int]:
    """An order of range(n) with exactly that many inversions (built from its Lehmer code)."""
    left, order, items = inversions, [], list(range(n))
    for position in range(n):
        take = min(left, n - 1 - position)
        order.append(items.pop(take))
        left -= take
    return order


@pytest.mark.parametrize("n", [4, 7, 9])
def test_concordance_pvalue_is_kendalls_exact_test(n: int) -> None:
    pairs = n * (n - 1) // 2
    for inversions in range(pairs + 1):
        order = with_inversions(n, inversions)
        exact = kendalltau(range(n), order, method="exact", alternative="greater").pvalue
        assert concordance_pvalue(n, pairs - inversions) == pytest.approx(exact, rel=1e-12)
