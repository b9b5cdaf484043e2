"""The site on a phone (390 px) and a desktop (1280 px), in Debian's Chromium over loopback.

Every page keeps its priority columns (a table's `data-keep`) on screen at 390 px, folding the
others behind a button that names them; axe-core (the copy `axe-playwright-python` bundles,
a dev dependency) finds no serious or critical violation on any page type at either width;
every box that scrolls is a keyboard stop; the price scatter fits a phone and names its
points; Arena rows of one model tell its variants apart. Screenshots of each page at both
widths go to build/test-artifacts/, beside the other browser tests' screenshots.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import axe_playwright_python
import pytest
from playwright.sync_api import Browser, Page
from synthetic import (
    synthetic_item_boards,
)
from test_site_reader import (
    ARTIFACTS,
    BOARDS,
    Served,
    browser,
    open_page,
    reader_tables,
    served_release,
)

from bench_pipeline.site.boards import arena_variant

__all__ = ["browser"]  # the fixture, shared with the reader's tests

pytestmark = pytest.mark.integration

AXE = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text("utf-8")
WIDTHS = (1280, 390)
PAGES = (*BOARDS, "methodology/index.html", "tasks.html", "item-boards.html")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The reader's release (tests/test_site_reader.py) with item boards added, served."""
    tables = reader_tables() | synthetic_item_boards()
    with served_release(tmp_path_factory.mktemp("phone"), tables) as found:
        yield found


def _pages(served: Served) -> list[str]:
    """Every page type: the boards, a model page, an item board and a receipt where built."""
    found = [name for name in PAGES if (served.site / name).is_file()]
    for folder in ("models", "item-boards", "receipts"):
        pages = (
            sorted((served.site / folder).glob("*.html")) if (served.site / folder).is_dir() else []
        )
        found += [p.relative_to(served.site).as_posix() for p in pages[:1]]
    return found


def _axe(page: Page) -> list[dict]:
    page.evaluate(AXE)
    return page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' '))}))"
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_axe_finds_no_serious_or_critical_violation(
    served: Served, browser: Browser, width: int
) -> None:
    page = open_page(browser, width)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    checked, found = [], {}
    for name in _pages(served):
        page.goto(f"{served.url}/{name}")
        page.wait_for_load_state("load")
        bad = [v for v in _axe(page) if v["impact"] in ("serious", "critical")]
        if bad:
            found[name] = bad
        checked.append(name)
        shot = ARTIFACTS / f"phone-{width}-{name.replace('/', '-').removesuffix('.html')}.png"
        page.screenshot(path=str(shot), full_page=True)
    assert found == {}
    assert {"navigator.html", "market.html", "arena.html"} <= set(checked)
    assert any(n.startswith("models/") for n in checked)
    assert any(n.startswith("item-boards/") for n in checked)
    assert page.errors == []  # type: ignore[attr-defined]


# Each table naming its priority columns: are they on screen, inside the table's box, with
# the box not scrolling sideways, and are the folded ones named beside it?
KEPT = """() => [...document.querySelectorAll('table[data-keep]')]
  .filter(t => !t.closest('details:not([open])'))
  .map(t => {
    const box = t.closest('.scroll') || t.parentElement;
    const b = box.getBoundingClientRect();
    const head = t.tHead.rows[t.tHead.rows.length - 1];
    const keep = t.dataset.keep.split('|');
    const cells = [...head.cells];
    const kept = cells.filter(c => keep.includes(c.textContent.trim()));
    const seen = c => { const r = c.getBoundingClientRect();
      return r.width > 0 && r.left >= b.left - 1 && r.right <= Math.min(b.right, innerWidth) + 1; };
    const choice = box.previousElementSibling;
    return {id: t.id || t.className, kept: kept.map(c => c.textContent.trim()),
            hidden: kept.filter(c => !seen(c)).map(c => c.textContent.trim()),
            folded: cells.filter(c => !c.getClientRects().length).map(c => c.textContent.trim()),
            scrolls: box.scrollWidth > box.clientWidth + 1,
            said: choice && choice.classList.contains('column-choice') ? choice.textContent : ''};
  })"""


def test_every_page_at_390_shows_its_priority_columns(served: Served, browser: Browser) -> None:
    page = open_page(browser, 390)
    tables = 0
    for name in _pages(served):
        page.goto(f"{served.url}/{name}")
        page.wait_for_load_state("load")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
        for table in page.evaluate(KEPT):
            tables += 1
            assert table["kept"] and table["hidden"] == [], (name, table)
            assert not table["scrolls"], (name, table)
            for column in table["folded"]:  # what is folded is named, and one tap away
                assert column in table["said"], (name, table)
    assert tables >= 8
    # the button shows every column again (in a box that then scrolls), and folds them back
    page.goto(f"{served.url}/market.html")
    button = page.locator("p.column-choice button").first
    before = page.locator("#market thead th").filter(has_text="Output speed").is_visible()
    button.click()
    after = page.locator("#market thead th").filter(has_text="Output speed").is_visible()
    assert (before, after) == (False, True)
    assert button.get_attribute("aria-expanded") == "true"
    button.click()
    assert not page.locator("#market thead th").filter(has_text="Output speed").is_visible()
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_desktop_shows_every_column_of_the_boards(served: Served, browser: Browser) -> None:
    page = open_page(browser, 1280)
    for name in ("navigator.html", "market.html", "known-good-index.html", "pm-suite.html"):
        page.goto(f"{served.url}/{name}")
        page.wait_for_load_state("load")
        for table in page.evaluate(KEPT):
            assert table["folded"] == [] and not table["scrolls"], (name, table)
        assert page.locator("p.column-choice:visible").count() == 0


