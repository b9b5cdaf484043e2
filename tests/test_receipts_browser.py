"""A receipt in a real browser: Debian's Chromium (Playwright, never a downloaded browser) over
loopback HTTP, reached the way a reader reaches it: from a board row's receipts link, through
the setup's receipt list, to the run's page, which must show its scores and costs."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright
from receipts_stage import Stage, build_stage

from bench_pipeline.core import settings
from bench_pipeline.grading.browser import QUIET_ARGS

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = settings.REPO_ROOT / "build" / "test-artifacts"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stage, str]]:
    stage = build_stage(tmp_path_factory.mktemp("receipts-browser"))
    handler = functools.partial(_Quiet, directory=str(stage.site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield stage, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium", pytrace=False)
    profile = tmp_path_factory.mktemp("chromium-profile")
    env = {"XDG_CONFIG_HOME": str(profile / "config"), "XDG_CACHE_HOME": str(profile / "cache")}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", *QUIET_ARGS], env=env
        )
        try:
            yield browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        finally:
            browser.close()


def _usd(value: str | None) -> str:
    return "—" if value is None else f"${Decimal(value)}"


def test_a_reader_reaches_a_receipt_from_the_board_and_sees_its_scores_and_costs(
    served: tuple[Stage, str], page: Page
) -> None:
    stage, url = served
    receipts = {
        r["run_id"]: r
        for r in json.loads((stage.release / "data" / "receipts.json").read_text("utf-8"))
    }
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}/pm-suite.html")
    board_row = page.locator("#pm-setups tbody tr").first
    # the cell's first line is the setup's name; a setup on no registry model says so below it
    setup = board_row.locator("td").nth(1).inner_text().splitlines()[0].split(" receipts")[0]
    setup = setup.removesuffix(" (no model page)")
    board_row.locator("a.receipts").click()
    page.wait_for_load_state()
    assert "/receipts/index.html#pm-" in page.url
    section = page.locator(f"h3:text-is('{setup}') + div table")
    runs = section.locator("tbody a")
    assert runs.count() > 0
    # a written task's run: it has the judge's work as well as costs
    written = next(
        i
        for i in range(runs.count())
        if receipts[runs.nth(i).inner_text()]["judge_answer"] is not None
    )
    run_id = runs.nth(written).inner_text()
    runs.nth(written).click()
    page.wait_for_load_state()
    receipt = receipts[run_id]
    assert page.url.endswith(f"/receipts/{run_id}.html")
    assert page.locator("h1").inner_text() == f"Receipt: {receipt['case_title']}"

    scores = page.locator("#scores")
    assert scores.is_visible()
    assert f"{receipt['score']:.1f}" in scores.inner_text()
    for part in ("dm_score", "judge_score", "review_score"):
        assert f"{receipt[part]:.1f}" in scores.inner_text(), part
    criteria = page.locator("#criteria tbody tr")
    graded = [s for s in json.loads((stage.release / "data" / "receipt_scores.json").read_text())
              if s["run_id"] == run_id]  # fmt: skip
    assert criteria.count() == len(graded) >= 8
    costs = page.locator("#costs dd")
    assert [costs.nth(i).inner_text() for i in range(3)] == [
        _usd(receipt["candidate_cost_usd"]),
        _usd(receipt["judge_cost_usd"]),
        _usd(receipt["total_cost_usd"]),
    ]
    assert receipt["total_cost_usd"] is not None  # the stage's judges are priced
    judge = page.locator("#judge-work")
    assert judge.is_visible() and str(receipt["judge_answer"]) in judge.inner_text()
    assert page.locator("#measures").inner_text().startswith("Measures the ")
    assert page.locator("#output").is_visible() and page.locator("#input").is_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "receipt.png"), full_page=True)

    page.locator("footer a", has_text="Disclosures").click()
    page.wait_for_load_state()
    assert page.url.endswith("/disclosures.html")
    headings = page.locator("main h2").all_inner_texts()
    assert headings == ["Funding", "Conflicts of interest", "Who pays for runs",
                        "Sponsorship policy"]  # fmt: skip
    assert errors == []
