"""LLM judges: who may judge whom, the PM and Navigator judge flows, and the offline judge.

Assignment happens here, outside every prompt: `assign_judges` is the only function that
sees the candidate's company, and the flows below receive only the case and the output.

The PM judge asks three kinds of question, each a separate blinded request, in order: the
claims the output makes about the situation that the brief and context do not support; then
each rubric criterion on its own (`decision.py`); then the blind-review question on 1–5.
Keeping them separate means no answer can lean on an earlier one.

Navigator uses two judges from two companies on every criterion of a judge-checked input;
when one says pass and the other fail, the run goes to a person instead of being averaged.

`SimulatedJudgeProvider` is the offline default: a deterministic stand-in whose answers are
valid JSON but come from a crude, documented heuristic, and are labelled simulated.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Sequence
from typing import Annotated, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from bench_pipeline.grading.decision import (
    DEFAULT_ATTEMPTS,
    FORMAT_PREFIX,
    PROMPT_VERSION,
    GradeRecord,
    ask_until_parsed,
    grade_rubric,
    json_object,
    judge_request,
    quoted_output,
)
from bench_pipeline.grading.outcomes import Outcome
from bench_pipeline.providers.base import (
    ChatRequest,
    ChatResponse,
    EndpointUrl,
    Provider,
    Usage,
)
from bench_pipeline.providers.simulated import (
    SIMULATED_MARKER,
    simulated_outcome,
    simulated_quality,
)
from bench_pipeline.taskbank.models import MAIN_INPUT, Case, Suite

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class JudgeModel(BaseModel):
    """A model used as a judge, and the settings it is called with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_id: NonEmpty
    """The exact API model id, recorded on every grade."""
    company: NonEmpty
    """Who makes it: it never judges that company's models."""
    family: NonEmpty
    """The model family (e.g. `llama`), recorded for per-family calibration."""
    temperature: float | None = 0.0
    """0 by default so reruns agree; None for APIs that take no temperature."""
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: str | None = None
    base_url: EndpointUrl | None = None
    """Where it is served; None means OpenRouter."""
    local: bool = False
    """Served on our own hardware: never sent the OpenRouter key (needs `base_url`)."""

    @model_validator(mode="after")
    def _local_needs_a_server(self) -> JudgeModel:
        if self.local and self.base_url is None:
            raise ValueError("a local judge needs the base URL of its server (base_url)")
        return self


SIMULATED_JUDGE_POOL: tuple[JudgeModel, ...] = (
    JudgeModel(api_id="simulated/judge-a", company="Simulated judge A", family="simulated-a"),
    JudgeModel(api_id="simulated/judge-b", company="Simulated judge B", family="simulated-b"),
    JudgeModel(api_id="simulated/judge-c", company="Simulated judge C", family="simulated-c"),
)
"""The offline pool: companies that make no benchmarked model, so every rule can be met.
Served by `SimulatedJudgeProvider`."""


class JudgeAssignmentError(ValueError):
    """No judge in the pool satisfies the assignment rules."""


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def assign_judges(
    suite: Suite,
    candidate_company: str,
    pool: Sequence[JudgeModel],
    benchmarked_companies: Collection[str],
    *,
    benchmarked_families: Collection[str] = (),
) -> list[JudgeModel]:
    """The judges for a candidate of `candidate_company` in `suite`, in pool order (the pool
    is listed by preference).

    - Never a judge of the candidate's own company (names compared case- and
      space-insensitively).
    - PM: one judge whose company makes no model benchmarked in the suite (and whose family,
      if families are given, is not benchmarked either). Excluding the whole company, not
      only the family, is deliberately the stricter reading: family labels are ours, the
      maker is not.
    - Navigator: two judges from two different companies.
    - Use cases: one judge.

    Raises:
        JudgeAssignmentError: The pool has no eligible judge (or, for Navigator, no two from
            different companies).
    """
    own = _norm(candidate_company)
    eligible = [j for j in pool if _norm(j.company) != own]
    if not eligible:
        raise JudgeAssignmentError(
            f"no judge in the pool outside {candidate_company}: a judge never grades a model "
            "of its own company"
        )
    if suite == "pm":
        companies = {_norm(c) for c in benchmarked_companies}
        families = {_norm(f) for f in benchmarked_families}
        outside = [
            j
            for j in eligible
            if _norm(j.company) not in companies and _norm(j.family) not in families
        ]
        if not outside:
            raise JudgeAssignmentError(
                "no judge in the pool comes from outside the PM suite's benchmarked companies "
                f"({', '.join(sorted(benchmarked_companies))})"
            )
        return [outside[0]]
    if suite == "navigator":
        first = eligible[0]
        second = next((j for j in eligible[1:] if _norm(j.company) != _norm(first.company)), None)
        if second is None:
            raise JudgeAssignmentError(
                f"Navigator needs two judges from two companies other than {candidate_company}; "
                f"the pool offers only {first.company}"
            )
        return [first, second]
    return [eligible[0]]


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
    if len(judges) != 2 or _norm(judges[0].company) == _norm(judges[1].company):
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


