"""Calibration: how often a judge agrees with a person who graded the same answers blind.

Agreement is the share of paired grades that are equal; Cohen's κ discounts the agreement
two graders would reach by chance from how often each uses each outcome (`stats.cohen_kappa`,
over pass/partial/fail). Both are given overall, per judge family and per difficulty tier, so
a family or a tier where the judge drifts is visible even when the total looks fine. A
release needs overall agreement of at least 85%.

Per criterion we also count the two ways a grader goes wrong, since they cost differently:
a false pass (judge pass, person fail) lets a bad answer through; a false failure (judge
fail, person pass) punishes a good one. A partial on either side is a disagreement but
neither of these.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict, Field

from bench_pipeline.core.stats import cohen_kappa
from bench_pipeline.grading.outcomes import Outcome

RELEASE_AGREEMENT = 0.85
GATE_TOLERANCE = 1e-12
"""Float noise allowed at the gate, so a share that is exactly 85% is never refused."""
MIN_CALIBRATION_PAIRS = 10
"""Fewer judge–person pairs than this cannot pass the release gate."""


class PairedGrade(BaseModel):
    """A judge's and a person's grade of the same criterion of the same answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    criterion_id: str
    judge_api_id: str
    judge_family: str
    tier: str
    """The case's difficulty tier (e.g. `1`, `2`)."""
    judge: Outcome
    person: Outcome


class Agreement(BaseModel):
    """Agreement between judge and person on a set of paired grades."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(gt=0)
    agreed: int
    agreement: float
    """agreed / n."""
    kappa: float


def agreement(pairs: Iterable[PairedGrade]) -> Agreement:
    """Agreement and Cohen's κ over `pairs`.

    Raises:
        ValueError: No pairs.
    """
    items = list(pairs)
    if not items:
        raise ValueError("agreement needs at least one paired grade")
    agreed = sum(p.judge == p.person for p in items)
    return Agreement(
        n=len(items),
        agreed=agreed,
        agreement=agreed / len(items),
        kappa=cohen_kappa([p.judge for p in items], [p.person for p in items]),
    )


def _by(
    pairs: list[PairedGrade], key: Callable[[PairedGrade], str]
) -> dict[str, list[PairedGrade]]:
    groups: dict[str, list[PairedGrade]] = defaultdict(list)
    for pair in pairs:
        groups[key(pair)].append(pair)
    return dict(sorted(groups.items()))


def release_gate(agreement: float, threshold: float = RELEASE_AGREEMENT) -> bool:
    """True when `agreement` reaches `threshold` (inclusive: exactly 85% passes)."""
    return agreement >= threshold - GATE_TOLERANCE


def gate_verdict(
    pairs: int,
    agreement: float | None,
    graded_real_runs: int,
    threshold: float = RELEASE_AGREEMENT,
) -> tuple[bool, str]:
    """The release gate and its reason in plain words, from the judge–person pairs on real
    runs (practice on simulated runs never counts) and how many real runs were graded.

    With no real run graded there is nothing to calibrate and the gate passes; otherwise it
    needs `MIN_CALIBRATION_PAIRS` pairs and `threshold` agreement.
    """
    if graded_real_runs == 0 and pairs == 0:
        return True, (
            "every graded run is simulated: nothing to calibrate (reviews of simulated runs "
            "are practice and never count)"
        )
    if pairs < MIN_CALIBRATION_PAIRS:
        return False, (
            f"needs at least {MIN_CALIBRATION_PAIRS} judge–person pairs on real runs; has "
            f"{pairs} ({graded_real_runs} real runs graded; review them with `bench review`)"
        )
    shown = f"judges and people agree on {agreement or 0:.0%} of {pairs} pairs on real runs"
    if not release_gate(agreement or 0.0, threshold):
        return False, f"{shown}; needs at least {threshold:.0%}"
    return True, f"{shown} (at least {threshold:.0%} needed)"


class CalibrationReport(BaseModel):
    """Agreement overall, per judge family and per difficulty tier, and the release gate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    overall: Agreement
    by_family: dict[str, Agreement]
    by_tier: dict[str, Agreement]
    threshold: float
    release_ok: bool


def calibrate(
    pairs: Iterable[PairedGrade], threshold: float = RELEASE_AGREEMENT
) -> CalibrationReport:
    """The calibration report for `pairs` (the gate is on overall agreement).

    Raises:
        ValueError: No pairs.
    """
    items = list(pairs)
    overall = agreement(items)
    return CalibrationReport(
        overall=overall,
        by_family={k: agreement(v) for k, v in _by(items, lambda p: p.judge_family).items()},
        by_tier={k: agreement(v) for k, v in _by(items, lambda p: p.tier).items()},
        threshold=threshold,
        release_ok=release_gate(overall.agreement, threshold),
    )


class CriterionTracking(BaseModel):
    """How one grader does on one criterion against the person."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion_id: str
    n: int
    agreement: float
    false_passes: int
    """Judge pass, person fail."""
    false_failures: int
    """Judge fail, person pass."""


def track_criteria(pairs: Iterable[PairedGrade]) -> dict[str, CriterionTracking]:
    """Per criterion: agreement, false passes and false failures.

    Give it one grader's pairs (filter by `judge_api_id`) to track that grader.
    """
    tracking = {}
    for criterion_id, group in _by(list(pairs), lambda p: p.criterion_id).items():
        tracking[criterion_id] = CriterionTracking(
            criterion_id=criterion_id,
            n=len(group),
            agreement=sum(p.judge == p.person for p in group) / len(group),
            false_passes=sum(p.judge == "pass" and p.person == "fail" for p in group),
            false_failures=sum(p.judge == "fail" and p.person == "pass" for p in group),
        )
    return tracking
