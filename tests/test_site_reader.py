"""The reader's site in Chromium at a desktop (1280 px) and a phone (390 px) width.

Every board page is opened in Debian's Chromium (/usr/bin/chromium, driven by Playwright,
never downloaded) over loopback HTTP: no table hides a column without a visible cue, headers
stick, sorting reorders rows, filtering and the model search find rows, the pages read with
JavaScript off, and every chart carries the published figures in its data attributes.
Screenshots of the main pages at both widths go to build/test-artifacts/.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page
from site_server import chromium, serving
from synthetic import (
    PREVIOUS_ID,
    RELEASE_ID,
    copy_downloads,
    synthetic_boards,
    synthetic_tables,
    write_release,
)

from bench_pipeline.core import settings
from bench_pipeline.release.published import PUBLISHED_BY_NAME
from bench_pipeline.site import build_site

pytestmark = pytest.mark.integration

ARTIFACTS = settings.REPO_ROOT / "build" / "test-artifacts"
WIDTHS = (1280, 390)
BOARDS = (
    "index.html", "known-good-index.html", "capability-indices.html", "market.html",
    "arena.html", "pm-suite.html", "navigator.html", "usecase-rank.html", "models.html",
    "changes.html", "downloads.html", "about.html",
)  # fmt: skip
SCREENSHOTS = (
    "index.html", "known-good-index.html", "market.html", "arena.html",
    "capability-indices.html", "changes.html", "pm-suite.html", "downloads.html",
)  # fmt: skip


def _row(table: str, **values: Any) -> dict[str, Any]:
    return dict.fromkeys(PUBLISHED_BY_NAME[table].column_names) | values


def reader_tables() -> dict[str, list[dict[str, Any]]]:
    """The synthetic release with 40 models, a PM board and a Navigator board (simulated, as
    practice runs are) and board-level Arena ranks on one board."""
    tables = synthetic_tables(40) | synthetic_boards()
    tables["pm_setups"] = [
        _row("pm_setups", setup_id=f"s{i}", setup=f"model-{i} · api-bare", overall=80.0 - 7 * i,
             margin95=4.0 + i, runs=10, tasks=6, missing_core_tasks="", status="ranked",
             rank=i + 1, simulated=True)
        for i in range(4)
    ]  # fmt: skip
    navigator = [f"nav-{i} · api-bare" for i in range(3)]
    tables["navigator_models"] = [
        _row("navigator_models", model=name, index=70.0 - 9 * i, tasks=40, runs=100,
             rank_best=1 if i < 2 else 3, rank_worst=2 if i < 2 else 3, tied=i < 2,
             cost_per_success_usd="0.0125", dominated_by="", dominates="", simulated=True)
        for i, name in enumerate(navigator)
    ]  # fmt: skip
    tables["navigator_pairs"] = [
        _row("navigator_pairs", model_a=a, model_b=b, n_tasks=40, statistic=1.0, p_value=0.2,
             rejected=False, better=None, simulated=True)
        for i, a in enumerate(navigator) for b in navigator[i + 1:]
    ]  # fmt: skip
    return tables


def reader_diff(tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """A diff with rank moves, a price cut, a model added and removed, and its cause."""
    first, second = tables["known_good_index"][0], tables["known_good_index"][1]
    priced = next(r for r in tables["market"] if r["input_usd_per_1m"] is not None)
    return {
        "from": PREVIOUS_ID, "to": RELEASE_ID,
        "models_added": [tables["models"][-1]["model_id"]],
        "models_removed": ["retired/model-x"],
        "tables": {
            "known_good_index": {
                "rows_added": [], "rows_removed": [], "changed": [],
                "rank_moves": [{"key": {"model_id": first["model_id"]}, "old_rank": 3,
                                "new_rank": 1},
                               {"key": {"model_id": second["model_id"]}, "old_rank": 1,
                                "new_rank": 2}],
            },
            "market": {
                "rows_added": [], "rows_removed": [], "rank_moves": [],
                "changed": [{"key": {"model_id": priced["model_id"]},
                             "column": "input_usd_per_1m", "old": "12.5",
                             "new": priced["input_usd_per_1m"], "lineage": {}}],
            },
        },
        "caused_by": {"source_runs": [{"source": "openrouter_models", "run_id": "or-run-2",
                                       "status": "accepted"}], "case_versions": []},
    }  # fmt: skip


@dataclass
class Served:
    site: Path
    release: Path
    url: str

    def table(self, name: str) -> list[dict[str, Any]]:
        return json.loads((self.release / "data" / f"{name}.json").read_text("utf-8"))


@contextlib.contextmanager
def served_release(root: Path, tables: dict[str, list[dict]]) -> Iterator[Served]:
    """`tables` published as the release after a synthetic one, its site built under `root`
    and served over loopback HTTP."""
    releases = root / "releases"
    write_release(releases, PREVIOUS_ID, synthetic_tables(39, 8), created_at="2025-06-01T06:00Z")
    release = write_release(
        releases, RELEASE_ID, tables, created_at="2025-06-02T06:00Z", previous=PREVIOUS_ID,
        diff=reader_diff(tables),
    )  # fmt: skip
    copy_downloads(release, root / "site")
    build_site(release, root / "site", releases)
    with serving(root / "site") as url:
        yield Served(root / "site", release, url)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_release(tmp_path_factory.mktemp("reader"), reader_tables()) as found:
        yield found


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as launched:
        yield launched


def open_page(browser: Browser, width: int, height: int = 900, script: bool = True) -> Page:
    context = browser.new_context(
        viewport={"width": width, "height": height}, java_script_enabled=script
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors  # type: ignore[attr-defined]
    return page


# Every table's box: is it wider than shown, and is its cue (the element tables.js puts at the
# top of the box) visible and saying how many columns are off to the right?
OVERFLOW = """() => [...document.querySelectorAll('table, .chart-box > svg')].map(t => {
  const box = t.closest('.scroll') || t.parentElement;
  const cue = box.querySelector(':scope > .scroll-cue');
  const shown = cue && cue.classList.contains('scroll-cue') && !cue.hidden
    && cue.getBoundingClientRect().height > 0;
  const inDetails = !!t.closest('details:not([open])');
  return {id: t.id || t.getAttribute('class') || '(table)',
          wide: box.scrollWidth > box.clientWidth + 1, shown: !!shown,
          cue: shown ? cue.textContent : '', inDetails};
})"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_table_hides_a_column_without_a_visible_cue(
    served: Served, browser: Browser, width: int
) -> None:
    page = open_page(browser, width)
    overflowing = 0
    for name in BOARDS:
        page.goto(f"{served.url}/{name}")
        page.wait_for_load_state("load")
        # the page itself never scrolls sideways: only a table's own box does, with its cue
        assert page.evaluate("document.documentElement.scrollWidth") <= width, name
        for table in page.evaluate(OVERFLOW):
            if table["inDetails"]:
                continue
            if table["wide"]:
                overflowing += 1
                assert table["shown"], (name, table)
                assert "to the right" in table["cue"], (name, table)
                assert "more column" in table["cue"] or table["id"].startswith("chart")
            else:
                assert not table["shown"], (name, table)
    if width == 390:
        assert overflowing > 0  # the phone width does exercise the cue
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_cue_follows_a_scroll_to_the_last_column(served: Served, browser: Browser) -> None:
    page = open_page(browser, 390)
    page.goto(f"{served.url}/known-good-index.html")
    # a phone shows the leaderboard's priority columns only; its button shows every column
    page.locator("p.column-choice button").first.click()
    cue = page.locator("#known-good-index").locator("xpath=../p[@class='scroll-cue']")
    assert "more column" in cue.inner_text()
    page.eval_on_selector(
        "#known-good-index",
        "t => { const b = t.closest('.scroll'); b.scrollLeft = b.scrollWidth; "
        "b.dispatchEvent(new Event('scroll')); }",
    )
    assert "to the left" in cue.inner_text() and "to the right" not in cue.inner_text()


