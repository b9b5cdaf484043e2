"""`bench status` as an operator runs it: on an empty home it says nothing has run and creates
nothing; after a run that failed before its checks it still answers, naming each failing check
with its reason; it reports the release, the site and every source against its cadence; while a
`bench run` holds the warehouse it answers at once from the last completed run."""

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest
from stages import bench_env

from bench_pipeline.cli.instance import INSTANCE_CONFIG
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.ingest.catalog import source_definitions

pytestmark = pytest.mark.integration
REASON = "needs at least 10 judge-person pairs on real runs; has 1"


def bench_status(home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench_pipeline.cli", "status"],
        env=bench_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_an_empty_home_is_reported_and_left_empty(tmp_path: Path) -> None:
    result = bench_status(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "nothing has run yet" in result.stdout
    assert list(tmp_path.iterdir()) == [], "bench status created files in an empty home"
    assert "Warning" not in result.stderr and "Traceback" not in result.stderr


def _runs_with_a_failed_step(dagster_home: Path) -> None:
    """In the home's instance: `grading/reviews` evaluated once with its blocking gate failing,
    then a run whose `grading/reviews` step raised, so the gate was planned and never ran."""
    fail_step = {"now": False}

    @dg.asset(key=["grading", "reviews"])
    def reviews() -> None:
        if fail_step["now"]:
            raise RuntimeError("the warehouse went away")

    @dg.asset_check(asset=reviews, name="calibration_gate", blocking=True)
    def gate() -> dg.AssetCheckResult:
        return dg.AssetCheckResult(passed=False, description=REASON)

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        gated = dg.materialize([reviews, gate], instance=instance, raise_on_error=False)
        assert [e.passed for e in gated.get_asset_check_evaluations()] == [False]
        fail_step["now"] = True
        failed = dg.materialize([reviews, gate], instance=instance, raise_on_error=False)
        assert [e.step_key for e in failed.get_step_failure_events()] == ["grading__reviews"]
        assert failed.get_asset_check_evaluations() == []


def test_status_after_a_failed_run_names_failing_checks_and_sources(tmp_path: Path) -> None:
    with connect(tmp_path / "warehouse" / "bench.duckdb") as conn:
        migrate(conn, settings.migrations_dir())
    dagster_home = tmp_path / "build" / "dagster"
    dagster_home.mkdir(parents=True)
    (dagster_home / "dagster.yaml").write_text(INSTANCE_CONFIG)
    _runs_with_a_failed_step(dagster_home)

    result = bench_status(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr, result.stderr
    out = result.stdout
    assert f"grading/reviews:calibration_gate (ERROR): {REASON}" in out
    assert "Latest release: none yet" in out and "Site: not built yet" in out
    for source in source_definitions():
        assert f"  {source} " in out and "never run" in out, source


HOLD_THE_HOME = """
import sys, time
from pathlib import Path
from bench_pipeline.cli.run_lock import exclusive_run
from bench_pipeline.core.warehouse import connect
home = Path(sys.argv[1])
with exclusive_run(home), connect(home / "warehouse" / "bench.duckdb"):
    print("holding", flush=True)
    time.sleep(600)
"""


@contextmanager
def holding(home: Path) -> Iterator[subprocess.Popen]:
    """A process holding the home's run lock and its warehouse, as a running `bench run`."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_HOME, str(home)],
        env=bench_env(home), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_status_during_a_run_answers_at_once_from_the_last_completed_run(tmp_path: Path) -> None:
    """A running `bench run` holds the warehouse until it ends (minutes at scale): `bench
    status` must not wait for it, and reports the analyst copy the last run left, saying so;
    a command that needs the warehouse refuses at once instead of failing a minute later."""
    warehouse = tmp_path / "warehouse" / "bench.duckdb"
    with connect(warehouse) as conn:
        migrate(conn, settings.migrations_dir())
    copy = tmp_path / "build" / "warehouse" / "bench.duckdb"
    copy.parent.mkdir(parents=True)
    with connect(copy) as conn:  # the last completed run's copy: one accepted arena run
        migrate(conn, settings.migrations_dir())
        conn.execute(
            "INSERT INTO source_runs (source, run_id, mode, started_at, finished_at, status, "
            "rows_valid, rows_quarantined, previous_rows, reason, content_sha256) "
            "VALUES ('arena', 'arena-0123456789ab-1', 'recorded', "
            "now()::TIMESTAMP, now()::TIMESTAMP, 'accepted', 5, 0, NULL, NULL, NULL)"
        )
    with holding(tmp_path) as holder:
        result = bench_status(tmp_path)
        splits = subprocess.run(
            [sys.executable, "-m", "bench_pipeline.cli", "splits"],
            env=bench_env(tmp_path), capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert holder.poll() is None, "the holder ended before the commands answered"
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"A `bench run` is running (pid {holder.pid} on " in out and ", started " in out
    assert f"As of the last completed run (the analyst copy {copy})" in out
    assert "  arena                 last run accepted" in out
    assert "Traceback" not in result.stderr
    # a command that needs the warehouse itself refuses at once, naming the run
    assert splits.returncode == 3, splits.stdout + splits.stderr
    assert f"bench splits refused: a `bench run` (pid {holder.pid} on " in splits.stdout
    assert ", started " in splits.stdout


def test_status_during_a_run_says_so_when_the_analyst_copy_is_unreadable(tmp_path: Path) -> None:
    copy = tmp_path / "build" / "warehouse" / "bench.duckdb"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(b"not a database, or one of a schema this code cannot read")
    with holding(tmp_path):
        result = bench_status(tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"The analyst copy {copy} could not be read (" in result.stdout
    assert "Traceback" not in result.stderr


def test_status_judges_the_date_of_the_data_not_of_the_fetch(warehouse) -> None:
    """The recorded captures, fetched a moment ago, hold data months old: each source is STALE
    with the date its payload states; a payload stating no date is UNDATED, with the reason.
    STALE is a warning: `bench status` still exits 0."""
    for source in ("epoch", "swebench"):
        assert warehouse.ingest(source).status == "accepted"
    catalogue = {
        p.name: p.read_bytes()
        for p in (settings.REPO_ROOT / "sources" / "snapshots" / "arena").iterdir()
        if p.suffix == ".json"
    }
    assert warehouse.ingest("arena", files=catalogue).status == "accepted"
    home = warehouse.path.parent.parent
    result = bench_status(home)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    epoch = re.search(r"  epoch +last run accepted [^\n]*", out)
    assert epoch, out
    assert re.search(
        r"data as of 2026-04-15, read \d+ min ago, every 24 h: "
        r"STALE \(data \d+ days old, allowed 3 days\); 32 quarantined",
        epoch.group(0),
    ), epoch.group(0)
    assert re.search(r"  swebench +last run accepted .*data as of 2025-12-09, .*: STALE \(", out)
    assert re.search(r"  arena +last run accepted .*data as of not stated, .*: UNDATED \(", out)
    assert "data date: no publication date stated in the payload" in out
    assert ": fresh" not in out


def _damaged(name: str, content: bytes) -> bytes:
    """A real warehouse file damaged as a disk or a person could damage it."""
    if name == "truncated":
        return content[: len(content) // 2]
    if name == "garbage in a block":  # the first block after the headers: the catalogue's
        return content[:4096] + bytes(range(256)) * 16 + content[8192:]
    return b"\x00not a warehouse\xff" * 1000  # overwritten


@pytest.mark.parametrize("damage", ["truncated", "garbage in a block", "overwritten"])
def test_status_reports_a_warehouse_it_cannot_read(tmp_path: Path, damage: str) -> None:
    """`bench status` on a damaged warehouse said nothing (a traceback on stderr): now one
    line naming the file and the error, and a non-zero exit."""
    home = tmp_path / "home"
    path = home / "warehouse" / "bench.duckdb"
    with connect(path) as conn:
        migrate(conn, settings.migrations_dir())
        conn.execute(
            "CREATE TABLE filler AS SELECT range AS i, md5(range::TEXT) AS t FROM range(50000)"
        )
    path.write_bytes(_damaged(damage, path.read_bytes()))
    result = bench_status(home)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    assert lines[0].startswith(f"The warehouse {path} cannot be read (")
