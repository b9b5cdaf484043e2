"""The checks on every published asset (`bench_pipeline.release.output_checks`, run by
`bench_pipeline.assets.published_checks`): each fails on the fault it is there for."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets.published_checks import (
    CHECK_BOARD,
    CHECK_SITE_LINKS,
    published_checks,
    result,
)
from bench_pipeline.release import output_checks
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.scores.pm import SETUP_RANK
from bench_pipeline.scores.usecase import GROUP_RANK

pytestmark = pytest.mark.unit

# Rows as a demo `bench run` stores them (values from its warehouse, ids shortened).
PM_SETUPS = [
    {"setup_id": "s9ae9", "overall": 67.24358974358974, "margin95": 24.45, "status": "ranked",
     "runs": 11, "rank": 1},
    {"setup_id": "s2716", "overall": 66.4514652014652, "margin95": 16.61, "status": "ranked",
     "runs": 11, "rank": 2},
    {"setup_id": "sb391", "overall": 62.8021978021978, "margin95": 19.72, "status": "ranked",
     "runs": 11, "rank": 3},
    {"setup_id": "sprov", "overall": 70.0, "margin95": None, "status": "provisional",
     "runs": 3, "rank": None},
]  # fmt: skip
USECASE_GROUPS = [
    {"use_case": "uc-changelog-from-commits", "group": "openai/gpt-5.4 · medium",
     "score": 51.519183119508384, "weighted_score": 51.519183119508384,
     "ci_low": 47.13573137021941, "ci_high": 55.90263486879736, "runs": 8, "passes": 1,
     "partials": 7, "fails": 0, "rank": 1, "simulated": True},
    {"use_case": "uc-changelog-from-commits", "group": "z-ai/glm-5",
     "score": 32.727833373021106, "weighted_score": 32.727833373021106,
     "ci_low": 23.568444846051, "ci_high": 41.88722189999121, "runs": 8, "passes": 0,
     "partials": 5, "fails": 3, "rank": 2, "simulated": True},
]  # fmt: skip
KEY = ("setup_id",)


def test_a_board_whose_ranks_follow_its_scores_passes() -> None:
    assert output_checks.rank_problems("pm_setups", PM_SETUPS, SETUP_RANK, KEY) == []
    groups = ("use_case", "group")
    assert output_checks.rank_problems("usecase_groups", USECASE_GROUPS, GROUP_RANK, groups) == []


def test_a_rank_that_disagrees_with_its_score_fails_naming_row_and_field() -> None:
    swapped = [dict(row) for row in PM_SETUPS]
    swapped[0]["rank"], swapped[1]["rank"] = 2, 1
    problems = output_checks.rank_problems("pm_setups", swapped, SETUP_RANK, KEY)
    assert len(problems) == 2
    assert problems[0] == (
        "pm_setups (setup_id='s9ae9'): rank 2 but its overall 67.24358974358974 ranks 1"
    )
    # a provisional setup given a rank is as wrong as a ranked one given the wrong one
    ranked = [dict(row) for row in PM_SETUPS]
    ranked[3]["rank"] = 1
    assert output_checks.rank_problems("pm_setups", ranked, SETUP_RANK, KEY) == [
        "pm_setups (setup_id='sprov'): rank 1 but its overall 70.0 ranks None"
    ]


def test_a_score_outside_its_rank_range_fails() -> None:
    rows = [
        {"board": "Verified", "entry_key": "a", "score": 74.4, "rank_best": 1, "rank_worst": 3},
        {"board": "Verified", "entry_key": "b", "score": 70.6, "rank_best": 1, "rank_worst": 8},
        {"board": "Verified", "entry_key": "c", "score": 67.6, "rank_best": 1, "rank_worst": 2},
    ]
    problems = output_checks.rank_range_problems(
        "item_boards", rows, "score", ("board", "entry_key"), within=("board",)
    )
    assert problems == [
        "item_boards (board='Verified', entry_key='c'): score 67.6 ranks 3, outside its rank "
        "range 1..2"
    ]


def test_an_interval_that_excludes_its_estimate_fails() -> None:
    key = ("use_case", "group")
    args = ("weighted_score", "ci_low", "ci_high", key)
    assert output_checks.interval_problems("usecase_groups", USECASE_GROUPS, *args) == []
    wrong = [dict(row) for row in USECASE_GROUPS]
    wrong[1]["ci_high"] = 30.0
    [problem] = output_checks.interval_problems("usecase_groups", wrong, *args)
    assert problem.startswith("usecase_groups (use_case='uc-changelog-from-commits', group='z-ai")
    assert "weighted_score 32.727833373021106 outside its interval ci_low..ci_high" in problem


def test_values_out_of_range_fail() -> None:
    rows = [{"model_id": "m1", "openness": 100}, {"model_id": "m2", "openness": 130}]
    assert output_checks.range_problems("market", rows, "openness", 0, 100, ("model_id",)) == [
        "market (model_id='m2'): openness 130 outside 0..100"
    ]


def _site(root: Path, links: list[str]) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "models").mkdir()
    (root / "data" / "market.csv").write_text("model_id\n")
    (root / "models" / "m1.html").write_text('<a href="../index.html">home</a>')
    anchors = "".join(f'<a href="{link}">x</a>' for link in links)
    (root / "index.html").write_text(
        f'<link rel="stylesheet" href="https://example.org/a.css"><a href="#top">top</a>{anchors}'
    )
    return root


def test_a_site_whose_links_resolve_passes(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", ["data/market.csv", "models/m1.html", "models/", "./"])
    (site / "models" / "index.html").write_text("")
    assert output_checks.site_link_problems(site) == []


def test_a_broken_site_link_or_download_fails_naming_page_and_link(tmp_path: Path) -> None:
    site = _site(
        tmp_path / "site",
        ["data/market.csv", "data/arena.csv", "models/m2.html?x=1#top", "../secret.txt"],
    )
    assert output_checks.site_link_problems(site) == [
        "index.html: data/arena.csv (no such file)",
        "index.html: models/m2.html?x=1#top (no such file)",
        "index.html: ../secret.txt (outside the site)",
    ]


def test_the_dagster_checks_report_what_the_plain_functions_find(tmp_path: Path) -> None:
    """The PM board's check over a warehouse whose stored rank disagrees with its score:
    failed, blocking, the first problem as its description."""
    warehouse = WarehouseResource(path=str(tmp_path / "bench.duckdb"))
    with warehouse.connection() as conn:  # the warehouse's own tables (migrated)
        conn.executemany(
            "INSERT INTO pm_setups (setup_id, overall, margin95, status, runs, rank) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [[r["setup_id"], r["overall"], r["margin95"], r["status"], r["runs"], r["rank"]]
             for r in PM_SETUPS],
        )  # fmt: skip
        conn.execute(
            "INSERT INTO pm_runs (run_id, setup_id, task, case_id) "
            "SELECT setup_id || i, setup_id, 'pm-task', 'case' FROM pm_setups, range(runs) t(i)"
        )
    [check] = [c for c in published_checks if c.check_key.asset_key.path == ["scores", "pm_suite"]]
    assert check.check_key.name == CHECK_BOARD
    assert check.check_specs and next(iter(check.check_specs)).blocking
    assert check(warehouse=warehouse).passed

    with warehouse.connection() as conn:
        conn.execute("UPDATE pm_setups SET rank = 4 - rank WHERE status = 'ranked'")
    failed = check(warehouse=warehouse)
    assert not failed.passed
    assert failed.description.startswith("2 problems; first: pm_setups (setup_id='s9ae9'): rank 3")


def test_the_site_check_names_the_broken_link(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    _site(home / "build" / "site", ["data/gone.csv"])
    monkeypatch.setenv("BENCH_HOME", str(home))
    [check] = [c for c in published_checks if c.check_key.name == CHECK_SITE_LINKS]
    outcome = check()
    assert not outcome.passed
    assert outcome.description == "1 problem; first: index.html: data/gone.csv (no such file)"
    assert result([]).passed and result([]).description is None
    assert isinstance(outcome, dg.AssetCheckResult)
