"""A source run whose process was killed after staging, then the next `bench run` of the
same payload: the planner must stage the new run, not hand the dead run's staged output (whose
files the next fetch removes when it closes the run as abandoned) to validation.

The first process is the project's own definitions and instance in a BENCH_HOME, killed with
SIGKILL right after `raw` and `staging` materialised; the second plans as `bench run` does
(`fetch_sources`, then `cli/incremental.out_of_date`) and executes the plan.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pytest
from faults_pipeline import count_faults
from stages import bench_env

from bench_pipeline.cli.incremental import out_of_date
from bench_pipeline.cli.instance import prepare_dagster_home
from bench_pipeline.core.warehouse import connect
from bench_pipeline.definitions import FETCH_JOB, PIPELINE_JOBS, build_definitions

pytestmark = [pytest.mark.faults, pytest.mark.integration]
SOURCE, TABLE = "arena", "arena_ratings"
RAW, STAGING = dg.AssetKey([SOURCE, "raw"]), dg.AssetKey([SOURCE, "staging"])
BELOW_RAW = {STAGING, dg.AssetKey([SOURCE, "validated"]), dg.AssetKey([SOURCE, "live"])}

KILLED_AFTER_STAGING = textwrap.dedent(
    f"""
    import os, signal
    import dagster as dg
    from bench_pipeline.cli.instance import prepare_dagster_home
    from bench_pipeline.definitions import build_definitions

    prepare_dagster_home()
    job = build_definitions("recorded").resolve_implicit_global_asset_job_def()
    keys = {{dg.AssetKey({list(RAW.path)}), dg.AssetKey({list(STAGING.path)})}}
    result = job.get_subset(asset_selection=keys).execute_in_process(
        instance=dg.DagsterInstance.get()
    )
    assert result.success
    os.kill(os.getpid(), signal.SIGKILL)  # dies before validation: the run stays pending
    """
)


def _execute(definitions: dg.Definitions, instance, job_name: str, keys: set) -> None:
    job = definitions.resolve_job_def(job_name).get_subset(asset_selection=keys)
    assert job.execute_in_process(instance=instance, raise_on_error=False).success


def _runs(database: Path) -> list[tuple[str, str, str | None]]:
    with connect(database) as conn:
        return conn.execute(
            "SELECT run_id, status, reason FROM source_runs WHERE source = ? ORDER BY finished_at",
            [SOURCE],
        ).fetchall()


@pytest.mark.timeout(600)
def test_a_run_killed_after_staging_is_closed_and_the_next_run_stages_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_STAGING], env=bench_env(home), capture_output=True
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    database = home / "warehouse" / "bench.duckdb"
    with connect(database) as conn:
        (dead,) = conn.execute(
            "SELECT run_id FROM source_run_claims WHERE source = ?", [SOURCE]
        ).fetchone()
    assert _runs(database) == []  # killed before any stage recorded it

    for name, value in bench_env(home).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    prepare_dagster_home()  # the same instance the killed process used
    definitions = build_definitions("recorded")
    with dg.DagsterInstance.get() as instance:
        _execute(definitions, instance, FETCH_JOB, {RAW})
        with connect(database) as conn:
            plan = out_of_date(definitions, instance, conn, BELOW_RAW)
        assert plan.reasons.get(STAGING) == f"{SOURCE}/raw changed", plan.reasons
        _execute(definitions, instance, PIPELINE_JOBS[0][0], plan.keys)  # as `bench run` does

        runs = _runs(database)
        assert [(run_id, status) for run_id, status, _ in runs] == [
            (dead, "rejected"),
            (runs[1][0], "accepted"),
        ], runs
        assert runs[0][2].startswith("abandoned: the process that ran it"), runs[0]
        assert runs[1][0] != dead
        with connect(database) as conn:
            live = conn.execute(f"SELECT count(*), any_value(source_run_id) FROM {TABLE}")
            count, held_by = live.fetchone()
        assert count > 0 and held_by == runs[1][0]

        # the same payload again is the live one: nothing below the fetch is out of date
        _execute(definitions, instance, FETCH_JOB, {RAW})
        with connect(database) as conn:
            assert out_of_date(definitions, instance, conn, BELOW_RAW).reasons == {}
    count_faults(1)
