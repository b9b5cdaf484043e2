"""Second look: which runs a person must read again, and why.

Neither grader is ground truth, so a run is queued when a grader is unsure or the graders
disagree:

- a decision under 65% confidence (exactly 65% is not queued), and any criterion the judge
  left `ungraded`;
- a decision-model score and PM review more than 30 points apart on 0–100 (exactly 30 is
  not queued);
- two Navigator judges disagreeing, pass against fail;
- a browser check that ended `inconclusive` (a stuck attempt is never a fail);
- a scripted check that ended `inconclusive` (e.g. the unit-test jail could not start).

Scores come from `bench_pipeline.scores.pm` so the queue and the published numbers use one
formula. Float noise is absorbed at the 30-point boundary (`GAP_TOLERANCE`), so a gap that is
30 in exact arithmetic is never queued because of a rounding error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bench_pipeline.grading.decision import GradeRecord
from bench_pipeline.grading.judge_flows import NavigatorJudgement
from bench_pipeline.grading.outcomes import CheckResult, dm_score, grade_to_100

SECOND_LOOK_CONFIDENCE = 0.65
SCORE_GAP = 30.0
GAP_TOLERANCE = 1e-9

QueueReason = Literal[
    "low_confidence",
    "ungraded",
    "score_gap",
    "judge_disagreement",
    "inconclusive_browser_check",
    "inconclusive_check",
]


class QueueItem(BaseModel):
    """One reason a run needs a person's second look."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    reason: QueueReason
    detail: str
    """What triggered it, in words a reviewer can act on."""
    criterion_id: str | None = None
    """The criterion or browser check concerned, when there is one."""
    judge_api_id: str | None = None


def low_confidence(run_id: str, grades: Iterable[GradeRecord]) -> list[QueueItem]:
    """Decisions under `SECOND_LOOK_CONFIDENCE`, and criteria left ungraded."""
    items = []
    for grade in grades:
        if grade.outcome == "ungraded" or grade.confidence is None:
            items.append(
                QueueItem(
                    run_id=run_id,
                    reason="ungraded",
                    detail=f"no readable judge answer ({grade.reason})",
                    criterion_id=grade.criterion_id,
                    judge_api_id=grade.judge_api_id,
                )
            )
        elif grade.confidence < SECOND_LOOK_CONFIDENCE:
            items.append(
                QueueItem(
                    run_id=run_id,
                    reason="low_confidence",
                    detail=f"{grade.outcome} at {grade.confidence:.0%} confidence",
                    criterion_id=grade.criterion_id,
                    judge_api_id=grade.judge_api_id,
                )
            )
    return items


def score_gap(run_id: str, decision_model: float | None, review: int | None) -> QueueItem | None:
    """A queue item when the decision-model score (0–100) and the PM review (1–5, mapped to
    (x − 1) × 25) differ by more than `SCORE_GAP` points; None when either is missing."""
    if decision_model is None or review is None:
        return None
    reviewed = grade_to_100(review)
    gap = abs(decision_model - reviewed)
    if gap <= SCORE_GAP + GAP_TOLERANCE:
        return None
    return QueueItem(
        run_id=run_id,
        reason="score_gap",
        detail=(
            f"decision model {decision_model:.1f} vs PM review {review}/5 ({reviewed:.0f}): "
            f"{gap:.1f} points apart"
        ),
    )


def judge_disagreements(run_id: str, judgement: NavigatorJudgement) -> list[QueueItem]:
    """One item per criterion the two Navigator judges split on, pass against fail."""
    items = []
    for pair in judgement.criteria:
        if pair.disagree:
            first, second = pair.grades
            items.append(
                QueueItem(
                    run_id=run_id,
                    reason="judge_disagreement",
                    detail=(
                        f"{first.judge_api_id} says {first.outcome}, "
                        f"{second.judge_api_id} says {second.outcome}"
                    ),
                    criterion_id=pair.criterion_id,
                )
            )
    return items


def inconclusive_browser_checks(run_id: str, results: Mapping[str, CheckResult]) -> list[QueueItem]:
    """One item per browser check (by id) that ended `inconclusive`."""
    return [
        QueueItem(
            run_id=run_id,
            reason="inconclusive_browser_check",
            detail=result.reason,
            criterion_id=check_id,
        )
        for check_id, result in results.items()
        if result.outcome == "inconclusive"
    ]


def decision_model_score(grades: Iterable[GradeRecord]) -> float | None:
    """The decision-model score of a run's grades; None while any criterion is ungraded."""
    outcomes = {}
    for grade in grades:
        if grade.outcome == "ungraded":
            return None
        outcomes[grade.criterion_id] = grade.outcome
    return dm_score(outcomes) if outcomes else None


def second_look(
    run_id: str,
    *,
    grades: Iterable[GradeRecord] = (),
    review: int | None = None,
    navigator: NavigatorJudgement | None = None,
    browser: Mapping[str, CheckResult] | None = None,
) -> tuple[QueueItem, ...]:
    """Every reason `run_id` needs a second look (empty when none).

    Args:
        run_id: The run the reasons are about.
        grades: The decision model's grades of the run (one per criterion).
        review: The PM reviewer's 1–5 score, once submitted.
        navigator: The two-judge result of a Navigator input.
        browser: Browser check results by check id (prototype tasks).
    """
    grades = tuple(grades)
    items = low_confidence(run_id, grades)
    gap = score_gap(run_id, decision_model_score(grades), review)
    if gap is not None:
        items.append(gap)
    if navigator is not None:
        items += judge_disagreements(run_id, navigator)
        items += low_confidence(run_id, (g for pair in navigator.criteria for g in pair.grades))
    if browser:
        items += inconclusive_browser_checks(run_id, browser)
    return tuple(items)
