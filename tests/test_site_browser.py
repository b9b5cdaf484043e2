"""The built site in a real browser: Debian's Chromium driven by Playwright, over loopback HTTP.

Chromium must be at /usr/bin/chromium (CI installs it: `apt-get install chromium`); without it
these tests fail, they do not skip. Playwright never downloads a browser here.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from synthetic import HOSTILE_NAME, copy_downloads, write_synthetic_release

from bench_pipeline.core import settings
from bench_pipeline.grading.browser import QUIET_ARGS
from bench_pipeline.site import SiteResult, build_site

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", *QUIET_ARGS]  # no dead proxy: the site is served on loopback
ARTIFACTS = settings.REPO_ROOT / "build" / "test-artifacts"


@dataclass
class Served:
    site: Path
    release: Path
    result: SiteResult
    url: str

    def href(self, page: Path) -> str:
        return f"{self.url}/{page.relative_to(self.site).as_posix()}"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("site")
    release = write_synthetic_release(root / "releases", models=12)
    copy_downloads(release, root / "site")
    result = build_site(release, root / "site", root / "releases")
    handler = functools.partial(_QuietHandler, directory=str(root / "site"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield Served(root / "site", release, result, f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's Chromium with "
            "`apt-get update && apt-get install -y --no-install-recommends chromium` "
            "(.ci/run does this); the site's browser tests cannot run without it",
            pytrace=False,
        )
    profile = tmp_path_factory.mktemp("chromium-profile")
    env = {"XDG_CONFIG_HOME": str(profile / "config"), "XDG_CACHE_HOME": str(profile / "cache")}
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=ARGS, env=env, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Watched:
    page: Page
    errors: list[str]
    dialogs: list[str]


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    """A fresh page recording console errors, uncaught errors and dialogs."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def on_dialog(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield Watched(page, errors, dialogs)
    context.close()


def links_on(page: Page) -> list[str]:
    return page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")


def test_every_page_opens_without_console_errors(served: Served, watched: Watched) -> None:
    for page in served.result.pages:
        response = watched.page.goto(served.href(page))
        assert response is not None and response.status == 200, page
        assert watched.page.title(), page
    assert watched.errors == []
    assert watched.dialogs == []


def test_crawling_from_home_reaches_every_page_and_no_link_is_broken(
    served: Served, watched: Watched
) -> None:
    start = f"{served.url}/index.html"
    queue, seen, statuses = [start], {start}, {}
    while queue:
        url = queue.pop()
        if url.endswith(".html"):
            response = watched.page.goto(url)
            statuses[url] = response.status if response else 0
            found = links_on(watched.page)
        else:
            statuses[url] = watched.page.request.get(url).status
            found = []
        for link in found:
            target = urldefrag(link).url
            if urlsplit(target).netloc == urlsplit(served.url).netloc and target not in seen:
                seen.add(target)
                queue.append(target)
    assert {url: status for url, status in statuses.items() if status != 200} == {}
    assert {served.href(p) for p in served.result.pages} <= set(statuses)
    assert watched.errors == []


def _csv_rows(body: bytes) -> int:
    records = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    return len(records)


def _json_rows(body: bytes) -> int:
    records = json.loads(body)
    assert isinstance(records, list)
    return len(records)


def _parquet_rows(body: bytes) -> int:
    return pq.read_table(io.BytesIO(body)).num_rows


FORMATS = {"csv": _csv_rows, "json": _json_rows, "parquet": _parquet_rows}


def test_every_download_resolves_and_parses(served: Served, watched: Watched) -> None:
    manifest = json.loads((served.release / "manifest.json").read_text())
    rows = {t["name"]: t["rows"] for t in manifest["tables"]}
    watched.page.goto(f"{served.url}/downloads.html")
    links = [link for link in links_on(watched.page) if link.rsplit(".", 1)[-1] in FORMATS]
    tables = [link for link in links if "/data/" in urlsplit(link).path]
    assert len(tables) == 3 * len(rows)
    for link in links:
        response = watched.page.request.get(link)
        assert response.status == 200, link
        name, kind = link.rsplit("/", 1)[-1].rsplit(".", 1)
        if link in tables:
            assert FORMATS[kind](response.body()) == rows[name], link
        else:  # the manifests of this release and the earlier ones
            assert json.loads(response.body())["release_id"], link


