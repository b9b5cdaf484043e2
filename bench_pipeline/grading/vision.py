"""The browser check's vision step (seed 000): a small vision model looks at the prototype.

After Chromium has opened a prototype and saved its screenshot, a vision model from a
company the suite does not benchmark is shown the screenshot with each browser check's
question and answers yes, no or unsure. Every call goes through the provider layer like any
other model call: offline, `SimulatedVisionProvider` answers (labelled simulated); live, any
OpenAI-compatible vision model at OpenRouter or its own `base_url`, sent the screenshot as a
`data:image/png;base64,...` URL in an `image_url` content part.

How its answers count (`apply_vision`):

- A check Chromium decided from the page (it names a selector or text) keeps Chromium's
  answer: a scripted look at the DOM is the stronger evidence. The vision model's answer is
  still recorded beside it.
- A check Chromium could not decide (it names neither) takes the vision model's answer:
  yes is `pass`, no is `fail`.
- `unsure`, an answer that does not parse, a call that fails (`ProviderError`) or does not
  answer within `timeout_seconds` is `inconclusive`, never `fail`, and goes to a person.
- A page that never finished (it failed to load, crashed or timed out; no screenshot) is a
  stuck attempt: the vision model is not asked, and its undecided checks stay
  `inconclusive` for a person.

The vision model is configured in `setups/vision.toml`; `check_vision_model` refuses one
whose company (or family) makes a benchmarked model, as the PM judge's rule does.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import tomllib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench_pipeline.grading.browser import (
    BrowserGoal,
    BrowserReport,
    GoalOutcome,
    GoalResult,
    decide,
)
from bench_pipeline.grading.judges import NonEmpty, company_key
from bench_pipeline.providers.base import (
    ChatRequest,
    ChatResponse,
    EndpointUrl,
    Message,
    Provider,
    ProviderError,
    Usage,
)
from bench_pipeline.providers.keys import KeyVariable, key_variable
from bench_pipeline.providers.simulated import simulated_reply

VISION_FILE = "vision.toml"
SIMULATED_REASON = "[simulated vision]"
DATA_URL_PREFIX = "data:image/png;base64,"
INSTRUCTIONS = (
    "You are shown a screenshot of a web page prototype and one question about it. Answer "
    "only from what the screenshot shows. Reply with JSON only: "
    '{"answer": "yes" | "no" | "unsure", "reason": "<one sentence>"}. '
    "Say unsure when the screenshot cannot show the answer (for example, it needs a click)."
)
_ANSWERS: dict[str, GoalOutcome] = {"yes": "pass", "no": "fail", "unsure": "inconclusive"}
_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


class VisionConfigError(ValueError):
    """The vision model's configuration is unusable (the file and field named)."""


class VisionModel(BaseModel):
    """The vision model and how it is called."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_id: NonEmpty
    """The exact API model id, recorded on every vision grade."""
    company: NonEmpty
    """Who makes it: never a company the suite benchmarks."""
    family: NonEmpty
    base_url: EndpointUrl | None = None
    """Where it is served; None means OpenRouter."""
    local: bool = False
    """Served on our own hardware: never sent the OpenRouter key (needs `base_url`)."""
    api_key_env: KeyVariable | None = None
    """The environment variable holding its endpoint's key; None: `OPENROUTER_API_KEY` at
    OpenRouter, no key anywhere else (`providers.keys`)."""
    timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    """A call not answered by then is a stuck attempt: `inconclusive`."""
    max_tokens: int = Field(default=200, gt=0)

    @model_validator(mode="after")
    def _local_needs_a_server(self) -> VisionModel:
        if self.local and self.base_url is None:
            raise ValueError("a local vision model needs the base URL of its server (base_url)")
        key_variable(self.base_url, self.api_key_env)  # api_key_env: no OpenRouter key elsewhere
        return self


SIMULATED_VISION_MODEL = VisionModel(
    api_id="simulated/vision", company="Simulated vision", family="simulated-vision"
)


def check_vision_model(
    model: VisionModel, benchmarked_companies: Collection[str], source: str = VISION_FILE
) -> VisionModel:
    """`model`, or a `VisionConfigError` when its company or family is a benchmarked one.

    Raises:
        VisionConfigError: Naming the file, the model and the company.
    """
    benchmarked = {company_key(c) for c in benchmarked_companies}
    for field_name in ("company", "family"):
        value = getattr(model, field_name)
        if company_key(value) in benchmarked:
            raise VisionConfigError(
                f"{source}: vision model {model.api_id!r}: {field_name} {value!r} makes a model "
                "the suite benchmarks; the vision step must come from a provider the suite "
                "does not benchmark"
            )
    return model


def load_vision_model(path: Path, benchmarked_companies: Collection[str]) -> VisionModel:
    """The `[vision]` table of `path`, checked against the benchmarked companies.

    Raises:
        VisionConfigError: The file is missing or unreadable, the record is invalid (the
            field named), or its company is benchmarked.
    """
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise VisionConfigError(f"{path}: cannot read the vision model: {error}") from None
    record = document.get("vision")
    if not isinstance(record, dict):
        raise VisionConfigError(f"{path}: no [vision] table")
    try:
        model = VisionModel.model_validate(record)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "vision"
        raise VisionConfigError(f"{path}: [vision] {where}: {first['msg']}") from None
    return check_vision_model(model, benchmarked_companies, str(path))


def vision_request(model: VisionModel, check: BrowserGoal, screenshot_png: bytes) -> ChatRequest:
    """The request asking `model` one browser check about the screenshot."""
    image = DATA_URL_PREFIX + base64.b64encode(screenshot_png).decode("ascii")
    return ChatRequest(
        model=model.api_id,
        temperature=0.0,
        max_tokens=model.max_tokens,
        messages=(
            Message(role="system", content=INSTRUCTIONS),
            Message(
                role="user",
                content=[
                    {"type": "text", "text": f"Question: {check.question}"},
                    {"type": "image_url", "image_url": {"url": image}},
                ],
            ),
        ),
    )


def read_answer(text: str) -> tuple[GoalOutcome, str]:
    """The outcome and reason of a vision answer; anything unreadable is `inconclusive`."""
    match = _JSON_OBJECT.search(text)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        data = None
    answer = data.get("answer") if isinstance(data, dict) else None
    if not isinstance(answer, str) or answer.strip().lower() not in _ANSWERS:
        return "inconclusive", f"the vision model's answer could not be read: {text[:200]!r}"
    assert isinstance(data, dict)
    reason = data.get("reason")
    return _ANSWERS[answer.strip().lower()], str(reason) if reason else answer


@dataclass(frozen=True)
class VisionAnswer:
    """The vision model's answer to one browser check."""

    check_id: str
    outcome: GoalOutcome
    reason: str
    usage: Usage | None = None
    simulated: bool = False