# --- The offline judge --------------------------------------------------------------------

MIN_WORDS = 12
"""Fewer words than this cannot do any task in the bank."""
STRONG_OVERLAP = 6
ENOUGH_OVERLAP = 3
"""Distinct brief/context word stems an answer must reuse to be taken as on topic."""
REFUSALS = (
    "i can't help",
    "i cannot help",
    "i can't assist",
    "i cannot assist",
    "i'm unable to",
    "i am unable to",
    "i won't be able",
    "as an ai",
)
STEM = 5
_STOP_STEMS = frozenset(
    {"about", "after", "again", "also", "before", "being", "below", "could", "every", "first"}
    | {"other", "should", "their", "there", "these", "those", "under", "which", "while"}
    | {"would", "where", "without", "write", "answer", "reply", "brief", "conte"}
)
_WORD = re.compile(r"[a-z]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SECTION = re.compile(r"^## (Brief|Context|Input)\n(.*?)(?=\n\n## )", re.DOTALL | re.MULTILINE)
SIMULATED_REASON = "[simulated judge]"


def _stems(text: str) -> set[str]:
    """First five letters of every word of five letters or more, common words left out."""
    stems = {w[:STEM] for w in _WORD.findall(text.lower()) if len(w) >= STEM}
    return stems - _STOP_STEMS


class SimulatedVerdict(BaseModel):
    """The offline judge's view of one output."""

    model_config = ConfigDict(frozen=True)

    outcome: Outcome
    confidence: float
    reason: str
    overlap: int


def simulated_verdict(material: str, output: str) -> SimulatedVerdict:
    """The heuristic the offline judge applies to every question, in this order:

    1. empty → fail; 2. starts with `[simulated]`: a simulated answer carrying a latent
       quality is graded by it against the material's difficulty
       (`providers.simulated.simulated_outcome`), any other placeholder → fail;
    3. under `MIN_WORDS` words → fail; 4. a refusal phrase → fail;
    5. reuses no word stem (first five letters of words of five or more letters) of the brief
       and context → fail ("ignores the brief"); fewer than `ENOUGH_OVERLAP` → partial;
       otherwise pass (more confident from `STRONG_OVERLAP` on).

    It does not read the criterion: every criterion of one output gets the same outcome.
    """
    text = output.strip()
    overlap = len(_stems(text) & _stems(material))
    if not text:
        return SimulatedVerdict(outcome="fail", confidence=0.95, reason="empty", overlap=0)
    if text.startswith(SIMULATED_MARKER):
        quality = simulated_quality(text)
        if quality is None:
            why = "a simulated placeholder, not an answer"
            return SimulatedVerdict(outcome="fail", confidence=0.9, reason=why, overlap=overlap)
        outcome = simulated_outcome(quality, material)
        why = f"a simulated answer of latent quality {quality:.3f}: {outcome}"
        return SimulatedVerdict(outcome=outcome, confidence=0.75, reason=why, overlap=overlap)
    if len(text.split()) < MIN_WORDS:
        why = "too short to do the task"
        return SimulatedVerdict(outcome="fail", confidence=0.85, reason=why, overlap=overlap)
    if any(phrase in text.lower().replace("\u2019", "'") for phrase in REFUSALS):
        why = "declines the task"
        return SimulatedVerdict(outcome="fail", confidence=0.9, reason=why, overlap=overlap)
    if overlap == 0:
        why = "ignores the brief and context"
        return SimulatedVerdict(outcome="fail", confidence=0.8, reason=why, overlap=0)
    if overlap < ENOUGH_OVERLAP:
        why = f"touches the brief only lightly ({overlap} shared terms)"
        return SimulatedVerdict(outcome="partial", confidence=0.6, reason=why, overlap=overlap)
    confidence = 0.85 if overlap >= STRONG_OVERLAP else 0.7
    why = f"on topic ({overlap} shared terms)"
    return SimulatedVerdict(outcome="pass", confidence=confidence, reason=why, overlap=overlap)


def _probabilities(outcome: Outcome, confidence: float) -> dict[str, float]:
    rest = round(1 - confidence, 4)
    if outcome == "partial":
        return {"pass": round(rest / 2, 4), "partial": confidence, "fail": round(rest / 2, 4)}
    other = "fail" if outcome == "pass" else "pass"
    near = round(rest * 2 / 3, 4)
    return {outcome: confidence, "partial": near, other: round(rest - near, 4)}


def _simulated_claims(material: str, output: str) -> list[dict[str, object]]:
    """Sentences with a number are claims; found when each of their numbers is in the material."""
    known = set(_NUMBER.findall(material))
    claims = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", output):
        numbers = _NUMBER.findall(sentence)
        if numbers and sentence.strip():
            claims.append({"claim": sentence.strip(), "found": all(n in known for n in numbers)})
    return claims


_REVIEW_SCORES = {"fail": 1, "partial": 3, "pass": 4}


class SimulatedJudgeProvider(Provider):
    """Answers judge requests offline with valid JSON from `simulated_verdict`.

    Deterministic: the answer depends only on the request. Every reason starts with
    `[simulated judge]` and every response is `simulated=True`, so a simulated grade can
    never pass for a real judge's. A request that is not a judge request (no quoted output
    or no known answer format) gets a reply that does not parse, so it ends `ungraded`.
    """

    name = "simulated-judge"
    simulated = True

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """A deterministic simulated judge answer to `request`."""
        system = next((m for m in request.messages if m.role == "system"), None)
        user = next((m for m in reversed(request.messages) if m.role == "user"), None)
        kind = None
        if system is not None and isinstance(system.content, str):
            first = system.content.split("\n", 1)[0]
            kind = first.removeprefix(FORMAT_PREFIX) if first.startswith(FORMAT_PREFIX) else None
        prompt = user.content if user is not None and isinstance(user.content, str) else ""
        output = quoted_output(prompt)
        material = "\n".join(body for _, body in _SECTION.findall(prompt))
        if output is None or kind not in {"decision", "claims", "review"}:
            content = f"{SIMULATED_MARKER} not a judge request"
        else:
            content = json.dumps(self._answer(kind, material, output), ensure_ascii=False)
        return self._response(request, content)

    @staticmethod
    def _answer(kind: str, material: str, output: str) -> dict[str, object]:
        verdict = simulated_verdict(material, output)
        reason = f"{SIMULATED_REASON} {verdict.reason}"
        if kind == "claims":
            return {"claims": _simulated_claims(material, output)}
        if kind == "review":
            score = _REVIEW_SCORES[verdict.outcome]
            if verdict.outcome == "pass" and verdict.overlap >= STRONG_OVERLAP:
                score = 5
            return {"score": score, "reason": reason}
        return {
            "outcome": verdict.outcome,
            "probabilities": _probabilities(verdict.outcome, verdict.confidence),
            "confidence": verdict.confidence,
            "reason": reason,
        }

    def _response(self, request: ChatRequest, content: str) -> ChatResponse:
        request_hash = request.request_hash()
        prompt_chars = sum(
            len(m.content) if isinstance(m.content, str) else len(json.dumps(m.content))
            for m in request.messages
        )
        usage = Usage(
            prompt_tokens=math.ceil(prompt_chars / 4),
            completion_tokens=math.ceil(len(content) / 4),
            per_request=True,
        )
        return ChatResponse(
            request_hash=request_hash,
            model=request.model,
            content=content,
            finish_reason="stop",
            usage=usage,
            wall_seconds=0.0,
            provider=self.name,
            simulated=True,
            raw={"simulated": True, "request_hash": request_hash, "model": request.model},
        )
