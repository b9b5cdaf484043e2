"""`bench review` in a real terminal (pexpect) against a hostile output: escape sequences in
the output never reach the reviewer's terminal, and a pasted multi-line answer stays in its
own field instead of answering the questions after it."""

from __future__ import annotations

import os
import sys
from datetime import date, datetime
from pathlib import Path

import duckdb
import pexpect
import pytest

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.integration
BENCH = str(Path(sys.executable).with_name("bench"))
RUN_ID = "r0123456789abcdef"
HOSTILE = (
    "Here is the update.\x1b[2J\x1b[H\x1b]0;pwned title\x07\x1b[31;1mRED\x1b[0m "
    "\x1b[8mhidden\x1b[28m \x1b[10A\x1b[5Bmoved \x9b2J\r\x1b[Koverwritten "
    "\x1bP+q544e\x1b\\ \u202eevil\u202c \x07\x08 Signed, Cl\u200baude-Opus-4.6 by \u0410nthropic."
)


def _warehouse(home: Path) -> Path:
    """A warehouse holding one PM run whose output is `HOSTILE`."""
    database = home / "warehouse" / "bench.duckdb"
    database.parent.mkdir(parents=True)
    case = load_bank().get("pm", "pm-delay-update")
    now = datetime(2026, 11, 30, 12, 0)
    with connect(database) as conn:
        migrate(conn, settings.migrations_dir())
        conn.execute(
            "INSERT INTO setups (setup_id, label, model_record, api_id, company, "
            "context_limit, local, harness, environment, executable, current, first_loaded) "
            "VALUES ('s1', 'Claude Opus (api)', 'claude-opus', 'anthropic/claude-opus-4.6', "
            "'Anthropic', 200000, false, 'plain-api', 'api', true, true, ?)",
            [now],
        )
        conn.execute(
            "INSERT INTO model_runs (run_id, partition_key, setup_id, suite, case_id, "
            "case_version, input_id, repeat, run_date, request_hash, output, cost_warnings, "
            "wall_seconds, retries, provider, simulated, evidence_sha256, recorded_at) "
            "VALUES (?, 'p', 's1', 'pm', ?, ?, 'main', 0, ?, 'h', ?, '', 1.0, 0, 'test', "
            "false, 'e', ?)",
            [RUN_ID, case.id, case.version, date(2026, 11, 30), HOSTILE, now],
        )
    return database


def test_a_hostile_output_and_a_pasted_answer(tmp_path: Path) -> None:
    database = _warehouse(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env["BENCH_HOME"] = str(tmp_path)
    child = pexpect.spawn(
        BENCH, ["review", "--reviewer", "Ada Reviewer"], env=env, encoding="utf-8",
        timeout=60, dimensions=(50, 200),
    )  # fmt: skip
    child.expect("1 outputs wait for a blind review by Ada Reviewer")
    child.expect("Score 1-5")
    screen = child.before
    assert "THE OUTPUT" in screen and "Here is the update." in screen
    # Not one control sequence of the output reached the terminal.
    assert not any(c in screen for c in "\x1b\x9b\x07\x08\x90\u202e\u200b"), repr(screen)
    assert "RED" in screen and "overwritten" in screen  # the text itself is shown
    assert "Claude" not in screen and "Anthropic" not in screen
    assert screen.count("[redacted]") == 2

    # A score with a paste after it: the rest is discarded, not taken as the next answer.
    child.send("4\nThis paste must not answer the next question.\n")
    child.expect("What did it understand\\? \\(end with a line holding only \\.\\)")
    # A pasted multi-line answer, holding lines that look like answers to later questions.
    child.send("The date slipped.\n\nCustomers need a new date.\n5\ny\n.\n")
    child.expect("What did it miss")
    child.sendline("The workaround.")
    child.sendline(".")
    child.expect("decisive reason")
    child.sendline("Clear, but no workaround.\n.")
    index = child.expect(["Critical failure committed", "Submit\\?"])
    if index == 0:
        child.sendline("")
        child.expect("Submit\\?")
    child.sendline("y")
    child.expect("Stored review (rv[0-9a-f]{16})")
    child.expect("Done: 1 reviews stored")
    child.expect(pexpect.EOF)

    with duckdb.connect(str(database), read_only=True) as conn:
        stored = conn.execute(
            "SELECT score, understood, missed, decisive_reason FROM reviews WHERE run_id = ?",
            [RUN_ID],
        ).fetchall()
        output = conn.execute("SELECT output FROM model_runs").fetchall()
    assert stored == [
        (4, "The date slipped.\n\nCustomers need a new date.\n5\ny", "The workaround.",
         "Clear, but no workaround."),
    ]  # fmt: skip
    assert output == [(HOSTILE,)]  # the stored output keeps its exact bytes


def test_bench_status_prints_no_control_sequences(tmp_path: Path, monkeypatch) -> None:
    import io

    from bench_pipeline.cli.main import status

    database = _warehouse(tmp_path)
    with connect(database) as conn:
        conn.execute(
            "INSERT INTO run_failure_log VALUES ('run-1', 'all_assets', ?, ?)",
            [datetime(2026, 11, 30, 12, 0), "step failed: \x1b[2J\x1b]0;pwned\x07model said hi"],
        )
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    (tmp_path / "dagster").mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    out = io.StringIO()
    assert status(out) == 0
    printed = out.getvalue()
    assert "step failed: model said hi" in printed
    assert not any(c in printed for c in "\x1b\x07\x9b")
