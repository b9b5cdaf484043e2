"""Simulated answers to prototype tasks are real pages, opened in Chromium like any answer."""

from __future__ import annotations

import asyncio

import pytest

from bench_pipeline.grading.browser_parent import inspect_prototype
from bench_pipeline.grading.simulated import is_simulated
from bench_pipeline.grading.vision import (
    SIMULATED_VISION_MODEL,
    SimulatedVisionProvider,
    VisionStep,
)
from bench_pipeline.providers.base import ChatRequest, Message
from bench_pipeline.providers.simulated import SimulatedProvider, simulated_quality
from bench_pipeline.providers.simulated_pages import PAGE_FLOOR, TASTE_FLOOR, wants_prototype
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.integration


def _answers(prompt: str, count: int = 80) -> list[str]:
    async def ask(k: int) -> str:
        request = ChatRequest(model=f"vendor/m{k}", messages=[Message(role="user", content=prompt)])
        return (await SimulatedProvider().complete(request)).content

    async def every() -> list[str]:
        return list(await asyncio.gather(*(ask(k) for k in range(count))))

    return asyncio.run(every())


@pytest.fixture(scope="module")
def dashboard():
    return load_bank().get("pm", "pm-proto-usage-dashboard")


def test_only_prototype_prompts_get_pages() -> None:
    bank = load_bank()
    for case in bank.suite("pm"):
        assert wants_prototype(case.prompts()[0].text) == case.prototype, case.id
    assert not any(wants_prototype(p.text) for c in bank.suite("navigator") for p in c.prompts())


def test_page_quality_follows_the_answers_latent_quality(dashboard) -> None:
    answers = _answers(dashboard.prompts()[0].text)
    assert answers == _answers(dashboard.prompts()[0].text)  # deterministic
    assert all(is_simulated(a) for a in answers)  # still labelled, still graded by quality
    by_quality = sorted((simulated_quality(a), a) for a in answers)
    weak = [a for q, a in by_quality if q < PAGE_FLOOR]
    plain = [a for q, a in by_quality if q >= TASTE_FLOOR]
    generic = [a for q, a in by_quality if PAGE_FLOOR <= q < TASTE_FLOOR]
    assert weak and plain and generic
    assert not any("<html" in a.lower() for a in weak)
    assert all("<!doctype html>" in a and "gradient(" not in a for a in plain)
    assert all("gradient(" in a and "\u2014" in a for a in generic)
    assert not any("http" in a.split("\n", 1)[1] for a in answers)  # nothing from the network


def test_chromium_and_the_vision_step_grade_simulated_pages(dashboard, tmp_path) -> None:
    answers = sorted((simulated_quality(a), a) for a in _answers(dashboard.prompts()[0].text))
    generic = next(a for q, a in answers if PAGE_FLOOR <= q < TASTE_FLOOR)
    plain = next(a for q, a in reversed(answers))
    vision = VisionStep(SimulatedVisionProvider(), SIMULATED_VISION_MODEL)
    reports = {}
    for name, page in (("generic", generic), ("plain", plain)):
        report = inspect_prototype(page, dashboard.browser_checks, tmp_path / f"{name}.png")
        assert report.measures is not None and report.screenshot_path.exists()
        judged, answers_ = asyncio.run(vision.look(report, dashboard.browser_checks))
        assert len(answers_) == len(dashboard.browser_checks)
        assert all(a.outcome in {"pass", "fail"} for a in answers_)
        reports[name] = judged
    assert reports["generic"].measures.gradients > 0 and reports["generic"].measures.em_dashes
    assert reports["plain"].measures.gradients == 0 and not reports["plain"].measures.em_dashes
    assert all(r.outcome in {"pass", "partial", "fail"} for r in reports.values())