def test_a_missing_value_shows_an_em_dash(served: Served, watched: Watched) -> None:
    market = json.loads((served.release / "data" / "market.json").read_text())
    unpriced = next(r for r in market if r["input_usd_per_1m"] is None)
    watched.page.goto(f"{served.url}/market.html")
    name = watched.page.get_by_role("link", name=unpriced["model_name"], exact=True)
    assert watched.page.locator("#market").filter(has=name).count() == 0  # not a $0 row
    watched.page.locator("details summary").first.click()
    row = watched.page.locator("#market-unpriced tr").filter(has=name)
    assert row.count() == 1 and not any(c.startswith("$0") for c in row.all_inner_texts())
    name.click()
    watched.page.wait_for_load_state()
    prices = watched.page.locator("dt", has_text="Blended").locator(
        "xpath=following-sibling::dd[1]"
    )
    assert prices.inner_text() == "—"


def test_a_script_in_a_model_name_stays_text(served: Served, watched: Watched) -> None:
    watched.page.goto(f"{served.url}/known-good-index.html")
    link = watched.page.get_by_role("link", name=HOSTILE_NAME, exact=True)
    assert link.count() == 1
    link.click()
    watched.page.wait_for_load_state()
    assert watched.page.locator("h1").inner_text() == HOSTILE_NAME
    sources = watched.page.eval_on_selector_all("script[src]", "s => s.map(e => e.src)")
    assert sources == [f"{served.url}/static/tables.js"]  # only the site's own file, no inline
    inline = watched.page.eval_on_selector_all("script:not([src])", "s => s.map(e => e.type)")
    assert inline == ["application/json"]  # the compare page's data: never run
    assert watched.dialogs == [] and watched.errors == []


def test_the_site_works_from_a_local_folder(served: Served, watched: Watched) -> None:
    watched.page.goto((served.site / "index.html").as_uri())
    watched.page.get_by_role("link", name="Known Good Index", exact=True).first.click()
    watched.page.wait_for_load_state()
    assert watched.page.locator("h1").inner_text() == "Known Good Index"
    assert "based on" in watched.page.locator("table.leaderboard").inner_text()


def test_screenshots_of_home_and_leaderboard(served: Served, watched: Watched) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name in ("index", "known-good-index"):
        watched.page.goto(f"{served.url}/{name}.html")
        target = ARTIFACTS / f"site-{name}.png"
        watched.page.screenshot(path=str(target), full_page=True)
        assert target.stat().st_size > 10_000
    assert watched.errors == []


def test_usecase_weights_recompute_the_board_in_the_browser(
    served: Served, watched: Watched
) -> None:
    page = watched.page
    page.goto(f"{served.url}/usecase-rank.html")
    rank_of_b = "table.usecase-board tr[data-group='group-b'] .rank"
    score_of_b = "table.usecase-board tr[data-group='group-b'] .score"
    # as published: 2nd by score, its 90% interval overlapping the first's (the overlap rule)
    assert page.inner_text(rank_of_b) == "1–2 overlapping"
    for name, value in (("outcome", "0"), ("cost_efficiency", "0"), ("autonomy", "0"),
                        ("first_try", "0"), ("speed", "1")):  # fmt: skip
        page.fill(f"#weight-form input[name='{name}']", value)
    # Speed alone: group-b's runs all have speed 1, the other group's 0.2.
    assert page.inner_text(rank_of_b) == "1"
    assert page.inner_text(score_of_b) == "100.0"
    page.click("#reset-weights")
    assert page.inner_text(rank_of_b) == "1–2 overlapping"
    assert page.inner_text(score_of_b) == "57.5"  # 100 × (.4×.5 + .15×.5 + .15×1 + .15×.5 + .15×.5)
    # The group named like a script tag is shown as text, never run.
    assert page.locator("table.usecase-board td", has_text="<script>alert(1)</script>").count() == 1
    assert watched.dialogs == [] and watched.errors == []
