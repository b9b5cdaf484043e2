"""The browser check's vision step: reading answers, the rule that its model comes from a
company the suite does not benchmark, how answers fill the checks Chromium cannot decide,
and a stuck or failed call ending `inconclusive`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench_pipeline.core import settings
from bench_pipeline.grading.browser import (
    NEEDS_A_PERSON,
    BrowserReport,
    GoalResult,
    PageMeasures,
    decide,
)
from bench_pipeline.grading.vision import (
    SIMULATED_VISION_MODEL,
    SimulatedVisionProvider,
    VisionAnswer,
    VisionConfigError,
    VisionModel,
    VisionStep,
    apply_vision,
    check_vision_model,
    load_vision_model,
    read_answer,
)
from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider, ProviderError
from bench_pipeline.taskbank.models import BrowserCheck
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.unit

CHECKS = (
    BrowserCheck(id="headline", question="Is a headline shown?", selector="h1"),
    BrowserCheck(id="two_emails", question="Are both emails in the list?"),
    BrowserCheck(id="error_shown", question="Is an error shown for a bad address?"),
)
MODEL = VisionModel(api_id="test/vision", company="Vision Co", family="vision", timeout_seconds=0.2)


def loaded_report(tmp_path: Path, *, timed_out: bool = False) -> BrowserReport:
    """What Chromium reports for `CHECKS` on a page that loaded: the selector check decided
    (pass), the other two left to a person; or a page that timed out before its measures."""
    shot = tmp_path / "shot.png"
    shot.write_bytes(b"\x89PNG\r\n\x1a\nnot really an image")
    goals = [GoalResult("headline", "pass", "h1 is visible")]
    goals += [GoalResult(c.id, "inconclusive", NEEDS_A_PERSON) for c in CHECKS[1:]]
    if timed_out:
        return BrowserReport("inconclusive", "timed out after 15s", True, tuple(goals),
                             None, None, (), (), 15.0)  # fmt: skip
    return decide(goals, measures=PageMeasures((), 0, (), (), 0), screenshot_path=shot,
                  blocked_requests=(), page_errors=(), elapsed_seconds=0.1)  # fmt: skip


class Scripted(Provider):
    """Answers each question with the scripted text (or raises, or hangs), counting calls."""

    def __init__(self, answers: dict[str, str | Exception | None]) -> None:
        self.answers, self.calls = answers, 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        parts = request.messages[-1].content
        assert isinstance(parts, list)
        question = parts[0]["text"].removeprefix("Question: ")
        answer = self.answers[question]
        if answer is None:
            await asyncio.sleep(5)  # stuck: longer than the model's timeout
        if isinstance(answer, Exception):
            raise answer
        return ChatResponse(request_hash=request.request_hash(), model=request.model,
                            content=str(answer), finish_reason="stop", usage=None,
                            wall_seconds=0.0, provider="scripted")  # fmt: skip


def test_answers_are_read_and_anything_else_is_inconclusive() -> None:
    assert read_answer('{"answer": "yes", "reason": "both listed"}') == ("pass", "both listed")
    assert read_answer('Sure: {"answer": "No", "reason": "empty"} done')[0] == "fail"
    assert read_answer('{"answer": "unsure", "reason": "needs a click"}')[0] == "inconclusive"
    outcome, reason = read_answer("I think it works")
    assert outcome == "inconclusive" and "could not be read" in reason
    assert read_answer('{"answer": "maybe"}')[0] == "inconclusive"


def test_a_vision_model_from_a_benchmarked_company_is_refused(tmp_path: Path) -> None:
    openai = VisionModel(api_id="openai/gpt-5-nano", company="OpenAI", family="gpt")
    with pytest.raises(VisionConfigError, match="company 'OpenAI' makes a model the suite"):
        check_vision_model(openai, ["Anthropic", "openai"])  # compared without case
    same_family = VisionModel(api_id="x/y", company="Reseller", family="Google")
    with pytest.raises(VisionConfigError, match="family 'Google'"):
        check_vision_model(same_family, ["Google"])
    assert check_vision_model(MODEL, ["OpenAI"]) is MODEL

    path = tmp_path / "vision.toml"
    path.write_text('[vision]\napi_id = "openai/gpt-5-nano"\ncompany = "OpenAI"\nfamily = "gpt"\n')
    with pytest.raises(VisionConfigError, match=rf"{path}: vision model 'openai/gpt-5-nano'"):
        load_vision_model(path, ["OpenAI"])
    path.write_text('[vision]\napi_id = "m"\nfamily = "f"\n')
    with pytest.raises(VisionConfigError, match=r"\[vision\] company: Field required"):
        load_vision_model(path, [])
    with pytest.raises(VisionConfigError, match="cannot read"):
        load_vision_model(tmp_path / "missing.toml", [])


def test_the_repository_vision_model_is_not_from_a_benchmarked_company() -> None:
    companies = sorted({s.model.company for s in load_setups().setups})
    model = load_vision_model(settings.REPO_ROOT / "setups" / "vision.toml", companies)
    assert model.company not in companies


def test_vision_fills_only_the_checks_chromium_cannot_decide(tmp_path: Path) -> None:
    report = loaded_report(tmp_path)
    answers = [
        VisionAnswer("headline", "fail", "no headline seen"),  # Chromium decided: kept
        VisionAnswer("two_emails", "pass", "both listed"),
        VisionAnswer("error_shown", "fail", "no error"),
    ]
    after = apply_vision(report, CHECKS, answers)
    assert [(g.id, g.outcome) for g in after.goals] == [
        ("headline", "pass"), ("two_emails", "pass"), ("error_shown", "fail"),
    ]  # fmt: skip
    assert after.outcome == "partial" and not after.needs_person
    assert after.reason == "2 of 3 decidable goals pass"


def test_a_stuck_failed_or_unreadable_call_is_inconclusive_and_left_to_a_person(
    tmp_path: Path,
) -> None:
    provider = Scripted({
        CHECKS[0].question: '{"answer": "yes"}',
        CHECKS[1].question: None,  # hangs past the 0.2 s timeout
        CHECKS[2].question: ProviderError("HTTP 400: bad image"),
    })  # fmt: skip
    report, answers = asyncio.run(VisionStep(provider, MODEL).look(loaded_report(tmp_path), CHECKS))
    by_id = {a.check_id: a for a in answers}
    assert by_id["two_emails"].outcome == "inconclusive"
    assert "did not answer within 0.2s" in by_id["two_emails"].reason
    assert by_id["error_shown"].outcome == "inconclusive"
    assert "failed: HTTP 400: bad image" in by_id["error_shown"].reason
    assert report.outcome == "pass" and report.needs_person  # only the headline decided
    assert [g.outcome for g in report.goals] == ["pass", "inconclusive", "inconclusive"]


def test_a_stuck_page_is_not_shown_to_the_model(tmp_path: Path) -> None:
    provider = Scripted({})
    stuck = loaded_report(tmp_path, timed_out=True)
    report, answers = asyncio.run(VisionStep(provider, MODEL).look(stuck, CHECKS))
    assert (report, answers, provider.calls) == (stuck, (), 0)


def test_the_simulated_vision_model_is_deterministic_and_labelled(tmp_path: Path) -> None:
    step = VisionStep(SimulatedVisionProvider(), SIMULATED_VISION_MODEL)
    first = asyncio.run(step.look(loaded_report(tmp_path), CHECKS))[1]
    again = asyncio.run(step.look(loaded_report(tmp_path), CHECKS))[1]
    assert first == again and all(a.simulated for a in first)
    assert all(a.reason.startswith("[simulated vision]") for a in first)
    assert {a.outcome for a in first} <= {"pass", "fail"}