def stuck(report: BrowserReport) -> bool:
    """Whether the attempt never finished: no screenshot or measures, a timeout, or goals
    left untried because the page failed (`assemble_report`'s "not tried: ...")."""
    return (
        report.screenshot_path is None
        or report.measures is None
        or report.reason.startswith("timed out")
        or any(g.reason.startswith("not tried:") for g in report.goals)
    )


@dataclass(frozen=True)
class VisionStep:
    """The vision model and the provider that serves it."""

    provider: Provider
    model: VisionModel

    async def ask(self, check: BrowserGoal, screenshot_png: bytes) -> VisionAnswer:
        """One check's answer; a failed or stuck call is `inconclusive` (never raises)."""
        request = vision_request(self.model, check, screenshot_png)
        timeout = self.model.timeout_seconds
        try:
            response = await asyncio.wait_for(self.provider.complete(request), timeout)
        except TimeoutError:
            return VisionAnswer(
                check.id, "inconclusive", f"the vision model did not answer within {timeout:g}s"
            )
        except ProviderError as error:
            return VisionAnswer(check.id, "inconclusive", f"the vision model failed: {error}")
        outcome, reason = read_answer(response.content)
        return VisionAnswer(check.id, outcome, reason, response.usage, response.simulated)

    async def look(
        self, report: BrowserReport, checks: Sequence[BrowserGoal]
    ) -> tuple[BrowserReport, tuple[VisionAnswer, ...]]:
        """Ask every check about the report's screenshot and apply the answers.

        Returns:
            The report with the answers applied (`apply_vision`), and the answers (none for
            a stuck attempt, which is not shown to the model).
        """
        if stuck(report) or not checks:
            return report, ()
        assert report.screenshot_path is not None
        try:
            png = report.screenshot_path.read_bytes()
        except OSError:
            return report, ()
        answers = await asyncio.gather(*(self.ask(check, png) for check in checks))
        return apply_vision(report, checks, answers), tuple(answers)


def apply_vision(
    report: BrowserReport, checks: Sequence[BrowserGoal], answers: Sequence[VisionAnswer]
) -> BrowserReport:
    """The report with each check Chromium could not decide answered by the vision model
    (module docstring); the outcome is decided again over the goals (`browser.decide`)."""
    by_id = {a.check_id: a for a in answers}
    decidable = {c.id for c in checks if c.decidable}
    goals = []
    for goal in report.goals:
        answer = by_id.get(goal.id)
        if goal.id in decidable or answer is None or goal.outcome != "inconclusive":
            goals.append(goal)
        else:
            goals.append(GoalResult(goal.id, answer.outcome, f"vision: {answer.reason}"))
    decided = decide(
        goals,
        measures=report.measures,
        screenshot_path=report.screenshot_path,
        blocked_requests=report.blocked_requests,
        page_errors=report.page_errors,
        elapsed_seconds=report.elapsed_seconds,
    )
    return replace(decided, grader=report.grader)


class SimulatedVisionProvider(Provider):
    """Answers vision requests offline: yes or no from a hash of the request (so the same
    screenshot and question always get the same answer), every reason marked simulated."""

    name = "simulated-vision"
    simulated = True

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """A deterministic simulated answer to `request`."""
        request_hash = request.request_hash()
        answer = "yes" if int(request_hash[:8], 16) % 3 else "no"
        content = json.dumps({"answer": answer, "reason": f"{SIMULATED_REASON} {answer}"})
        return simulated_reply(request, content, self.name)


def screenshot_digest(path: Path) -> str:
    """SHA-256 of a screenshot (recorded with the vision grades: what the model saw)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


__all__ = [
    "DATA_URL_PREFIX",
    "SIMULATED_VISION_MODEL",
    "VISION_FILE",
    "SimulatedVisionProvider",
    "VisionAnswer",
    "VisionConfigError",
    "VisionModel",
    "VisionStep",
    "apply_vision",
    "check_vision_model",
    "load_vision_model",
    "read_answer",
    "stuck",
    "vision_request",
]
