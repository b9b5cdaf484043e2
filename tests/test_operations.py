"""Operator tools on a real warehouse: the run-failure log (once per run), clearing a flag as
a recorded action, a board rebuilt as of a past date, and `bench status`."""

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from stages import simulated_runs

from bench_pipeline.cli.operations import board_as_of, clear_flag
from bench_pipeline.cli.status import FailingCheck, print_status
from bench_pipeline.core.warehouse import connect
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
from bench_pipeline.sensors.failures import record_failure
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def test_a_failed_run_is_logged_once(tmp_path: Path) -> None:
    database = tmp_path / "bench.duckdb"
    simulated_runs(database, suites=())
    with connect(database) as conn:
        assert record_failure(conn, "run-1", "prepare_inputs", "step\n  failed:  boom", NOW)
        assert not record_failure(conn, "run-1", "prepare_inputs", "again", NOW)
        rows = conn.execute("SELECT dagster_run_id, message FROM run_failure_log").fetchall()
        out = io.StringIO()
        failing = [FailingCheck("grading/reviews:calibration_gate", "ERROR", "needs pairs")]
        print_status(conn, failing, out, definitions={}, cadence={}, now=NOW)
    assert rows == [("run-1", "step failed: boom")]
    text = out.getvalue()
    assert "prepare_inputs" in text and "calibration_gate (ERROR): needs pairs" in text
    assert "0 reviews by people (and 0 practice reviews of simulated runs, kept apart)" in text


def test_clearing_is_a_recorded_action_with_its_reasons(tmp_path: Path) -> None:
    database = tmp_path / "bench.duckdb"
    simulated_runs(database, suites=())
    with connect(database) as conn:
        conn.execute(
            "INSERT INTO submitted_runs (run_id, file_name, use_case, use_case_version, "
            "model_name, model_settings, run_group, harness, started_at, run_date, "
            "prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens, "
            "reasoning_tokens, requests_known, cost_warnings, wall_time_seconds, step_ins, "
            "turns, retries, first_try, outcome, criteria, evidence_log, evidence_sha256, "
            "evidence_matches, output, received_at) VALUES ('sub-0123456789abcdef', 'a.json', "
            "'uc-csv-dedupe', 'x', 'm', '{}', 'm', 'h', ?, ?, 1, 1, 0, 0, 0, false, '', 1.0, "
            "0, 1, 0, true, 'success', '{}', 'log', 'abc', true, 'out', ?)",
            [NOW.replace(tzinfo=None), NOW.date(), NOW.replace(tzinfo=None)],
        )
        with pytest.raises(ValueError, match="not a hard flag"):
            clear_flag(conn, "sub-0123456789abcdef", "looks_odd", "Ada", "checked")
        with pytest.raises(ValueError, match="a name and a reason"):
            clear_flag(conn, "sub-0123456789abcdef", "cost_mismatch", "Ada", " ")
        with pytest.raises(ValueError, match="no submitted run"):
            clear_flag(conn, "sub-ffffffffffffffff", "cost_mismatch", "Ada", "checked")
        clear_flag(conn, "sub-0123456789abcdef", "cost_mismatch", "Ada", "billing export", NOW)
        with pytest.raises(ValueError, match="already cleared"):
            clear_flag(conn, "sub-0123456789abcdef", "cost_mismatch", "Ada", "again")
        rows = conn.execute("SELECT run_id, flag, cleared_by, reason FROM clearances").fetchall()
    assert rows == [("sub-0123456789abcdef", "cost_mismatch", "Ada", "billing export")]


def test_a_board_as_of_a_past_date_sees_only_what_existed_then(tmp_path: Path) -> None:
    import asyncio

    from bench_pipeline.grading.browser_offline import RecordedInspector
    from bench_pipeline.grading.cycle import grade_runs
    from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
    from bench_pipeline.grading.sandbox import OfflineSandbox
    from bench_pipeline.grading.store import runs_to_grade, store_cycle

    database = tmp_path / "bench.duckdb"
    simulated_runs(database, suites=("navigator",))
    bank = load_bank()
    later = datetime.now(UTC) + timedelta(days=1)
    with connect(database) as conn:
        before = board_as_of(conn, bank, "navigator", datetime.now(UTC) - timedelta(days=1))
        runs = runs_to_grade(conn, bank)
        result = asyncio.run(grade_runs(
            runs, SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL, ["OpenAI"], "c1",
            rates={}, now=later, screenshots=tmp_path,
            inspector=RecordedInspector(tmp_path / "browser"),
            sandbox=OfflineSandbox({})))  # fmt: skip
        store_cycle(conn, "c1", result, later)
        today = board_as_of(conn, bank, "navigator", datetime.now(UTC))
        tomorrow = board_as_of(conn, bank, "navigator", later + timedelta(seconds=1))
    assert before["navigator_models"].height == 0  # no run existed yet
    assert today["navigator_models"].height == 0  # runs, but graded only "tomorrow"
    assert tomorrow["navigator_models"].height == 9  # every executable setup, once graded
    with pytest.raises(ValueError, match="board must be one of"):
        board_as_of(None, bank, "elo", NOW)
