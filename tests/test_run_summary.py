"""`bench run`'s end report: every source's outcome in this run (a rejected run counted even
when it began in an earlier, dead run), what to fix first on failure, times, and money at the
site's rounding. Real warehouse, real Epoch snapshot; the whole command is in
`test_operator_run.py`."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from bench_pipeline.cli.summary import Failure, duration, failure_lines, source_lines, time_lines
from bench_pipeline.ingest import engine
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.resources.sources import RecordedSnapshotClient
from bench_pipeline.site.markup import usd

pytestmark = pytest.mark.unit

REPO_SNAPSHOTS = Path(__file__).resolve().parent.parent / "sources" / "snapshots"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_rejected_epoch_run_is_counted_in_the_summary(warehouse) -> None:
    """A `bench run` died after fetching Epoch, before staging it. The next one closes that
    run as rejected (abandoned) while fetching Epoch again: the rejection is an outcome of this
    run, though the rejected run began before it."""
    definition = source_definitions()["epoch"]
    client = RecordedSnapshotClient(snapshots_dir=str(REPO_SNAPSHOTS))
    with warehouse.connect() as conn:
        left = engine.fetch_and_store(
            conn, definition, lambda: client.fetch(definition), warehouse.raw_root, client.mode
        )
        conn.execute(
            "UPDATE source_run_claims SET pid = ? WHERE run_id = ?", [_dead_pid(), left.run_id]
        )
    started = datetime.now(UTC)
    accepted = warehouse.ingest("epoch")
    assert accepted.status == "accepted"

    with warehouse.connect() as conn:
        lines = source_lines(conn, started, ["epoch", "swebench"])

    assert lines[0] == "Sources: 1 accepted, 1 rejected, 0 unchanged, 1 not reached", lines
    epoch = [line for line in lines if line.startswith("  epoch ")]
    assert len(epoch) == 2
    assert re.match(r"  epoch +rejected +abandoned: the process that ran it \(pid \d+", epoch[0])
    assert re.match(r"  epoch +accepted +\d+ rows, \d+ quarantined", epoch[1])
    assert lines[-1] == "  not reached (the run stopped before them): swebench"


def test_a_failure_leads_with_the_step_the_file_and_the_field(tmp_path: Path) -> None:
    log = tmp_path / "bench-run.log"
    failure = Failure(
        "prepare_inputs",
        "run-1",
        "runs__task_bank",
        "bench_pipeline.taskbank.bank.TaskBankError: the task bank does not load (1 problems):\n"
        "  tasks/pm/x.toml: measures (case x): Input should be 'model' or 'system'\n"
        "check fresh: openrouter_models: STALE",
        file="tasks/pm/x.toml",
        field="measures",
    )
    lines = failure_lines(failure, "bench run --sources live", log)
    assert lines[:4] == [
        "FAILED at step runs__task_bank: TaskBankError: the task bank does not load (1 problems):",
        "  (job prepare_inputs, Dagster run run-1)",
        "  file:   tasks/pm/x.toml",
        "  field:  measures",
    ]
    assert "  check fresh: openrouter_models: STALE" in lines
    assert "  fix:    correct that, then run `bench run --sources live` again" in lines
    assert f"  log:    {log} (Dagster's log of this run, with the stacks)" in lines
    # An error naming no file still leads with the step and the error.
    bare = failure_lines(Failure("j", "r", "s", "OSError: disk"), "bench run", None)
    assert bare[0] == "FAILED at step s: OSError: disk" and not any("file:" in x for x in bare)


def test_times_and_money_as_a_person_reads_them() -> None:
    started = datetime(2026, 12, 6, 12, tzinfo=UTC)
    steps = {"a": 0.42, "b": 75.4, "c": 3.0, "d": 12.25}
    (line,) = time_lines(started, started + timedelta(seconds=131.6), steps)
    assert line == "Time: 2 min 12 s in all (4 steps); slowest: b 1 min 15 s, d 12.2 s, c 3.0 s"
    assert duration(0.04) == "0.0 s"
    # the cost the issue saw printed as $44.27751158: the site's rounding
    assert usd(Decimal("44.27751158")) == "$44.28"


def test_an_error_naming_its_input_gives_the_file_record_and_field(tmp_path: Path) -> None:
    """What a failed step's metadata carries for the summary (`assets.metadata.where_to_fix`)."""
    from bench_pipeline.assets.metadata import where_to_fix
    from bench_pipeline.taskbank.setups import SetupError, load_setups

    (tmp_path / "models.toml").write_text(
        '[[model]]\nid = "m"\napi_id = "x/m"\ncompany = "X"\ncontext_limit = -1\n'
        "pricing_date = 2026-01-01\n"
    )
    (tmp_path / "harnesses.toml").write_text('[[harness]]\nid = "h"\nenvironment = "api"\n')
    with pytest.raises(SetupError) as caught:
        load_setups(tmp_path)
    assert where_to_fix(caught.value) == {
        "file": str(tmp_path / "models.toml"),
        "field": "context_limit",
        "record": "model[0] (m)",
    }
    assert where_to_fix(ValueError("no place named")) is None
