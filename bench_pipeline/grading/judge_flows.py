"""The PM and Navigator judge flows: blinded questions to judge models, answers parsed.

The PM judge asks three kinds of question, each a separate blinded request, in order: the
claims the output makes about the situation that the brief and context do not support; then
each rubric criterion on its own (`decision.py`); then the blind-review question on 1–5.
Keeping them separate means no answer can lean on an earlier one.

Navigator uses two judges from two companies on every criterion of a judge-checked input;
when one says pass and the other fail, the run goes to a person instead of being averaged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench_pipeline.grading.decision import (
    DEFAULT_ATTEMPTS,
    PROMPT_VERSION,
    GradeRecord,
    ask_until_parsed,
    grade_rubric,
    json_object,
    judge_request,
)
from bench_pipeline.grading.judges import JudgeModel, company_key
from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider, Usage
from bench_pipeline.taskbank.models import MAIN_INPUT, Case


class CallRecord(BaseModel):
    """What asking one question took: attempts, cache keys, tokens, whether simulated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_api_id: str
    prompt_version: str = PROMPT_VERSION
    attempts: int
    request_hashes: tuple[str, ...]
    usage: tuple[Usage | None, ...]
    simulated: bool

    @classmethod
    def of(
        cls,
        judge: JudgeModel,
        provider: Provider,
        exchanges: list[tuple[ChatRequest, ChatResponse]],
    ) -> CallRecord:
        return cls(
            judge_api_id=judge.api_id,
            attempts=len(exchanges),
            request_hashes=tuple(q.request_hash() for q, _ in exchanges),
            usage=tuple(r.usage for _, r in exchanges),
            simulated=provider.simulated or any(r.simulated for _, r in exchanges),
        )


# --- PM judge ---------------------------------------------------------------------------

BLIND_REVIEW_QUESTION = "Would we use this output to help make or communicate the product decision?"

_CLAIMS_FORMAT = """\
List every claim the quoted answer makes about the current situation: facts, figures,
quotations, what people said or did, what has happened. For each, check whether the brief or
the context states it or directly implies it. Reply with this JSON object:
{"claims": [{"claim": string, "found": true | false}]}
found is false when you could not find support for the claim in the brief or the context.
An answer that makes no such claims gets {"claims": []}."""

_REVIEW_FORMAT = f"""\
Answer the review question for the quoted answer on a scale of 1 to 5:
{BLIND_REVIEW_QUESTION}
1 means not at all, 3 only with substantial rework, 5 yes, as it is. Reply with this JSON
object: {{"score": 1 | 2 | 3 | 4 | 5, "reason": string}}
reason names the decisive reason for the score in one or two sentences."""


class Claim(BaseModel):
    """One claim about the situation, and whether the judge found support for it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    claim: Annotated[str, Field(strict=True, min_length=1)]
    found: Annotated[bool, Field(strict=True)]


class _ClaimsAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    claims: list[Claim]


class _ReviewAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    score: Annotated[int, Field(strict=True, ge=1, le=5)]
    reason: Annotated[str, Field(strict=True)]


M = TypeVar("M", bound=BaseModel)


def _parse_as(model: type[M]) -> Callable[[str], M | None]:
    """A parser for judge replies: the reply's JSON object as `model`, or None."""

    def parse(text: str) -> M | None:
        data = json_object(text)
        if data is None:
            return None
        try:
            return model.model_validate(data)
        except ValidationError:
            return None

    return parse


parse_claims = _parse_as(_ClaimsAnswer)
parse_review = _parse_as(_ReviewAnswer)


class ClaimsCheck(BaseModel):
    """The judge's check of the output's claims against the brief and context."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    graded: bool
    """False when no reply parsed (then `claims` is empty, not "no claims")."""
    claims: tuple[Claim, ...]
    call: CallRecord

    @property
    def not_found(self) -> tuple[str, ...]:
        """Claims the judge could not find in the brief or context (published beside the run)."""
        return tuple(c.claim for c in self.claims if not c.found)


class JudgeReview(BaseModel):
    """The judge's answer to the blind-review question."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: int | None = Field(ge=1, le=5)
    """1–5; None when no reply parsed."""
    reason: str
    call: CallRecord

    @property
    def score_100(self) -> float | None:
        """(score − 1) × 25, the scale it is combined on."""
        return None if self.score is None else (self.score - 1) * 25.0


