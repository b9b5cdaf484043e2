"""The graded outcomes every stage shares, what they count for, and the result of one check.

Two vocabularies, on purpose: a *criterion* (or check) is graded `Outcome` pass / partial /
fail, while a whole *run* of a use case ends `RunOutcome` success / partial / fail (success
only when every criterion passed). They share credits but not words, so one can never be
passed where the other is meant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["pass", "partial", "fail"]
"""A decided grade of one criterion or check."""

OUTCOME_CREDIT: Mapping[str, float] = {"pass": 1.0, "partial": 0.5, "fail": 0.0}
"""What each outcome counts for in a score (methodology: pass 1, partial 0.5, fail 0)."""

RunOutcome = Literal["success", "partial", "fail"]
"""How a whole use-case run ended: every criterion passed, some work done, or nothing."""

RUN_OUTCOME_CREDIT: Mapping[str, float] = {"success": 1.0, "partial": 0.5, "fail": 0.0}
"""What a run's outcome counts for (success 1, partial 0.5, fail 0)."""

ResultOutcome = Literal["pass", "partial", "fail", "inconclusive"]
"""A grade, or `inconclusive` when the grader could not decide (a person decides instead)."""


def dm_score(criteria: Mapping[str, Outcome]) -> float:
    """Decision-model score: 100 × mean credit (pass 1, partial 0.5, fail 0).

    Raises:
        ValueError: There is no criterion.
    """
    if not criteria:
        raise ValueError("a decision-model score needs at least one criterion")
    return 100.0 * math.fsum(OUTCOME_CREDIT[o] for o in criteria.values()) / len(criteria)


def check_grade(name: str, value: int | None) -> None:
    """Refuse a 1–5 judge or review answer that is not an integer from 1 to 5 (None passes).

    Raises:
        ValueError: Naming `name` and the value.
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ValueError(f"{name} must be an integer from 1 to 5, got {value!r}")


def grade_to_100(grade: int) -> float:
    """A 1–5 judge or review answer on the 0–100 scale: (x − 1) × 25."""
    check_grade("grade", grade)
    return (grade - 1) * 25.0


@dataclass(frozen=True)
class CheckResult:
    """The result of one check of one output."""

    outcome: ResultOutcome
    reason: str
    """Why, in words a reviewer can act on (e.g. "field 'total': expected 42, got 41")."""
    grader: str
    """What graded it, with a version: `script:unit_tests@1`, `browser:chromium@1`."""
    details: dict[str, Any] = field(default_factory=dict)
    """JSON-ready specifics (per-field or per-test results, what was extracted)."""
