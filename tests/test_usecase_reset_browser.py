"""The UseCaseRank page in Chromium: "Published weights" (Reset) shows exactly the published
group scores and ranks, the Bradley–Terry blend included, on a board made by the real chain
(UseCaseRank board → score tables → release → site) where one group is in 22 rerun pairs.

Chromium must be at /usr/bin/chromium (Debian's; Playwright never downloads a browser here).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright
from synthetic import BOARD_DAY, blended_usecase_runs

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.grading.browser import QUIET_ARGS
from bench_pipeline.release.build import build_release
from bench_pipeline.release.published import METHODOLOGY_VERSIONS
from bench_pipeline.scores.load import store_frames
from bench_pipeline.scores.usecase import MIN_PAIRS_FOR_BLEND, usecase_board
from bench_pipeline.site import build_site
from bench_pipeline.site.markup import number

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, dict]]]:
    root = tmp_path_factory.mktemp("usecase")
    board = usecase_board(blended_usecase_runs(), as_of=BOARD_DAY)
    with connect(root / "warehouse" / "bench.duckdb") as conn:
        migrate(conn, settings.migrations_dir())
        store_frames(conn, {"usecase_runs": board.usecase_runs,
                            "usecase_groups": board.usecase_groups})  # fmt: skip
        outcome = build_release(conn, root / "releases", METHODOLOGY_VERSIONS)
    groups = json.loads((outcome.path / "data" / "usecase_groups.json").read_text("utf-8"))
    build_site(outcome.path, root / "site", root / "releases")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root / "site"))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/usecase-rank.html"
        yield url, {g["group"]: g for g in groups}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium", pytrace=False)
    profile = tmp_path_factory.mktemp("chromium-profile")
    env = {"XDG_CONFIG_HOME": str(profile / "config"), "XDG_CACHE_HOME": str(profile / "cache")}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", *QUIET_ARGS], env=env,
            headless=True,
        )  # fmt: skip
        try:
            yield browser.new_page()
        finally:
            browser.close()


def shown(page: Page) -> dict[str, tuple[str, str]]:
    """Each group's (rank, score) text as the board shows it now."""
    rows = page.eval_on_selector_all(
        "table.usecase-board tbody tr",
        "rows => rows.map(r => [r.dataset.group, r.querySelector('.rank').textContent,"
        " r.querySelector('.score').textContent])",
    )
    return {group: (rank, score) for group, rank, score in rows}


def as_published(page: Page) -> dict[str, tuple[str, str]]:
    """Each group's published rank (the rank cell's `data-rank`) and shown score."""
    rows = page.eval_on_selector_all(
        "table.usecase-board tbody tr",
        "rows => rows.map(r => [r.dataset.group, r.querySelector('.rank').dataset.rank,"
        " r.querySelector('.score').textContent])",
    )
    return {group: (rank, score) for group, rank, score in rows}


def published(groups: dict[str, dict]) -> dict[str, tuple[str, str]]:
    return {g: (number(r["rank"], 0), number(r["score"], 1)) for g, r in groups.items()}


def test_reset_shows_the_published_blended_score(site, page: Page) -> None:
    url, groups = site
    alpha = groups["alpha"]
    assert alpha["bt_pairs"] >= MIN_PAIRS_FOR_BLEND and alpha["blended"] is True
    assert groups["gamma"]["blended"] is False
    # the blend moves the score: a recomputation without it would show another number
    assert number(alpha["score"], 1) != number(alpha["weighted_score"], 1)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    # as published: each cell's published rank (its text may show the range the 90%
    # intervals allow, "2–3 overlapping") and score
    assert as_published(page) == published(groups)
    initial = shown(page)

    page.fill("input[name=speed]", "1")  # a reader's own weights
    page.fill("input[name=outcome]", "0")
    changed = shown(page)
    assert changed["alpha"][1] != published(groups)["alpha"][1]

    page.click("#reset-weights")
    assert shown(page) == initial  # the published display, overlap ranges included
    assert as_published(page) == published(groups)
    assert page.input_value("input[name=outcome]") == "0.4"
    assert errors == []


def test_recomputing_at_the_published_weights_gives_the_published_board(site, page) -> None:
    """The script's own recomputation (blend included) agrees with the release at the
    published weights, to the shown precision."""
    url, groups = site
    page.goto(url)
    page.fill("input[name=speed]", "0.15")  # the published value: fires a recomputation
    page.dispatch_event("input[name=speed]", "input")
    assert shown(page) == published(groups)
