"""Task admission (seed 000): does a task's rubric separate one setup from another?

A task earns its place when the order it puts setups in is the order the rest of the suite
finds too, more often than chance. Per task:

1. The setups taking part are those with a score on the task and on at least one other task.
   A setup's `rest` score is the mean of its other task scores (the leave-one-out overall).
2. For each pair of them, the task orders the pair `consistently` when it puts them apart
   (different task scores) in the same order as their rest scores. A pair the task ties, or
   whose rest scores tie, is not consistent: a task that gives everyone the same score
   separates no one. `share_consistent` = consistent pairs / pairs.
3. The p-value is exact: the chance that a random assignment of the task's scores to the
   setups orders at least as many pairs consistently. With k setups and no ties, the number
   of consistent pairs of a random order is C(k, 2) minus its inversions, whose distribution
   is counted exactly (Mahonian numbers); ties only lower the observed count, so with ties
   the p-value errs on the side of keeping a task out.
4. A task `separates` setups when p ≤ `ALPHA`. Fewer than `MIN_SETUPS` setups can never get
   there (with 3, even a perfect order happens by chance 1 time in 6), so such a task says
   "too few setups" rather than "does not separate".
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

import polars as pl

ALPHA = 0.05
MIN_SETUPS = 4
"""The fewest setups for which a perfect order is rare enough: 1 / 4! ≈ 0.042 ≤ `ALPHA`."""


@dataclass(frozen=True)
class TaskScore:
    """A setup's score on one task (a row of the board's task table)."""

    setup_id: str
    task: str
    score: float


@dataclass(frozen=True)
class AdmissionRow:
    """One task's admission figures."""

    task: str
    setups: int
    pairs: int
    consistent_pairs: int
    tied_pairs: int
    """Pairs the task gives the same score (they count as not consistent)."""
    share_consistent: float | None
    p_value: float | None
    separates: bool
    reason: str


def inversion_counts(n: int) -> list[int]:
    """How many of the n! orders of n items have 0, 1, 2, ... inversions (Mahonian numbers).

    Built one item at a time: placing the m-th item adds 0 to m − 1 inversions.
    """
    counts = [1]
    for m in range(2, n + 1):
        grown = [0] * (len(counts) + m - 1)
        for inversions, ways in enumerate(counts):
            for added in range(m):
                grown[inversions + added] += ways
        counts = grown
    return counts


def concordance_pvalue(setups: int, consistent: int) -> float:
    """P(a random order of `setups` items has at least `consistent` concordant pairs)."""
    counts = inversion_counts(setups)
    pairs = setups * (setups - 1) // 2
    # concordant = pairs − inversions ≥ consistent  ⇔  inversions ≤ pairs − consistent
    tail = sum(counts[: pairs - consistent + 1])
    return tail / math.factorial(setups)


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def admission_rows(scores: Iterable[TaskScore]) -> list[AdmissionRow]:
    """Admission figures for every task (module docstring), sorted by task.

    Raises:
        ValueError: If a setup has two scores on one task.
    """
    by_setup: dict[str, dict[str, float]] = defaultdict(dict)
    for row in scores:
        if row.task in by_setup[row.setup_id]:
            raise ValueError(f"setup {row.setup_id} has two scores on task {row.task}")
        by_setup[row.setup_id][row.task] = float(row.score)
    tasks = sorted({t for own in by_setup.values() for t in own})
    out = []
    for task in tasks:
        taking_part = {
            s: (own[task], math.fsum(v for t, v in own.items() if t != task) / (len(own) - 1))
            for s, own in sorted(by_setup.items())
            if task in own and len(own) > 1
        }
        k = len(taking_part)
        pairs = consistent = tied = 0
        for (here_a, rest_a), (here_b, rest_b) in combinations(taking_part.values(), 2):
            pairs += 1
            tied += here_a == here_b
            consistent += _sign(here_a - here_b) * _sign(rest_a - rest_b) == 1
        if k < 2:
            out.append(AdmissionRow(task, k, 0, 0, 0, None, None, False,
                                    "fewer than two setups with other tasks"))  # fmt: skip
            continue
        p = concordance_pvalue(k, consistent)
        separates = p <= ALPHA
        if separates:
            reason = f"orders {consistent} of {pairs} pairs as the rest of the suite does"
        elif k < MIN_SETUPS:
            reason = f"too few setups ({k}; {MIN_SETUPS} needed to reach {ALPHA:.0%})"
        else:
            reason = f"orders only {consistent} of {pairs} pairs as the rest of the suite does"
        out.append(
            AdmissionRow(task, k, pairs, consistent, tied, consistent / pairs, p, separates,
                         reason)
        )  # fmt: skip
    return out


ADMISSION_SCHEMA = {
    "task": pl.String,
    "setups": pl.Int64,
    "pairs": pl.Int64,
    "consistent_pairs": pl.Int64,
    "tied_pairs": pl.Int64,
    "share_consistent": pl.Float64,
    "p_value": pl.Float64,
    "separates": pl.Boolean,
    "reason": pl.String,
}


def admission_frame(rows: Iterable[AdmissionRow]) -> pl.DataFrame:
    """The rows as the published `pm_task_admission` table's frame."""
    return pl.DataFrame([r.__dict__ for r in rows], schema=ADMISSION_SCHEMA, orient="row")


__all__ = [
    "ADMISSION_SCHEMA",
    "ALPHA",
    "MIN_SETUPS",
    "AdmissionRow",
    "TaskScore",
    "admission_frame",
    "admission_rows",
    "concordance_pvalue",
    "inversion_counts",
]
