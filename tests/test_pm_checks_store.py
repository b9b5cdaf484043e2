"""The PM checks from a real warehouse: a bank where one setup was made to do far better on
public cases than on private ones is flagged, and one that was not is not; what is published
holds counts and gaps only, never a private case's id or score."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest
from synthetic import RELEASE_ID, synthetic_tables, write_release

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.release.published import PUBLISHED_BY_NAME
from bench_pipeline.scores.load import store_frames
from bench_pipeline.scores.pm import PmRun, pm_tables
from bench_pipeline.scores.pm_checks_store import PM_CHECK_TABLES, pm_check_frames
from bench_pipeline.site import build_site
from bench_pipeline.taskbank import STANDARD_CRITERIA

pytestmark = pytest.mark.store

TASKS = 8
ALL_PASS = {c.id: "pass" for c in STANDARD_CRITERIA}


def graded(run_id: str, setup: str, task: str, case: str, grade: int) -> PmRun:
    """DM 100, judge = review = grade: PM = 30 + 70 × (grade − 1) / 4 (3 → 65, 5 → 100)."""
    return PmRun(run_id, setup, task, case, "discovery", True, False, 0, ALL_PASS, grade, grade)


def bank_runs() -> list[PmRun]:
    """Eight tasks of one public and one private case. `leaky` gets 5 on every public case
    and 3 on every private one (gap 35 each); `honest` gets 4 on every public case and 5 or 3
    on the private ones, alternately (gaps −17.5, +17.5, ...)."""
    runs = []
    for i in range(TASKS):
        task = f"task-{i}"
        runs += [
            graded(f"l{i}p", "leaky", task, f"{task}-public", 5),
            graded(f"l{i}h", "leaky", task, f"{task}-held", 3),
            graded(f"h{i}p", "honest", task, f"{task}-public", 4),
            graded(f"h{i}h", "honest", task, f"{task}-held", 5 if i % 2 else 3),
        ]
    return runs


@pytest.fixture
def conn(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(connection, settings.migrations_dir())
    rows = [
        ("pm", f"task-{i}-{kind}", "v1", f"task-{i}", "t", "discovery", "synthetic",
         kind == "held", False, True, False, 1, True, datetime(2026, 11, 1))
        for i in range(TASKS) for kind in ("public", "held")
    ]  # fmt: skip
    connection.executemany(f"INSERT INTO task_cases VALUES ({', '.join('?' * 14)})", rows)
    tables = pm_tables(bank_runs())
    store_frames(connection, {"pm_runs": tables.pm_runs, "pm_tasks": tables.pm_tasks})
    yield connection
    connection.close()


def test_the_leaky_setup_is_flagged_and_the_honest_one_is_not(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    frames = pm_check_frames(conn)
    store_frames(conn, frames)
    published = PUBLISHED_BY_NAME["pm_contamination"].frame(conn)  # types as declared
    rows = {r["setup_id"]: r for r in published.to_dicts()}
    # leaky: eight gaps of 100 − 65 = 35 -> p = 2 / 2^8; Holm over 2 setups: 0.0078 ≤ 0.025
    assert rows["leaky"]["gap"] == 35.0 and rows["leaky"]["p_value"] == 2 / 256
    assert rows["leaky"]["matched_by_task"] == 8 and rows["leaky"]["flagged"]
    # honest: 82.5 − 65 = +17.5 and 82.5 − 100 = −17.5, four each: D = 0, p = 1
    assert rows["honest"]["gap"] == 0.0 and rows["honest"]["p_value"] == 1.0
    assert not rows["honest"]["flagged"] and not rows["honest"]["significant"]


def test_what_is_published_names_no_private_case(conn: duckdb.DuckDBPyConnection) -> None:
    store_frames(conn, pm_check_frames(conn))
    text = json.dumps(
        [PUBLISHED_BY_NAME[t].frame(conn).to_dicts() for t in PM_CHECK_TABLES], default=str
    )
    assert "-held" not in text  # no private case id
    assert "65.0" not in text and "100.0" not in text  # no private score, only gaps


def test_every_task_is_judged_for_admission(conn: duckdb.DuckDBPyConnection) -> None:
    store_frames(conn, pm_check_frames(conn))
    rows = PUBLISHED_BY_NAME["pm_task_admission"].frame(conn).to_dicts()
    assert [r["task"] for r in rows] == [f"task-{i}" for i in range(TASKS)]
    # Two setups: one pair per task, too few to admit anything.
    assert all(r["setups"] == 2 and r["pairs"] == 1 and not r["separates"] for r in rows)


def test_the_site_flags_the_leaky_setup_on_the_board_and_lists_the_checks(
    conn: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    store_frames(conn, pm_check_frames(conn))
    setups = pm_tables(bank_runs()).pm_setups.with_columns(pl.col("setup_id").alias("setup"))
    store_frames(conn, {"pm_setups": setups})
    boards = {
        name: PUBLISHED_BY_NAME[name].frame(conn).to_dicts()
        for name in ("pm_setups", *PM_CHECK_TABLES)
    }
    releases, site = tmp_path / "releases", tmp_path / "site"
    release = write_release(
        releases, RELEASE_ID, synthetic_tables(6) | boards, created_at="2026-12-01T06:00:00Z"
    )
    build_site(release, site, releases)
    board = (site / "pm-suite.html").read_text("utf-8")
    rows = {name: row_of(board, name) for name in ("leaky", "honest")}
    assert "⚑ contamination check" in rows["leaky"]
    assert "⚑" not in rows["honest"]
    checks = (site / "pm-checks.html").read_text("utf-8")
    assert "⚑ flagged: far better on published cases" in row_of(checks, "leaky")
    assert "no significant gap" in row_of(checks, "honest")
    assert "0 of 8 tasks do now" in checks
    assert "-held" not in checks  # no private case id (they end in -held)
    method = (site / "methodology" / "pm-suite.html").read_text("utf-8")
    assert 'id="checks-on-the-suite"' in method and "../pm-checks.html" in method


def row_of(html: str, label: str) -> str:
    """The table row with a cell that starts with `label`."""
    rows = re.findall(r"<tr>.*?</tr>", html, flags=re.S)
    match = next((r for r in rows if re.search(rf"<td>{re.escape(label)}\b", r)), None)
    assert match, f"no row for {label}"
    return match
