"""The model page as the hub, and the compare page, in Debian's Chromium over loopback HTTP.

From every board's rows to the model page and back by the page's own links; every board a
model is on listed on its page; a row whose model the registry does not know shown
unlinked, saying so; the compare page for three models named in its address, chosen on the
page and read back from the address, with a difference marked only where the board's own
rule separates it. Screenshots go to build/test-artifacts/hub/.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page
from site_server import chromium, serving
from synthetic import RELEASE_ID, copy_downloads, synthetic_item_boards, write_release
from test_site_reader import reader_tables

from bench_pipeline.core import settings
from bench_pipeline.site import build_site

pytestmark = pytest.mark.integration

ARTIFACTS = settings.REPO_ROOT / "build" / "test-artifacts" / "hub"
ZERO, ONE, TWO = "org0/model-0", "org1/model-1", "org2/model-2"
ITEM_WINNER = ZERO  # set below on the better entry of a significant item-board pair


def hub_tables() -> dict[str, list[dict]]:
    """The reader's release with item boards, and board rows tied to registry models: two
    PM setups and two Navigator setups on models 0 and 1 (one of each on none), a UseCaseRank
    group naming model 2 by its registry name, and the two entries of one significant
    item-board pair on models 0 and 1."""
    tables = reader_tables() | synthetic_item_boards()
    for row, model in zip(tables["pm_setups"], (ZERO, ONE, None, TWO), strict=True):
        row["model_id"] = model
    for row, model in zip(tables["navigator_models"], (ZERO, ONE, None), strict=True):
        row["model_id"] = model
    pair = tables["navigator_pairs"][0]  # nav-0 against nav-1: established, nav-0 better
    pair.update(rejected=True, better=pair["model_a"], p_value=0.001)
    for row in tables["usecase_groups"]:
        if row["group"] == "group-b":
            row["model"] = "Model 2"
    significant = next(
        p for p in tables["item_board_pairs"] if p["significant"] and p["wins_a"] > p["wins_b"]
    )
    for row in tables["item_boards"]:
        if (row["board"], row["entry_key"]) == (significant["board"], significant["entry_key_a"]):
            row["model_id"] = ZERO
        elif (row["board"], row["entry_key"]) == (significant["board"], significant["entry_key_b"]):
            row["model_id"] = ONE
    return tables


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("hub")
    release = write_release(
        root / "releases", RELEASE_ID, hub_tables(), created_at="2026-05-01T00:00:00+00:00"
    )
    copy_downloads(release, root / "site")
    build_site(release, root / "site", root / "releases", workers=0)
    with serving(root / "site") as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda e: errors.append(str(e)))
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield opened
    context.close()
    assert not errors, errors


def _path(url: str) -> str:
    return urlsplit(url).path


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


BOARDS = (
    ("known-good-index.html", "known_good_index"),
    ("capability-indices.html", "capability"),
    ("market.html", "market"),
    ("arena.html", "arena"),
    ("pm-suite.html", "pm"),
    ("navigator.html", "navigator"),
    ("usecase-rank.html", "usecase"),
    ("item-boards.html", "item_board"),
)


@pytest.mark.parametrize(("board", "kind"), BOARDS)
def test_board_row_to_model_page_and_back(site: str, page: Page, board: str, kind: str) -> None:
    page.goto(f"{site}/{board}")
    if board == "item-boards.html":  # the index of boards: open the one with linked entries
        page.locator("main a[href^='item-boards/']").first.click()
    board_path = _path(page.url)
    row_link = page.locator("main table tbody a[href*='models/']").first
    name = row_link.inner_text()
    row_link.click()
    page.wait_for_url("**/models/**")
    back = page.locator(f"table.model-boards tr[data-board='{kind}'] a.board-link")
    assert back.count() >= 1, f"the model page of {name} does not list {board}"
    hrefs = back.evaluate_all("links => links.map(a => a.href)")
    paths = [_path(h) for h in hrefs]
    assert board_path in paths, (board_path, hrefs)
    if kind == "pm":
        _shot(page, "model-page")
        page.set_viewport_size({"width": 390, "height": 844})
        _shot(page, "model-page-390")
    back.nth(paths.index(board_path)).click()
    page.wait_for_url(lambda url: _path(url) == board_path)
    assert _path(page.url) == board_path


def test_rows_without_a_model_are_unlinked_and_say_so(site: str, page: Page) -> None:
    page.goto(f"{site}/pm-suite.html")
    rows = page.locator("main table").first.locator("tbody tr")
    linked = rows.filter(has=page.locator("a.model-link"))
    unlinked = rows.filter(has=page.locator(".unlinked"))
    assert linked.count() == 3 and unlinked.count() == 1
    assert "no model page" in unlinked.first.inner_text()
    assert "model-2 · api-bare" in unlinked.first.inner_text()


def test_model_page_lists_every_board(site: str, page: Page) -> None:
    page.goto(f"{site}/models/org0-model-0.html")
    boards = page.locator("table.model-boards tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.board)"
    )
    assert set(boards) == {
        "known_good_index", "capability", "market", "arena", "pm", "navigator", "item_board"
    }  # fmt: skip
    pm = page.locator("table.model-boards tr[data-board='pm']").inner_text()
    assert "76.0–84.0" in pm and "95% margin over runs" in pm  # overall 80 ± 4, rank 1
    navigator = page.locator("table.model-boards tr[data-board='navigator']").inner_text()
    assert "1–2" in navigator and "$0.0125" in navigator and "per success" in navigator
    kgi = page.locator("table.model-boards tr[data-board='known_good_index']").inner_text()
    assert "2025-01-15" in kgi  # Epoch's data date
    page.goto(f"{site}/models/org2-model-2.html")
    usecase = page.locator("table.model-boards tr[data-board='usecase']")
    assert "group-b" in usecase.inner_text() and "52.5–62.5" in usecase.inner_text()
    page.locator("a.compare-link").first.click()  # the page's way into the compare page
    page.wait_for_selector("#compare-table:not([hidden]) tr[data-row]")
    assert urlsplit(page.url).query == "m=org2-model-2"
    assert page.locator("#compare-table thead th").all_inner_texts() == ["Figure", "Model 2"]


def _cells(page: Page, row: str) -> list[str]:
    return page.locator(f"#compare-table tr[data-row='{row}'] td").all_inner_texts()


def test_compare_three_models_and_the_address_round_trip(site: str, page: Page) -> None:
    page.goto(f"{site}/compare.html")
    for slot, name in enumerate(("Model 2", "org0/model-0", "Model 1")):
        page.locator(f"input[data-slot='{slot}']").fill(name)
    page.locator("#compare-form button[type=submit]").click()
    page.wait_for_selector("#compare-table:not([hidden]) tr[data-row]")
    assert urlsplit(page.url).query == "m=org2-model-2,org0-model-0,org1-model-1"
    heads = page.locator("#compare-table thead th").all_inner_texts()
    assert heads == ["Figure", "Model 2", "Model 0", "Model 1"]
    _shot(page, "compare")
    page.set_viewport_size({"width": 390, "height": 844})
    _shot(page, "compare-390")
    page.set_viewport_size({"width": 1280, "height": 900})

    # The address alone gives the same page: shared, reloaded, the models chosen again.
    shared = page.url
    page.goto("about:blank")
    page.goto(shared)
    page.wait_for_selector("#compare-table:not([hidden]) tr[data-row]")
    assert page.locator("#compare-table thead th").all_inner_texts() == heads
    picked = [page.locator(f"input[data-slot='{i}']").input_value() for i in range(4)]
    assert picked == ["Model 2", "Model 0", "Model 1", ""]

    # Arena: non-overlapping 95% intervals (model 1 1370-1382 over model 0 1135-1147).
    arena = _cells(page, "arena:text")
    assert "separated above Model 0" in arena[2] and "separated" not in arena[1]
    assert "1,370.2–1,382.2 (95% interval)" in arena[2]
    # Navigator: the established pair (nav-0 over nav-1), not the rank ranges (both 1-2).
    navigator = _cells(page, "navigator")
    assert "separated above Model 1" in navigator[1] and "separated" not in navigator[2]
    # Item board: the significant pair's winner only.
    item = page.locator("#compare-table tr[data-row^='item_board:'] td").all_inner_texts()
    assert "separated above Model 1" in item[1] and "separated" not in item[2]
    # PM publishes no separation rule: disjoint margins (80±4 against 73±5) stay unmarked.
    pm = _cells(page, "pm")
    assert "76.0–84.0" in pm[1] and "rank 1" in pm[1]
    assert not any("separated" in c for c in pm)
    # No board marks anything without its rule; every figure carries its data date.
    marked = page.locator("#compare-table tr[data-row] td.separated").count()
    assert marked == 3
    kgi = _cells(page, "known_good_index")
    assert all("data as of 2025-01-15" in c for c in kgi if c != "—")
    assert page.locator("#compare-table tr[data-row^='kgi:']").count() >= 3  # components
    assert page.locator("#compare-table tr[data-row='market:input_usd_per_1m']").count() == 1


def test_compare_names_an_unknown_model(site: str, page: Page) -> None:
    page.goto(f"{site}/compare.html?m=org0-model-0,no-such-model")
    page.wait_for_selector("#compare-table:not([hidden])")
    assert "no-such-model" in page.locator("#compare-status").inner_text()
    assert page.locator("#compare-table thead th").all_inner_texts() == ["Figure", "Model 0"]
