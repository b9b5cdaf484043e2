"""Navigator cases that share a task are one task: its score is the mean over all its runs
(every input, every case of the task, every repeat), so the model's task count, its Index
and every pair's task count and p-value are those of the bank's distinct tasks."""

from __future__ import annotations

import shutil
from datetime import datetime
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.scores.load import navigator_frames
from bench_pipeline.scores.navigator import CATEGORY_WEIGHTS
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store

SHARED = "nav-coding-small-functions"
EXTRA_CASE = f'''
[[case]]
id = "{SHARED}-more"
task = "{SHARED}"
title = "Implement one more small pure function"
brief = """
Implement the Python 3 function described below. Reply with one fenced code block holding
the function and nothing else; use only the standard library.
"""

[[case.inputs]]
id = "double"
text = "`double(x: int) -> int`: twice x."
check = {{ kind = "unit_tests", entrypoint = "double", calls = [{{ args = [2], expect = 4 }}] }}
'''
RECORDED = datetime(2026, 6, 1, 9)
AS_OF = datetime(2026, 6, 2)
DEFAULTS = {"VARCHAR": "", "BOOLEAN": False, "INTEGER": 0, "BIGINT": 0, "DOUBLE": 0.0,
            "DATE": RECORDED.date(), "TIMESTAMP": RECORDED}  # fmt: skip


def _insert(conn: duckdb.DuckDBPyConnection, table: str, **values: object) -> None:
    """One row: the given values, every other NOT NULL column a plain default of its type."""
    columns = conn.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    row = {
        name: values.get(name, None if nullable == "YES" else DEFAULTS[kind])
        for name, kind, nullable in columns
    }
    unknown = set(values) - set(row)
    assert not unknown, f"{table} has no columns {unknown}"
    marks = ", ".join("?" for _ in row)
    conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", list(row.values()))


@pytest.fixture
def bank_and_conn(tmp_path: Path):
    tasks = tmp_path / "tasks"
    shutil.copytree(settings.REPO_ROOT / "tasks", tasks)
    with (tasks / "navigator" / "coding.toml").open("a", encoding="utf-8") as handle:
        handle.write(EXTRA_CASE)
    bank = load_bank(tasks)
    conn = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(conn, settings.migrations_dir())
    yield bank, conn
    conn.close()


def _store_runs(
    conn: duckdb.DuckDBPyConnection, bank, label: str, passes, simulated: bool = False
) -> None:
    """One graded run of setup `label` per input of every Navigator case, by a script."""
    _insert(conn, "setups", setup_id=label, label=label, company=label, current=True)
    for case in bank.suite("navigator"):
        for item in case.inputs:
            run_id = f"{label}/{case.id}/{item.id}"
            _insert(conn, "model_runs", run_id=run_id, setup_id=label, suite="navigator",
                    case_id=case.id, case_version=case.version, input_id=item.id,
                    cost_usd=1, recorded_at=RECORDED, simulated=simulated)  # fmt: skip
            _insert(conn, "grades", grade_id=run_id, run_id=run_id, suite="navigator",
                    case_id=case.id, input_id=item.id, question="check", tier=1,
                    grader_kind="script", grader="script:test",
                    outcome="pass" if passes(case) else "fail", graded_at=RECORDED)  # fmt: skip


def test_cases_sharing_a_task_are_scored_as_one_task(bank_and_conn) -> None:
    bank, conn = bank_and_conn
    cases = bank.suite("navigator")
    shared = [c for c in cases if c.task == SHARED]
    assert [c.id for c in shared] == [SHARED, f"{SHARED}-more"]
    tasks = {c.task for c in cases}
    assert len(tasks) == len(cases) - 1
    # A passes every input except those of the added case; B fails every input.
    _store_runs(conn, bank, "A", lambda case: case.id != f"{SHARED}-more")
    _store_runs(conn, bank, "B", lambda case: False, simulated=True)

    frames = navigator_frames(conn, bank, AS_OF)
    models = {row["model"]: row for row in frames["navigator_models"].iter_rows(named=True)}
    assert models["A"]["tasks"] == models["B"]["tasks"] == len(tasks)
    passed, failed = len(shared[0].inputs), len(shared[1].inputs)
    shared_score = Fraction(passed, passed + failed)  # the mean over the task's runs
    coding_tasks = len({c.task for c in cases if c.category == "coding"})
    coding = 100 * (coding_tasks - 1 + shared_score) / coding_tasks
    assert models["A"]["coding"] == pytest.approx(float(coding), abs=1e-9)
    expected_index = sum(CATEGORY_WEIGHTS.values()) - CATEGORY_WEIGHTS["coding"] * (
        1 - coding / 100
    )
    assert models["A"]["index"] == pytest.approx(float(expected_index), abs=1e-9)
    assert models["B"]["index"] == 0.0

    (pair,) = frames["navigator_pairs"].iter_rows(named=True)
    assert pair["n_tasks"] == len(tasks)
    # Every task favours A: only the observed signs and their mirror are as extreme.
    assert pair["p_value"] == 2 / 2 ** len(tasks)
    assert pair["better"] == "A"
    # B's runs are simulated, so the pair is too: the download says so itself.
    assert (models["A"]["simulated"], models["B"]["simulated"], pair["simulated"]) == (
        False,
        True,
        True,
    )