def test_headers_stick_on_long_tables(served: Served, browser: Browser) -> None:
    page = open_page(browser, 1280, height=500)
    page.goto(f"{served.url}/market.html")
    box = page.locator("#market").locator("xpath=..")
    assert box.evaluate("b => b.scrollHeight > b.clientHeight")  # long: its box scrolls
    header_top = box.evaluate("b => b.querySelector('thead th').getBoundingClientRect().top")
    box.evaluate("b => { b.scrollTop = 300; }")
    after = box.evaluate(
        "b => [b, b.querySelector('thead th'), b.querySelector('tbody tr')]"
        ".map(e => e.getBoundingClientRect().top)"
    )
    assert header_top > after[0]  # below the filter box at first, then held at the top
    assert abs(after[1] - after[0]) <= 1
    assert after[2] < after[0]  # the first row has scrolled under the header


def natural(text: str) -> list[Any]:
    """A sort key reading digit runs as numbers ("Model 2" before "Model 10"), as tables.js
    sorts text."""
    return [int(p) if p.isdigit() else p.casefold() for p in re.split(r"(\d+)", text)]


def _column(page: Page, table: str, index: int) -> list[str]:
    return page.eval_on_selector_all(
        f"{table} tbody tr:not([hidden])",
        f"rows => rows.map(r => r.cells[{index}].textContent.trim())",
    )


