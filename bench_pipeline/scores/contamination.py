"""The contamination check the private validation set exists for (seed 000).

A setup that saw the public cases in training does better on them than on held-out cases of
the same kind. The check compares, per setup, each private case with the public cases most
like it, and tests whether the public side is better more often than chance allows:

1. A case's score is the mean of the setup's published runs on it (repeats weigh once).
2. Each private case is paired with the public cases of its own task when the setup has a
   published run on any; otherwise with the public cases of its category; otherwise it is
   `unmatched` and counts only as a number.
3. Its gap is the mean public case score minus its own score; the setup's `gap` is the mean
   gap over its matched private cases (positive: better on public cases).
4. The p-value is the exact two-sided sign-flip test over those gaps
   (`stats.sign_flip_pvalue`; scores are read as exact rationals, so ties are exact). With
   n matched cases it can be no smaller than 2 / 2^n: `min_p_value` says so, and fewer than
   six matched cases can never reach 5%.
5. Holm over every setup tested in the suite at 5%: a setup is `flagged` when its test is
   rejected and its gap is positive. A significant negative gap (better on private cases)
   is reported but is not contamination.

Only counts, gaps and p-values leave this module: never a private case's id, text or score.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import polars as pl

from bench_pipeline.core.stats import as_rational, holm, sign_flip_pvalue

ALPHA = 0.05
"""Family-wise level of the flag (Holm over the setups of a suite)."""


@dataclass(frozen=True)
class CaseScore:
    """One published run's score with what the check needs to know about its case.

    Attributes:
        setup_id: The setup that made the run.
        case_id: The task bank case.
        task: The case's task.
        category: The task's category.
        private: The case is held out (never published).
        score: The run's published score (any scale; the same for every run of a suite).
    """

    setup_id: str
    case_id: str
    task: str
    category: str
    private: bool
    score: float | Fraction


@dataclass(frozen=True)
class ContaminationRow:
    """One setup's check: counts, the paired gap and its exact test (no private detail)."""

    setup_id: str
    private_cases: int
    """Private cases the setup has a published run on."""
    matched_by_task: int
    matched_by_category: int
    unmatched: int
    gap: float | None
    """Mean over matched private cases of (public score − private score); None if none."""
    p_value: float | None
    min_p_value: float | None
    """The smallest p-value the test could give with this many matched cases."""
    significant: bool
    """Rejected by Holm over every setup tested in the suite at `ALPHA`."""
    flagged: bool
    """Significant with a positive gap: far better on public cases than on private ones."""

    @property
    def matched(self) -> int:
        """Private cases with public cases to compare with."""
        return self.matched_by_task + self.matched_by_category


def _exact(value: float | Fraction) -> Fraction:
    """A score as the fraction it is made of (`as_rational`), else the float's exact value."""
    rational = as_rational(value)
    return Fraction(value) if rational is None else rational


def _mean(values: Sequence[Fraction]) -> Fraction:
    total: Fraction = sum(values, Fraction(0))
    return total / len(values)


def _case_means(scores: Iterable[CaseScore]) -> dict[str, dict[str, Fraction]]:
    """Per setup: each case's mean score."""
    runs: dict[tuple[str, str], list[Fraction]] = defaultdict(list)
    for row in scores:
        runs[(row.setup_id, row.case_id)].append(_exact(row.score))
    out: dict[str, dict[str, Fraction]] = defaultdict(dict)
    for (setup_id, case_id), values in runs.items():
        out[setup_id][case_id] = _mean(values)
    return out


def _setup_row(
    setup_id: str, means: dict[str, Fraction], cases: dict[str, CaseScore]
) -> ContaminationRow:
    public = [c for c in means if not cases[c].private]
    counts = [0, 0, 0]  # matched by task, by category, unmatched
    gaps: list[Fraction] = []
    for case_id in sorted(c for c in means if cases[c].private):
        case = cases[case_id]
        peers = [p for p in public if cases[p].task == case.task]
        kind = 0
        if not peers:
            peers = [p for p in public if cases[p].category == case.category]
            kind = 1
        if not peers:
            counts[2] += 1
            continue
        counts[kind] += 1
        gaps.append(_mean([means[p] for p in peers]) - means[case_id])
    n = len(gaps)
    return ContaminationRow(
        setup_id=setup_id,
        private_cases=sum(counts),
        matched_by_task=counts[0],
        matched_by_category=counts[1],
        unmatched=counts[2],
        gap=float(_mean(gaps)) if gaps else None,
        p_value=sign_flip_pvalue(gaps) if gaps else None,
        min_p_value=min(1.0, 2.0 / 2**n) if n else None,
        significant=False,
        flagged=False,
    )


def contamination_rows(scores: Iterable[CaseScore]) -> list[ContaminationRow]:
    """The check for every setup with a published run on a private case (module docstring).

    Args:
        scores: Every published run of one suite, public and private cases alike.

    Returns:
        One row per setup with a private case, sorted by setup id.

    Raises:
        ValueError: If one case is given two tasks, categories or privacy flags.
    """
    rows = list(scores)
    cases: dict[str, CaseScore] = {}
    for row in rows:
        known = cases.setdefault(row.case_id, row)
        if (known.task, known.category, known.private) != (row.task, row.category, row.private):
            raise ValueError(
                f"case {row.case_id}: runs disagree on its task, category or privacy "
                f"({known.task}/{known.category}/{known.private} vs "
                f"{row.task}/{row.category}/{row.private})"
            )
    means = _case_means(rows)
    out = [
        _setup_row(setup_id, means[setup_id], cases)
        for setup_id in sorted(means)
        if any(cases[c].private for c in means[setup_id])
    ]
    tested = [i for i, r in enumerate(out) if r.p_value is not None]
    rejected = holm([out[i].p_value or 1.0 for i in tested], ALPHA)
    for i, significant in zip(tested, rejected, strict=True):
        gap = out[i].gap or 0.0
        out[i] = replace(out[i], significant=significant, flagged=significant and gap > 0)
    return out


CONTAMINATION_SCHEMA = {
    "setup_id": pl.String,
    "private_cases": pl.Int64,
    "matched_by_task": pl.Int64,
    "matched_by_category": pl.Int64,
    "unmatched": pl.Int64,
    "gap": pl.Float64,
    "p_value": pl.Float64,
    "min_p_value": pl.Float64,
    "significant": pl.Boolean,
    "flagged": pl.Boolean,
}


def contamination_frame(rows: Iterable[ContaminationRow]) -> pl.DataFrame:
    """The rows as the published `pm_contamination` table's frame."""
    return pl.DataFrame([r.__dict__ for r in rows], schema=CONTAMINATION_SCHEMA, orient="row")


__all__ = [
    "ALPHA",
    "CONTAMINATION_SCHEMA",
    "CaseScore",
    "ContaminationRow",
    "contamination_frame",
    "contamination_rows",
]
