"""Navigator classic v1: what a stored judge score is displayed as, and whether an output
looks complete.

Nothing here rewrites what was stored. The judge's overall (0–5) and its dimension scores stay
as they were; `display_overall` only derives the number a reader is shown, so a stored 5 can
never resurface as a displayed 5 when a dimension or the output itself says otherwise. The
completeness flags are read from the provider's finish reason and the max-token budget, never
from editing or trimming the output text (which these functions do not return).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MIXED_CAP = 4.0
"""The most a row shows when a dimension is weak (or the output incomplete)."""
WEAK_DIMENSION = 3.0
"""A dimension at or below this marks the result as mixed."""

CompletenessConfidence = Literal["high", "medium", "low"]
DisplayLabel = Literal["clean", "mixed", "incomplete"]

FINISHED = frozenset({"stop", "end_turn", "stop_sequence", "eos"})
"""Finish reasons that mean the model ended its answer itself."""
CUT_OFF = frozenset({"length", "max_tokens", "max_output_tokens"})
"""Finish reasons that mean the token budget ended the answer."""
FILTERED = frozenset({"content_filter", "safety", "recitation"})
"""Finish reasons that mean a provider filter ended the answer."""


class Completeness(BaseModel):
    """Whether a stored output reads as a whole answer, and how sure we are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output_incomplete: bool
    completeness_confidence: CompletenessConfidence
    """`high` when the finish reason says so; lower when only the budget or nothing hints."""
    completeness_reason: str


def completeness(
    output: str,
    finish_reason: str | None,
    max_tokens: int | None,
    completion_tokens: int | None,
) -> Completeness:
    """Completeness flags for one stored output.

    The finish reason is the strongest evidence and wins when it was stored. Without one, a
    run that spent its whole `max_tokens` budget is taken as cut off (medium confidence:
    it may have ended exactly at the limit); otherwise it is taken as complete, with low
    confidence because nothing positively says so. An empty output is never complete.

    Args:
        output: The stored output (read only).
        finish_reason: The provider's finish reason, or None when none was stored.
        max_tokens: The completion budget the run was sent with, or None.
        completion_tokens: Completion tokens the run used (reasoning included), or None.
    """
    reason = (finish_reason or "").strip().lower() or None
    spent_budget = (
        max_tokens is not None and completion_tokens is not None and completion_tokens >= max_tokens
    )
    if not output.strip():
        return Completeness(
            output_incomplete=True,
            completeness_confidence="high",
            completeness_reason="the output is empty",
        )
    if reason in CUT_OFF:
        return Completeness(
            output_incomplete=True,
            completeness_confidence="high",
            completeness_reason=f"finish_reason={reason}: the token budget ended the answer",
        )
    if reason in FILTERED:
        return Completeness(
            output_incomplete=True,
            completeness_confidence="high",
            completeness_reason=f"finish_reason={reason}: a provider filter ended the answer",
        )
    if reason in FINISHED:
        return Completeness(
            output_incomplete=False,
            completeness_confidence="high",
            completeness_reason=f"finish_reason={reason}: the model ended the answer itself",
        )
    if reason is not None:
        return Completeness(
            output_incomplete=True,
            completeness_confidence="medium",
            completeness_reason=f"finish_reason={reason}: not a normal end of an answer",
        )
    if spent_budget:
        return Completeness(
            output_incomplete=True,
            completeness_confidence="medium",
            completeness_reason=(
                f"no finish reason stored; {completion_tokens} completion tokens used the "
                f"whole budget of {max_tokens}"
            ),
        )
    if max_tokens is not None and completion_tokens is not None:
        why = f"no finish reason stored; {completion_tokens} of {max_tokens} tokens used"
    else:
        why = "no finish reason or token budget stored"
    return Completeness(
        output_incomplete=False, completeness_confidence="low", completeness_reason=why
    )


class V1Display(BaseModel):
    """The stored v1 judge score and what a reader is shown for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stored_overall: float = Field(ge=0, le=5)
    """The judge's overall, exactly as stored (never rewritten)."""
    displayed_overall: float = Field(ge=0, le=5)
    """What pages and the fit ranking use."""
    label: DisplayLabel
    """`mixed`: a dimension ≤ 3 capped a stored overall above 4; `incomplete`: the output is
    incomplete (needs review, never a clean 5); `clean` otherwise."""
    needs_review: bool
    """True when the output is incomplete."""


def display_overall(
    stored_overall: float,
    dimensions: Mapping[str, float],
    output_incomplete: bool,
) -> V1Display:
    """The v1 display rule for one judged output.

    - any dimension ≤ 3 and stored overall > 4 → shown as 4, labelled `mixed`;
    - else a stored 5 on an incomplete output → shown as 4, labelled `incomplete`, so a
      displayed 5 needs every dimension > 3 and a complete output;
    - otherwise the stored overall is shown as it is (an incomplete output is still
      labelled `incomplete` and marked for review).

    Raises:
        ValueError: A score is outside 0–5, or there are no dimensions (a 5 must be backed
            by every dimension, so a score without any cannot be displayed).
    """
    if not dimensions:
        raise ValueError("a v1 score needs its dimension scores")
    for name, value in {"overall": stored_overall, **dimensions}.items():
        if not 0 <= value <= 5:
            raise ValueError(f"{name} = {value} is outside 0–5")
    weak = any(value <= WEAK_DIMENSION for value in dimensions.values())
    label: DisplayLabel
    if weak and stored_overall > MIXED_CAP:
        shown, label = MIXED_CAP, "mixed"
    elif output_incomplete:
        shown = MIXED_CAP if stored_overall >= 5 else stored_overall
        label = "incomplete"
    else:
        shown, label = stored_overall, "clean"
    return V1Display(
        stored_overall=stored_overall,
        displayed_overall=shown,
        label=label,
        needs_review=output_incomplete,
    )
