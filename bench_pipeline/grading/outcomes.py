"""Small types every grader shares: the three graded outcomes, their score values, and the
result of one check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["pass", "partial", "fail"]
"""A decided grade."""

OUTCOME_VALUE: dict[str, float] = {"pass": 1.0, "partial": 0.5, "fail": 0.0}
"""What each outcome counts for in a score (methodology: pass 1, partial 0.5, fail 0)."""

ResultOutcome = Literal["pass", "partial", "fail", "inconclusive"]
"""A grade, or `inconclusive` when the grader could not decide (a person decides instead)."""


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
