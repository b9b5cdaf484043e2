"""The hub's board entries (`site/hub.py`) from a written release, without a browser: which
boards a model is on, the intervals and costs each carries, and which differences each
board's own rule separates."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic import RELEASE_ID, write_release
from test_site_hub import ONE, TWO, ZERO, hub_tables

from bench_pipeline.site import hub
from bench_pipeline.site.release_view import load_release

pytestmark = pytest.mark.unit

DATES = {"epoch": "2025-01-15", "openrouter_models": "2025-06-01", "swebench": "2025-12-09"}


def _entries(tmp_path: Path, tables: dict[str, list[dict]]) -> dict[str, list[dict]]:
    release = write_release(tmp_path, RELEASE_ID, tables, created_at="2026-05-01T00:00:00+00:00")
    return hub.board_entries(load_release(release), DATES)


def test_each_board_entry_carries_its_figures(tmp_path: Path) -> None:
    entries = _entries(tmp_path, hub_tables())
    zero = {e["row"]: e for e in entries[ZERO]}
    assert {"known_good_index", "market", "pm", "navigator"} <= set(zero)
    assert zero["known_good_index"]["as_of"] == "2025-01-15"
    assert zero["known_good_index"]["interval_text"] is None  # no errors published here
    assert zero["pm"]["interval_text"] == "76.0–84.0"  # 80 ± 4
    assert zero["pm"]["separation"] is None and zero["pm"]["as_of"] == "2026-05-01"
    assert zero["navigator"]["rank_text"] == "1–2"
    assert zero["navigator"]["cost_text"] == "$0.0125"
    assert zero["navigator"]["beats"] == ["nav-1 · api-bare"]  # the established pair
    board = next(r for r in zero if r.startswith("item_board:"))
    one_item = next(e for e in entries[ONE] if e["row"] == board)
    assert zero[board]["beats"] == [one_item["key"]] and one_item["beats"] == []
    assert zero[board]["href"].startswith("item-boards/")
    # UseCaseRank names its model as submitted: matched by the registry's name.
    assert [e["label"] for e in entries[TWO] if e["board"] == "usecase"] == ["group-b"]
    # the setup on no model is on no model's page
    assert all(e["label"] != "model-2 · api-bare" for es in entries.values() for e in es)


def test_an_index_interval_is_shown_when_the_release_has_one(tmp_path: Path) -> None:
    tables = hub_tables()
    row = next(r for r in tables["known_good_index"] if r["model_id"] == ZERO)
    row |= {"known_good_index_low": 20.5, "known_good_index_high": 31.25}
    kgi = next(e for e in _entries(tmp_path, tables)[ZERO] if e["row"] == "known_good_index")
    assert kgi["interval_text"] == "20.5–31.2" or kgi["interval_text"] == "20.5–31.3"
    assert kgi["separation"] is None  # the index boards state no separating rule


def test_a_model_link_says_when_there_is_no_page() -> None:
    hrefs = {ZERO: "models/org0-model-0.html"}
    linked = hub.model_link("../", hrefs, ZERO, "<b>")
    assert linked == '<a class="model-link" href="../models/org0-model-0.html">&lt;b&gt;</a>'
    unlinked = hub.model_link("", hrefs, None, "Entry <1>")
    assert unlinked.startswith("Entry &lt;1&gt; <span") and "no model page" in unlinked