class PMJudgeResult(BaseModel):
    """Everything one PM judge said about one output."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_key: str
    case_version: str
    judge_api_id: str
    judge_company: str
    judge_family: str
    claims: ClaimsCheck
    criteria: tuple[GradeRecord, ...]
    review: JudgeReview

    @property
    def judge_score(self) -> float | None:
        """The LLM judge score (0–100): the review answer as (x − 1) × 25."""
        return self.review.score_100

    @property
    def simulated(self) -> bool:
        return (
            self.claims.call.simulated
            or self.review.call.simulated
            or any(g.simulated for g in self.criteria)
        )


async def pm_judge(
    provider: Provider,
    judge: JudgeModel,
    case: Case,
    output: str,
    attempts: int = DEFAULT_ATTEMPTS,
) -> PMJudgeResult:
    """The PM judge flow for one written-task output: claims, then criteria, then review.

    Raises:
        ValueError: Not a PM case, or a prototype case (those are checked in a browser).
    """
    if case.suite != "pm":
        raise ValueError(f"{case.key} is not a PM case")
    if case.prototype:
        raise ValueError(f"{case.key} is a prototype task: the LLM judge does not grade it")

    def ask(kind: Literal["claims", "review"], instructions: str) -> Callable[[int], ChatRequest]:
        return lambda attempt: judge_request(
            judge,
            kind=kind,
            instructions=instructions,
            case=case,
            input_id=MAIN_INPUT,
            question_id=kind,
            sections=(),
            output=output,
            attempt=attempt,
        )

    claims, claim_calls = await ask_until_parsed(
        provider, ask("claims", _CLAIMS_FORMAT), parse_claims, attempts
    )
    criteria = await grade_rubric(provider, judge, case, output, attempts)
    review, review_calls = await ask_until_parsed(
        provider, ask("review", _REVIEW_FORMAT), parse_review, attempts
    )
    return PMJudgeResult(
        case_key=case.key,
        case_version=case.version,
        judge_api_id=judge.api_id,
        judge_company=judge.company,
        judge_family=judge.family,
        claims=ClaimsCheck(
            graded=claims is not None,
            claims=tuple(claims.claims) if claims is not None else (),
            call=CallRecord.of(judge, provider, claim_calls),
        ),
        criteria=criteria,
        review=JudgeReview(
            score=review.score if review is not None else None,
            reason=review.reason
            if review is not None
            else f"no readable answer in {len(review_calls)} attempt(s)",
            call=CallRecord.of(judge, provider, review_calls),
        ),
    )


# --- Navigator: two judges ----------------------------------------------------------------


class CriterionPair(BaseModel):
    """Both judges' grades of one criterion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion_id: str
    grades: tuple[GradeRecord, GradeRecord]

    @property
    def disagree(self) -> bool:
        """One judge says pass and the other fail."""
        return {g.outcome for g in self.grades} == {"pass", "fail"}

    @property
    def ungraded(self) -> bool:
        return any(g.outcome == "ungraded" for g in self.grades)


class NavigatorJudgement(BaseModel):
    """Two judges on one judge-checked Navigator input."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_key: str
    case_version: str
    input_id: str
    criteria: tuple[CriterionPair, ...]

    @property
    def needs_person(self) -> bool:
        """True when a person must decide: a pass/fail disagreement or an ungraded answer."""
        return bool(self.person_reasons)

    @property
    def person_reasons(self) -> tuple[str, ...]:
        reasons = []
        for pair in self.criteria:
            first, second = pair.grades
            if pair.disagree:
                reasons.append(
                    f"{pair.criterion_id}: {first.judge_api_id} says {first.outcome}, "
                    f"{second.judge_api_id} says {second.outcome}"
                )
            elif pair.ungraded:
                reasons.append(f"{pair.criterion_id}: a judge gave no readable answer")
        return tuple(reasons)

    @property
    def score(self) -> float | None:
        """0–1: the mean over criteria of the two judges' mean value (pass 1, partial 0.5,
        fail 0); None while a person must decide."""
        if self.needs_person or not self.criteria:
            return None
        values = [sum(g.value or 0.0 for g in pair.grades) / 2 for pair in self.criteria]
        return sum(values) / len(values)


async def navigator_judge(
    provider: Provider,
    judges: Sequence[JudgeModel],
    case: Case,
    input_id: str,
    output: str,
    attempts: int = DEFAULT_ATTEMPTS,
) -> NavigatorJudgement:
    """Both judges grade every criterion of the input's judge rubric.

    The judges are asked one after the other (each judge's criteria concurrently), so each
    judge's calls stay together for rate limits and logs. Choosing judges outside the
    candidate's company is `assign_judges`' job: this function is never told the candidate.

    Raises:
        ValueError: Not two judges from two companies, or the input has no judge check.
    """
    if len(judges) != 2 or company_key(judges[0].company) == company_key(judges[1].company):
        raise ValueError("Navigator needs exactly two judges from two different companies")
    first = await grade_rubric(provider, judges[0], case, output, attempts, input_id=input_id)
    second = await grade_rubric(provider, judges[1], case, output, attempts, input_id=input_id)
    return NavigatorJudgement(
        case_key=case.key,
        case_version=case.version,
        input_id=input_id,
        criteria=tuple(
            CriterionPair(criterion_id=a.criterion_id, grades=(a, b))
            for a, b in zip(first, second, strict=True)
        ),
    )
