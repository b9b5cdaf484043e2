"""The vision step live: a grading cycle opens a prototype in Debian's Chromium, and an
OpenAI-compatible vision model on a loopback server (configured in `vision.toml`, reached
through the provider layer like any model) receives the screenshot as a data URL and
answers each browser check; a stuck answer ends `inconclusive` in a person's queue.

Without Chromium these tests fail, they do not skip."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from loopback import LoopbackServer, Reply

from bench_pipeline.grading.browser_parent import ChromiumInspector
from bench_pipeline.grading.cycle import RunToGrade, grade_runs
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.vision import DATA_URL_PREFIX, VisionConfigError
from bench_pipeline.providers import ResponseCache
from bench_pipeline.resources.models import ProviderChooser
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.integration

PATH = "/v1/chat/completions"
MODEL = "test/vision-small"
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
PAGE = """<!doctype html><html><body><h1>Invite teammates</h1>
<ul id="list"><li>ana@example.com</li><li>bo@example.com</li></ul>
<p class="error">not-an-email is not a valid address</p></body></html>"""


def answer(sent: bytes) -> Reply:
    """The vision model: yes to the two-emails check, no to the invalid-address one, and no
    answer in time to the confirmation one."""
    question = json.loads(sent)["messages"][1]["content"][0]["text"]
    if "confirmation" in question:
        return Reply(200, body="{}", delay=20)  # stuck: well past the 2 s timeout
    text = (
        '{"answer": "yes", "reason": "both addresses are listed"}' if "two valid" in question
        else '{"answer": "no", "reason": "the address was added"}'
    )  # fmt: skip
    body = {"id": "v1", "model": MODEL, "usage": {"prompt_tokens": 900, "completion_tokens": 20},
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}]}  # fmt: skip
    return Reply(200, body=json.dumps(body))


def vision_setups(folder: Path, base_url: str, company: str = "Vision Lab") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vision.toml").write_text(
        f'[vision]\napi_id = "{MODEL}"\ncompany = "{company}"\nfamily = "tiny-vision"\n'
        f'base_url = "{base_url}"\nlocal = true\ntimeout_seconds = 2\n',
        encoding="utf-8",
    )
    return folder


def test_the_vision_model_sees_the_screenshot_and_a_stuck_answer_goes_to_a_person(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = next(c for c in load_bank().suite("pm") if c.id == "pm-proto-invite-flow")
    companies = sorted({s.model.company for s in load_setups().setups})
    with LoopbackServer({PATH: answer}) as server:
        monkeypatch.setenv(
            "BENCH_SETUPS", str(vision_setups(tmp_path / "setups", server.url + "/v1"))
        )
        monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-never-sent-to-a-local-model")
        chooser = ProviderChooser("live", ResponseCache(tmp_path / "cache"))
        vision = chooser.vision(companies)
        assert vision is not None and vision.model.api_id == MODEL

        async def cycle():
            try:
                return await grade_runs(
                    [RunToGrade("run-1", case, "main", PAGE, "Some Lab")], SimulatedJudgeProvider(),
                    SIMULATED_JUDGE_POOL, companies, "c-vision", rates={}, now=NOW,
                    screenshots=tmp_path / "shots", inspector=ChromiumInspector(), vision=vision,
                )  # fmt: skip
            finally:
                await chooser.aclose()

        result = asyncio.run(cycle())
        sent = server.requests(PATH)

    # One request per browser check, each carrying the very screenshot Chromium saved.
    shot = (tmp_path / "shots" / "run-1.png").read_bytes()
    assert len(sent) == len(case.browser_checks) == 3
    for request in sent:
        body = json.loads(request.body)
        assert body["model"] == MODEL and body["temperature"] == 0.0
        url = body["messages"][1]["content"][1]["image_url"]["url"]
        assert url.startswith(DATA_URL_PREFIX)
        assert base64.b64decode(url.removeprefix(DATA_URL_PREFIX)) == shot
        assert "authorization" not in {k.lower() for k in request.headers}  # a local model

    vision_grades = {g["question"]: g for g in result.grades if g["grader_kind"] == "vision"}
    assert {q: g["outcome"] for q, g in vision_grades.items()} == {
        "vision:adds_two_emails": "pass",
        "vision:rejects_invalid": "fail",
        "vision:confirmation_count": "inconclusive",  # stuck
    }
    assert all(g["grader"] == MODEL and g["grader_company"] == "Vision Lab" and g["tier"] == 2
               for g in vision_grades.values())  # fmt: skip
    assert "did not answer within 2s" in vision_grades["vision:confirmation_count"]["reason"]
    (page,) = [g for g in result.grades if g["grader_kind"] == "browser"]
    # the two answered checks decide the page: 1 of 2 pass, the stuck one left to a person
    assert page["outcome"] == "partial"
    assert page["reason"] == "1 of 2 decidable goals pass; 1 left to a person"
    queued = {(q.reason, q.criterion_id) for q in result.second_look}
    assert ("inconclusive_browser_check", "confirmation_count") in queued
    assert ("inconclusive_browser_check", "adds_two_emails") not in queued


def test_a_vision_model_of_a_benchmarked_company_is_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LoopbackServer({PATH: answer}) as server:
        folder = vision_setups(tmp_path / "setups", server.url + "/v1", company="OpenAI")
        monkeypatch.setenv("BENCH_SETUPS", str(folder))
        chooser = ProviderChooser("live", ResponseCache(tmp_path / "cache"))
        with pytest.raises(VisionConfigError, match="company 'OpenAI' makes a model the suite"):
            chooser.vision(["Anthropic", "OpenAI"])
        assert server.requests(PATH) == []