def test_sorting_a_column_reorders_rows(served: Served, browser: Browser) -> None:
    page = open_page(browser, 1280)
    page.goto(f"{served.url}/known-good-index.html")
    published = [r for r in served.table("known_good_index") if r["rank"] is not None]
    by_rank = [
        r["model_name"] for r in sorted(published, key=lambda r: (r["rank"], r["model_name"]))
    ]
    assert _column(page, "#known-good-index", 1) == by_rank  # the published order first
    header = page.locator("#known-good-index thead th").nth(2)
    header.get_by_role("button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    values = sorted(r["known_good_index"] for r in published)
    shown = [float(v.split()[0]) for v in _column(page, "#known-good-index", 2)]
    assert shown == [round(v, 2) for v in values]
    header.get_by_role("button").click()
    assert header.get_attribute("aria-sort") == "descending"
    shown = [float(v.split()[0]) for v in _column(page, "#known-good-index", 2)]
    assert shown == [round(v, 2) for v in reversed(values)]
    # a text column sorts by name; a column with gaps keeps its dashes last both ways
    page.locator("#known-good-index thead th").nth(1).get_by_role("button").click()
    names = _column(page, "#known-good-index", 1)
    assert names == sorted(names, key=natural) and names != by_rank
    for _ in range(2):
        page.locator("#known-good-index thead th").nth(5).get_by_role("button").click()
        cells = _column(page, "#known-good-index", 5)
        assert (
            "—" in cells
            and cells[cells.index("—") :] == ["—"] * cells[cells.index("—") :].__len__()
        )
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_filter_box_narrows_a_long_table(served: Served, browser: Browser) -> None:
    page = open_page(browser, 1280)
    page.goto(f"{served.url}/market.html")
    priced = [r for r in served.table("market") if r["blended_price_usd_per_1m"] is not None]
    target = priced[-1]["model_name"]
    assert len(_column(page, "#market", 0)) == len(priced)
    page.locator("label.table-filter input").first.fill(target)
    shown = _column(page, "#market", 0)
    assert target in shown and len(shown) < len(priced)
    counted = page.locator("label.table-filter").first.inner_text()
    assert f"{len(shown)} of {len(priced)} rows" in counted


@pytest.mark.parametrize("width", WIDTHS)
def test_the_search_box_finds_a_model(served: Served, browser: Browser, width: int) -> None:
    models = served.table("models")
    wanted = models[len(models) // 2]
    page = open_page(browser, width)
    page.goto(f"{served.url}/index.html")
    search = page.get_by_role("searchbox", name="Find a model by name or id")
    search.fill(wanted["model_id"])
    search.press("Enter")
    page.wait_for_url("**/models.html?q=*")
    assert _column(page, "#models", 1) == [wanted["model_id"]]
    link = page.locator("#models tbody tr:not([hidden]) a").first
    assert link.inner_text() == wanted["name"]
    link.click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == wanted["name"]


def test_pages_read_in_full_without_javascript(served: Served, browser: Browser) -> None:
    page = open_page(browser, 390, script=False)
    page.goto(f"{served.url}/known-good-index.html")
    ranked = [r for r in served.table("known_good_index") if r["rank"] is not None]
    assert len(_column(page, "#known-good-index", 1)) == len(ranked)
    assert page.locator("th button.sort").count() == 0  # nothing added, nothing missing
    assert page.locator("svg.bars g.bar").count() == len(ranked)
    page.goto(f"{served.url}/models.html")
    assert len(_column(page, "#models", 1)) == len(served.table("models"))


def _marks(page: Page, selector: str, *names: str) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        selector,
        "(els, names) => els.map(e => Object.fromEntries("
        "names.map(n => [n, e.getAttribute('data-' + n)])))",
        list(names),
    )


def _number(text: str | None) -> float | None:
    return None if text in (None, "") else float(text)


def test_charts_draw_the_published_values(served: Served, browser: Browser) -> None:
    page = open_page(browser, 1280)
    # Known Good Index: a bar per ranked model, its coverage visible as "k of 6"
    page.goto(f"{served.url}/known-good-index.html")
    ranked = sorted(
        (r for r in served.table("known_good_index") if r["rank"] is not None),
        key=lambda r: (r["rank"], r["model_name"]),
    )
    bars = _marks(page, "svg.bars g.bar", "label", "value", "note")
    assert [(b["label"], _number(b["value"]), b["note"]) for b in bars] == [
        (r["model_name"], r["known_good_index"], f"{r['index_components']} of 6") for r in ranked
    ]
    note = page.locator("svg.bars g.bar tspan.note").first
    assert note.is_visible()
    assert note.text_content() == f" · {ranked[0]['index_components']} of 6"
    # price against index: every model with both, at its published blended price
    page.goto(f"{served.url}/market.html")
    kgi = {r["model_id"]: r["known_good_index"] for r in served.table("known_good_index")}
    expected = {
        (r["model_name"], float(r["blended_price_usd_per_1m"]), kgi[r["model_id"]])
        for r in served.table("market")
        if r["blended_price_usd_per_1m"] is not None and kgi.get(r["model_id"]) is not None
    }
    points = _marks(page, "svg.scatter circle.point", "label", "x", "y")
    assert {(p["label"], _number(p["x"]), _number(p["y"])) for p in points} == expected
    assert expected
    # Arena: each board's top entries with their 95% intervals
    page.goto(f"{served.url}/arena.html")
    arena = served.table("arena_elo")
    for board in sorted({r["leaderboard"] for r in arena}):
        rows = sorted((r for r in arena if r["leaderboard"] == board), key=lambda r: -r["rating"])
        drawn = _marks(page, f"#arena-{board}-chart svg g.entry", "label", "value", "low", "high")
        assert [(_number(d["value"]), _number(d["low"]), _number(d["high"])) for d in drawn] == [
            (r["rating"], r["rating_low"], r["rating_high"]) for r in rows[: len(drawn)]
        ]
        assert len(drawn) == min(len(rows), 30)
    # PM suite: score ± published margin, and its rank
    page.goto(f"{served.url}/pm-suite.html")
    drawn = _marks(page, "svg.intervals g.entry", "label", "value", "low", "high", "rank-best")
    assert [(d["label"], _number(d["value"]), _number(d["low"]), _number(d["high"]),
             d["rank-best"]) for d in drawn] == [
        (r["setup"], r["overall"], r["overall"] - r["margin95"], r["overall"] + r["margin95"],
         str(r["rank"])) for r in served.table("pm_setups")
    ]  # fmt: skip
    # Navigator: index and rank ranges as published
    page.goto(f"{served.url}/navigator.html")
    drawn = _marks(page, "svg.intervals g.entry", "label", "value", "rank-best", "rank-worst")
    assert [(d["label"], _number(d["value"]), d["rank-best"], d["rank-worst"]) for d in drawn] == [
        (r["model"], r["index"], str(r["rank_best"]), str(r["rank_worst"]))
        for r in served.table("navigator_models")
    ]
    assert page.locator("svg.intervals rect.rank").count() == len(drawn)
    # UseCaseRank: score with its 90% interval
    page.goto(f"{served.url}/usecase-rank.html")
    drawn = _marks(page, "svg.intervals g.entry", "label", "value", "low", "high")
    assert [
        (d["label"], _number(d["value"]), _number(d["low"]), _number(d["high"])) for d in drawn
    ] == [
        (r["group"], r["score"], r["ci_low"], r["ci_high"]) for r in served.table("usecase_groups")
    ]
    assert page.errors == []  # type: ignore[attr-defined]


def test_what_changed_opens_with_a_summary(served: Served, browser: Browser) -> None:
    page = open_page(browser, 1280)
    page.goto(f"{served.url}/changes.html")
    headings = page.locator("main h2").all_inner_texts()
    assert headings.index("In short") < headings.index("Row-level detail")
    summary = page.locator("#summary").inner_text()
    first = served.table("known_good_index")[0]["model_name"]
    assert f"{first} up from 3 to 1" in summary
    assert "input 12.50 → " not in summary and "$12.50 → $" in summary
    assert "Models added: 1" in summary and "Removed: 1" in summary
    assert "openrouter_models run or-run-2 (accepted)" in summary


def test_downloads_say_which_tables_are_simulated(served: Served, browser: Browser) -> None:
    page = open_page(browser, 1280)
    page.goto(f"{served.url}/downloads.html")
    rows = {
        cells[0].split()[-1]: cells[2]
        for cells in page.eval_on_selector_all(
            "#downloads tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
        )
    }
    assert rows["pm_setups"].startswith("simulated") and "all rows" in rows["pm_setups"]
    assert rows["navigator_pairs"].startswith("simulated") and "all rows" in rows["navigator_pairs"]
    assert rows["known_good_index"] == "no"
    page.goto(f"{served.url}/navigator.html")
    pairs = page.locator("table").nth(1).locator("tbody tr").first
    assert "simulated" in pairs.inner_text()


def test_screenshots_of_the_main_pages_at_both_widths(served: Served, browser: Browser) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page = open_page(browser, width)
        for name in SCREENSHOTS:
            page.goto(f"{served.url}/{name}")
            target = ARTIFACTS / f"site-{name.removesuffix('.html')}-{width}.png"
            page.screenshot(path=str(target), full_page=True)
            assert target.stat().st_size > 10_000, target
        assert page.errors == []  # type: ignore[attr-defined]


def test_the_home_page_lists_every_board_and_about_tells_the_truth(
    served: Served, browser: Browser
) -> None:
    page = open_page(browser, 1280)
    page.goto(f"{served.url}/index.html")
    nav = set(page.eval_on_selector_all("header.site nav a", "links => links.map(a => a.href)"))
    listed = set(page.eval_on_selector_all("ul.sections a", "links => links.map(a => a.href)"))
    assert nav <= listed, nav - listed
    page.goto(f"{served.url}/about.html")
    lead = page.locator("p.lead").inner_text()
    assert "no evaluations of its own" not in lead
    assert "runs evaluations of its own" in lead