def test_every_scrolling_box_is_a_named_keyboard_stop(served: Served, browser: Browser) -> None:
    page = open_page(browser, 390)
    stops = 0
    for name in _pages(served):
        page.goto(f"{served.url}/{name}")
        page.wait_for_load_state("load")
        boxes = page.evaluate(
            "() => [...document.querySelectorAll('.scroll, .chart-box')]"
            ".filter(b => !b.closest('details:not([open])'))"
            ".filter(b => b.scrollWidth > b.clientWidth + 1 || b.scrollHeight > b.clientHeight + 1)"
            ".map(b => [b.getAttribute('tabindex'), b.getAttribute('aria-label') || ''])"
        )
        for tabindex, label in boxes:
            stops += 1
            assert tabindex == "0" and label.strip(), (name, label)
    assert stops > 0  # the phone does have boxes that scroll (the pair matrices, say)


def test_the_price_scatter_fits_a_phone_and_names_its_points(
    served: Served, browser: Browser
) -> None:
    page = open_page(browser, 390)
    page.goto(f"{served.url}/market.html")
    chart = page.locator(".chart-box svg.scatter")
    box = chart.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    named = page.locator("svg.scatter g.spot.named text.tag")
    assert 1 <= named.count() <= 8
    boxes = [named.nth(i).bounding_box() for i in range(named.count())]
    for i, a in enumerate(boxes):  # named in place: inside the chart, no two overlapping
        assert (
            a is not None
            and a["x"] >= box["x"] - 1
            and a["x"] + a["width"] <= box["x"] + box["width"] + 1
        )
        for b in boxes[i + 1 :]:
            assert b is not None
            apart = a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
            assert apart or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
    # an unnamed point names itself when tapped or reached by the keyboard
    other = page.locator("svg.scatter g.spot:not(.named)").first
    tag = other.locator("text.tag")
    assert not tag.is_visible()
    other.focus()
    assert tag.is_visible()
    label = other.locator("circle.point").get_attribute("data-label") or ""
    assert tag.text_content() and label.startswith(tag.text_content().rstrip("…"))
    assert (other.get_attribute("aria-label") or "").startswith(label)


@pytest.mark.parametrize(
    ("key", "variant"),
    [  # LMArena's own keys, from the text board of the recorded snapshot (2026-01)
        ("claude-opus-4-5-20251101-thinking-32k", "thinking 32k, 2025-11-01"),
        ("claude-opus-4-5-20251101", "2025-11-01"),
        ("gpt-5.1-high", "high effort"),
        ("gpt-5.1", "gpt-5.1"),
        ("claude-opus-4-1-20250805-thinking-16k", "thinking 16k, 2025-08-05"),
        ("gemini-2.5-flash-lite-preview-09-2025-no-thinking", "no thinking"),
        ("qwen3-235b-a22b-thinking-2507", "thinking, 2025-07"),
        ("grok-4.1-thinking-2025-11-17", "thinking, 2025-11-17"),
        ("o3-mini-high", "high effort"),
        ("mistral-medium", "mistral-medium"),  # a model's name, not an effort
        ("magistral-medium-2506", "2025-06"),
    ],
)
def test_an_arena_variant_is_read_from_lmarenas_key(key: str, variant: str) -> None:
    assert arena_variant(key) == variant


def test_arena_rows_of_one_model_read_apart(served: Served, browser: Browser) -> None:
    page = open_page(browser, 390)
    page.goto(f"{served.url}/arena.html")
    for table in page.locator("table[id^='arena-']").all():
        names = [
            re.sub(r"\s+", " ", t).strip()
            for t in table.locator("tbody td:has(> a)").all_inner_texts()
        ]
        assert len(names) == len(set(names)), table.get_attribute("id")


def test_item_board_entries_of_one_name_read_apart(served: Served, browser: Browser) -> None:
    page = open_page(browser, 390)
    pages = sorted((served.site / "item-boards").glob("*.html"))
    twins = 0
    for board in pages:
        page.goto(f"{served.url}/item-boards/{board.name}")
        cells = page.locator("#item-board tbody td:nth-child(2)").all_inner_texts()
        names = [re.sub(r"\s+", " ", c).strip() for c in cells]
        assert len(names) == len(set(names)), board.name
        twins += sum(n.startswith("Twin") for n in names)
    assert twins >= 2  # the synthetic board's two entries named "Twin"


def test_an_item_boards_scatter_fits_a_phone_and_names_its_points(
    served: Served, browser: Browser
) -> None:
    # The item board's cost-against-score chart is the site's one scatter: it fits at 390 px,
    # names its top points in place, and every point is a named keyboard stop.
    page = open_page(browser, 390)
    charts = 0
    for board in sorted((served.site / "item-boards").glob("*.html")):
        page.goto(f"{served.url}/item-boards/{board.name}")
        chart = page.locator(".chart-box svg.scatter")
        if not chart.count():
            continue
        charts += 1
        box = chart.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, board.name
        spots = chart.locator("g.spot")
        assert spots.count() >= 2 and chart.locator("g.spot.named").count() >= 1, board.name
        for i in range(spots.count()):
            assert spots.nth(i).get_attribute("tabindex") == "0"
            assert spots.nth(i).get_attribute("aria-label"), board.name
    assert charts >= 1
