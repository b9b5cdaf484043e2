"""The Navigator page shows what items 6 and 7 publish: how many runs wait for a person's
decision on a judge split, the v1 library, and v1 results with the stored overall beside the
overall shown, `mixed` where the cap triggered. Built from a real warehouse and release."""

from __future__ import annotations

import re
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from test_navigator_splits import CRITERIA, _run, _setup

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.release.build import build_release
from bench_pipeline.release.published import METHODOLOGY_VERSIONS
from bench_pipeline.runs.v1_comparison import run_library_demo
from bench_pipeline.scores.load import navigator_frames, store_frames
from bench_pipeline.site import build_site
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store


def test_the_navigator_page_shows_waiting_splits_and_v1_mixed(tmp_path: Path) -> None:
    conn = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(conn, settings.migrations_dir())
    _setup(conn, "m1")
    _run(conn, "agree", "m1", {})
    _run(conn, "split-1", "m1", {CRITERIA[0]: ("pass", "fail")})
    _run(conn, "split-2", "m1", {CRITERIA[0]: ("fail", "pass")})

    @contextmanager
    def connect():
        yield conn

    conn.execute("UPDATE setups SET api_id = 'openai/gpt-5.4', reasoning_effort = 'medium'")
    assert run_library_demo(connect, simulated=True) is not None
    store_frames(conn, navigator_frames(conn, load_bank(), datetime.now(UTC)))
    outcome = build_release(conn, tmp_path / "releases", METHODOLOGY_VERSIONS)
    conn.close()
    site = tmp_path / "site"
    build_site(outcome.path, site, tmp_path / "releases")
    page = (site / "navigator.html").read_text("utf-8")

    assert re.search(r"<strong>2 runs</strong> wait for a person to decide a split", page)
    assert page.count("<tr><td>v1-") == 16  # the library, every task with tier and version
    rows = re.findall(r'<tr class="v1-(\w+)">(.*?)</tr>', page)
    mixed = [cells for label, cells in rows if label == "mixed"]
    assert mixed, "the demo's stored 5s with a weak dimension must show as mixed"
    for cells in mixed:
        numbers = re.findall(r'<td class="n">(?:<strong>)?([\d.]+)', cells)
        assert numbers[1:3] == ["5.0", "4.0"]  # stored 5, shown 4
        assert "badge mixed" in cells and "google/gemini-2.5-flash-lite (rubric-v1)" in cells
    assert 'href="methodology/navigator.html#classic-v1-view"' in page
    methodology = (site / "methodology" / "navigator.html").read_text("utf-8")
    assert 'id="classic-v1-view"' in methodology
    assert 'id="when-the-two-judges-disagree"' in methodology
    assert "shown is 4 and the row\nis marked <strong>mixed</strong>" in methodology
