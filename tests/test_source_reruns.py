"""A source's next run as `bench run` plans it (`fetch_sources`, then `cli/incremental`), when
the last one did not end in the live tables: a run killed after staging, and a rejected run an
operator accepted (`bench accept`). Either way the next fetch starts a new run, which must be
staged and judged, not skipped because its payload is the one an earlier run staged.

The project's own definitions and Dagster instance in a BENCH_HOME; a killed process is one
killed with SIGKILL.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pytest
from faults_pipeline import REPO_SNAPSHOTS, count_faults
from stages import bench_env

from bench_pipeline.cli.incremental import out_of_date
from bench_pipeline.cli.instance import prepare_dagster_home
from bench_pipeline.core.warehouse import connect
from bench_pipeline.definitions import FETCH_JOB, PIPELINE_JOBS, build_definitions
from bench_pipeline.ingest.acceptance import accept_run

pytestmark = [pytest.mark.faults, pytest.mark.integration]
PREPARE = PIPELINE_JOBS[0][0]  # the job `bench run` materialises the sources' stages in


def _keys(source: str) -> tuple[dg.AssetKey, set[dg.AssetKey]]:
    """The source's raw asset, and the three below it."""
    below = {dg.AssetKey([source, stage]) for stage in ("staging", "validated", "live")}
    return dg.AssetKey([source, "raw"]), below


KILLED_AFTER_STAGING = textwrap.dedent(
    """
    import os, signal, sys
    import dagster as dg
    from bench_pipeline.cli.instance import prepare_dagster_home
    from bench_pipeline.definitions import build_definitions

    prepare_dagster_home()
    job = build_definitions("recorded").resolve_implicit_global_asset_job_def()
    keys = {dg.AssetKey([sys.argv[1], "raw"]), dg.AssetKey([sys.argv[1], "staging"])}
    result = job.get_subset(asset_selection=keys).execute_in_process(
        instance=dg.DagsterInstance.get()
    )
    assert result.success
    os.kill(os.getpid(), signal.SIGKILL)  # dies before validation: the run stays pending
    """
)


def _execute(instance, job_name: str, keys: set) -> None:
    job = build_definitions("recorded").resolve_job_def(job_name).get_subset(asset_selection=keys)
    assert job.execute_in_process(instance=instance, raise_on_error=False).success


def _fetch_and_plan(instance, database: Path, source: str) -> dict[dg.AssetKey, str]:
    """The source fetched, then what the planner finds out of date below it."""
    raw, below = _keys(source)
    _execute(instance, FETCH_JOB, {raw})
    with connect(database) as conn:
        return out_of_date(build_definitions("recorded"), instance, conn, below).reasons


def _runs(database: Path, source: str) -> list[tuple[str, str, str | None]]:
    with connect(database) as conn:
        return conn.execute(
            "SELECT run_id, status, reason FROM source_runs WHERE source = ? ORDER BY finished_at",
            [source],
        ).fetchall()


def _live(database: Path, table: str) -> tuple[int, str]:
    with connect(database) as conn:
        return conn.execute(f"SELECT count(*), any_value(source_run_id) FROM {table}").fetchone()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A BENCH_HOME with its own snapshots folder, this process pointed at both."""
    home, snapshots = tmp_path / "home", tmp_path / "snapshots"
    shutil.copytree(REPO_SNAPSHOTS, snapshots)
    for name, value in bench_env(home, snapshots).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return home


@pytest.mark.timeout(600)
def test_a_run_killed_after_staging_is_closed_and_the_next_run_stages_its_own(home: Path) -> None:
    source, table = "arena", "arena_ratings"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_STAGING, source],
        env=bench_env(home, home.parent / "snapshots"), capture_output=True,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    database = home / "warehouse" / "bench.duckdb"
    with connect(database) as conn:
        (dead,) = conn.execute(
            "SELECT run_id FROM source_run_claims WHERE source = ?", [source]
        ).fetchone()
    assert _runs(database, source) == []  # killed before any stage recorded it

    prepare_dagster_home()  # the instance the killed process used
    with dg.DagsterInstance.get() as instance:
        plan = _fetch_and_plan(instance, database, source)
        staging = dg.AssetKey([source, "staging"])
        assert plan.get(staging) == f"{source}/raw changed", plan
        _execute(instance, PREPARE, set(plan))

        runs = _runs(database, source)
        assert [(run_id, status) for run_id, status, _ in runs] == [
            (dead, "rejected"),
            (runs[1][0], "accepted"),
        ], runs
        assert runs[0][2].startswith("abandoned: the process that ran it"), runs[0]
        count, held_by = _live(database, table)
        assert count > 0 and held_by == runs[1][0] != dead

        # the same payload again is the live one: nothing below the fetch is out of date
        assert _fetch_and_plan(instance, database, source) == {}
    count_faults(1)


@pytest.mark.timeout(600)
def test_an_accepted_rejection_is_staged_again_and_published_by_the_next_run(home: Path) -> None:
    """A genuine shrink fails the sanity check; once an operator accepts the rejected run,
    the next fetch of the same payload must be judged against it and published."""
    source = table = "openrouter_models"
    database = home / "warehouse" / "bench.duckdb"
    prepare_dagster_home()
    with dg.DagsterInstance.get() as instance:
        raw, below = _keys(source)
        _execute(instance, PREPARE, {raw, *below})
        before, first = _live(database, table)

        listing = home.parent / "snapshots" / source / "models.json"
        document = json.loads(listing.read_text())
        document["data"] = document["data"][: len(document["data"]) * 2 // 5]
        listing.write_text(json.dumps(document))
        _execute(instance, PREPARE, set(_fetch_and_plan(instance, database, source)))
        rejected, status, reason = _runs(database, source)[-1]
        assert status == "rejected" and "fewer than" in reason, reason
        assert _live(database, table) == (before, first)

        with connect(database) as conn:
            accept_run(conn, rejected, "an operator", "the provider delisted these models")
        plan = _fetch_and_plan(instance, database, source)
        assert plan.get(dg.AssetKey([source, "staging"])) == f"{source}/raw changed", plan
        _execute(instance, PREPARE, set(plan))
        run_id, status, reason = _runs(database, source)[-1]
        assert status == "accepted" and run_id != rejected, (run_id, status, reason)
        assert _live(database, table) == (len(document["data"]), run_id)
    count_faults(1)
