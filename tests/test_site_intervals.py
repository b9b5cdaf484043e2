"""Intervals where the data has them: the index pages show each value's 95% interval (or which
evaluation lacks a standard error), Navigator draws its whiskers, and UseCaseRank shows the
ranks its 90% intervals allow (the overlap rule on its methodology page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from synthetic import synthetic_tables, write_release

from bench_pipeline.site import build_site
from bench_pipeline.site.boards import overlap_rank_rows

pytestmark = pytest.mark.unit


def _group(group: str, score: float, low: float | None, high: float | None, rank: int | None):
    return {
        "use_case": "uc-demo", "group": group, "model": group, "settings": "", "score": score,
        "weighted_score": score, "ci_low": low, "ci_high": high, "n_eff": 6.0, "runs": 6,
        "passes": 6, "partials": 0, "fails": 0, "pass_rate": 1.0, "under_review_runs": 0,
        "bt_pairs": 0, "bt_win_probability": None, "blended": None, "rank": rank,
        "trend": None, "simulated": False,
    }  # fmt: skip


GROUPS = [
    _group("group-a", 80.0, 75.0, 85.0, 1),  # wholly above b and c: rank 1 alone
    _group("group-b", 70.0, 66.0, 74.0, 2),  # below a; overlaps c: 2–3
    _group("group-c", 60.0, 50.0, 72.0, 3),  # below a; overlaps b: 2–3
    _group("group-d", 55.0, None, None, 4),  # ranked, no interval: its rank alone
    _group("group-e", 90.0, 80.0, 99.0, None),  # too few runs: listed, unranked, left out
]


def _navigator(model: str, index: float, low: float | None, high: float | None, rank: int):
    return {"model": model, "index": index, "index_low": low, "index_high": high,
            "rank_best": rank, "rank_worst": rank, "tied": False, "tasks": 16, "runs": 16,
            "dominated_by": "", "dominates": ""}  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("intervals")
    tables = synthetic_tables(6, 7)
    kgi = tables["known_good_index"]
    kgi[0] |= {"known_good_index_low": 40.12, "known_good_index_high": 55.5,
               "without_stderr": None}  # fmt: skip
    kgi[1] |= {"known_good_index_low": None, "known_good_index_high": None,
               "without_stderr": "livebench"}  # fmt: skip
    cap = tables["capability_indices"][0]
    cap |= {"coding_index_low": 10.25, "coding_index_high": 30.75, "without_stderr": None}
    tables["usecase_groups"] = GROUPS
    tables["usecase_runs"] = []
    tables["navigator_models"] = [
        _navigator("nav-one", 70.0, 61.5, 78.5, 1),
        _navigator("nav-two", 50.0, None, None, 2),
    ]
    releases = root / "releases"
    release = write_release(
        releases, "r0000000000000009", tables, created_at="2025-06-02T06:00:00Z"
    )
    build_site(release, root / "site", releases, workers=1)
    return root / "site"


def test_index_pages_show_the_interval_or_say_why_not(site: Path) -> None:
    board = (site / "known-good-index.html").read_text("utf-8")
    assert 'data-low="40.12" data-high="55.5"' in board and "95% 40.12–55.50" in board
    assert "no interval: LiveBench (global average) has no standard error" in board
    capability = (site / "capability-indices.html").read_text("utf-8")
    assert 'data-low="10.25" data-high="30.75"' in capability


def test_navigator_draws_whiskers_for_its_intervals(site: Path) -> None:
    page = (site / "navigator.html").read_text("utf-8")
    chart = page[page.index("<svg") : page.index("</svg>")]
    entries = re.findall(r'<g class="entry"[^>]*data-label="([^"]+)"[^>]*>(.*?)</g>', chart, re.S)
    drawn = {label: "whisker" in body for label, body in entries}
    assert drawn == {"nav-one": True, "nav-two": False}
    assert 'data-low="61.5" data-high="78.5"' in chart


def test_usecase_ranks_follow_the_overlap_of_intervals(site: Path) -> None:
    page = (site / "usecase-rank.html").read_text("utf-8")
    cells = dict(re.findall(r'<tr data-group="([^"]+)"><td class="n rank"[^>]*>(.*?)</td>', page))
    shown = {group: re.sub(r"<[^>]+>", "", cell) for group, cell in cells.items()}
    assert shown == {
        "group-a": "1",
        "group-b": "2–3 overlapping",
        "group-c": "2–3 overlapping",
        "group-d": "4",
        "group-e": "—",
    }
    chart = page[page.index("<svg") : page.index("</svg>")]
    assert re.search(r'data-label="group-b"[^>]*data-rank-best="2" data-rank-worst="3"', chart)


def test_overlap_ranks_leave_the_published_rows_alone() -> None:
    rows = [dict(g) for g in GROUPS]
    ranged = overlap_rank_rows(rows, "ci_low", "ci_high")
    assert [(r["rank_best"], r["rank_worst"]) for r in ranged] == [
        (1, 1), (2, 3), (2, 3), (None, None), (None, None)
    ]  # fmt: skip
    assert rows == GROUPS
