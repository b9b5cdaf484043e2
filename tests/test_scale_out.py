"""The scale-out deployment in `deploy/`, run for real against throwaway servers.

(a) The ingestion assets materialised against the Dagster instance of
    `deploy/postgres/dagster.yaml`: the run and its events land in PostgreSQL (read back
    with plain SQL), the rows land in DuckDB.
(b) Jobs under dagster-celery's executor, submitted with `dagster job execute` and
    `deploy/celery/celery.yaml` as run config, on a real Redis broker and two workers started
    with `dagster-celery worker start`, all sharing that Postgres instance: both workers
    execute steps, and every event reaches Postgres. The workloads are in `celery_job.py`:
    one run of independent assets, and concurrent runs of a partitioned asset.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import celery_job
import dagster as dg
import duckdb
import pytest
from conftest import LIVE_TABLES
from servers import Postgres, Reaper, Redis, postgres_server, reaper, redis_server  # noqa: F401

from bench_pipeline import settings
from bench_pipeline.definitions import build_definitions
from bench_pipeline.ingest.catalog import source_definitions

pytestmark = pytest.mark.integration

DEPLOY = settings.REPO_ROOT / "deploy"
STAGES = ("raw", "staging", "validated", "live")
WORKER_LABELS = ("a", "b")
WORKER_START_SECONDS = 90
SUBMIT_SECONDS = 120
BATCH_TAG = "bench/test_batch"
EVENT = dg.DagsterEventType


@pytest.fixture(scope="module")
def postgres_home(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_server: Postgres,  # noqa: F811
) -> Iterator[Path]:
    """A DAGSTER_HOME holding the committed `deploy/postgres/dagster.yaml`, with DAGSTER_HOME
    and the DAGSTER_PG_* variables pointing at it and the throwaway cluster (for this module)."""
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copy(DEPLOY / "postgres" / "dagster.yaml", home / "dagster.yaml")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in postgres_server.env().items():
            patch.setenv(name, value)
        patch.setenv("DAGSTER_HOME", str(home))
        yield home


def postgres_rows(server: Postgres, sql: str, params: list | None = None) -> list[tuple]:
    with contextlib.closing(server.connect()) as conn, conn.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.fetchall()


# --- (a) ingestion on the Postgres instance --------------------------------------------------


def test_ingestion_records_runs_and_events_in_postgres(
    tmp_path: Path,
    postgres_home: Path,
    postgres_server: Postgres,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dagster_postgres import (
        PostgresEventLogStorage,
        PostgresRunStorage,
        PostgresScheduleStorage,
    )

    bench_home = tmp_path / "bench_home"
    monkeypatch.setenv("BENCH_HOME", str(bench_home))
    monkeypatch.delenv("BENCH_SNAPSHOTS", raising=False)
    keys = [dg.AssetKey([source, stage]) for source in source_definitions() for stage in STAGES]
    job = build_definitions("recorded").resolve_implicit_global_asset_job_def()

    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        result = job.execute_in_process(
            instance=instance,
            asset_selection=keys,
            raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
    assert result.success
    run_id = result.run_id

    # Read straight from PostgreSQL, not through Dagster.
    assert postgres_rows(
        postgres_server, "SELECT status FROM runs WHERE run_id = %s", [run_id]
    ) == [("SUCCESS",)]
    materialised = postgres_rows(
        postgres_server,
        "SELECT asset_key FROM event_logs WHERE run_id = %s AND dagster_event_type = %s",
        [run_id, EVENT.ASSET_MATERIALIZATION.value],
    )
    assert sorted(tuple(json.loads(key)) for (key,) in materialised) == sorted(
        tuple(key.path) for key in keys
    )
    kinds = dict(
        postgres_rows(
            postgres_server,
            "SELECT dagster_event_type, count(*) FROM event_logs WHERE run_id = %s "
            "GROUP BY dagster_event_type",
            [run_id],
        )
    )
    # Event types as stored (the run's own events keep their old PIPELINE_* names).
    assert kinds[EVENT.RUN_SUCCESS.value] == 1
    assert kinds[EVENT.STEP_SUCCESS.value] >= len(keys)  # the asset checks are steps too
    assert EVENT.STEP_FAILURE.value not in kinds
    # The asset index (event-log storage) and the schedule storage's tables are there too.
    indexed = {k for (k,) in postgres_rows(postgres_server, "SELECT asset_key FROM asset_keys")}
    assert {key.to_string() for key in keys} <= indexed
    tables = {
        t
        for (t,) in postgres_rows(
            postgres_server,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
        )
    }
    assert {"runs", "event_logs", "jobs", "job_ticks"} <= tables

    with contextlib.closing(
        duckdb.connect(str(bench_home / "warehouse" / "bench.duckdb"), read_only=True)
    ) as conn:
        for table in LIVE_TABLES:
            assert conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] > 0, table
        statuses = conn.execute("SELECT source, status FROM source_runs").fetchall()
    assert sorted(statuses) == sorted((source, "accepted") for source in source_definitions())


# --- (b) steps on two Celery workers ----------------------------------------------------------


@dataclass
class Workers:
    names: dict[str, str]  # label → Celery node name ("bench-a@host")
    env: dict[str, str]
    logs: dict[str, Path]

    def log_text(self) -> str:
        return "\n".join(
            f"--- worker {k} ---\n{p.read_text()[-4000:]}" for k, p in self.logs.items()
        )


def _celery_env(home: Path, redis: Redis, bench_home: Path) -> dict[str, str]:
    """What submitters and workers share: the instance (DAGSTER_HOME, DAGSTER_PG_*), the
    broker and the backend, a BENCH_HOME of their own (for workloads that use the warehouse);
    the workers also import `celery_job` from tests/."""
    venv_bin = str(Path(sys.executable).parent)
    return os.environ | {
        "DAGSTER_HOME": str(home),
        "BENCH_HOME": str(bench_home),
        "DAGSTER_CELERY_BROKER_URL": redis.url(0),
        "DAGSTER_CELERY_BACKEND_URL": redis.url(1),
        # `dagster-celery worker start` runs `celery` from PATH.
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH")) if p
        ),
    }


def _answering(env: dict[str, str]) -> set[str]:
    """Names of the workers that answer a broadcast ping on the broker."""
    from celery import Celery

    app = Celery(broker=env["DAGSTER_CELERY_BROKER_URL"])
    try:
        return {name for reply in app.control.ping(timeout=1.0) for name in reply}
    finally:
        app.close()


@pytest.fixture(scope="module")
def celery_workers(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_home: Path,
    redis_server: Redis,  # noqa: F811
    reaper: Reaper,  # noqa: F811
) -> Iterator[Workers]:
    """Two workers started as the deploy README says, one task at a time each; every process
    of each (the dagster-celery wrapper, celery, its pool) is stopped at teardown."""
    root = tmp_path_factory.mktemp("celery")
    env = _celery_env(postgres_home, redis_server, root / "bench_home")
    dagster_celery = str(Path(sys.executable).with_name("dagster-celery"))
    config = str(DEPLOY / "celery" / "celery.yaml")
    hostname = os.uname().nodename
    workers = Workers(
        names={label: f"bench-{label}@{hostname}" for label in WORKER_LABELS},
        env=env,
        logs={label: root / f"worker-{label}.log" for label in WORKER_LABELS},
    )
    processes: dict[str, subprocess.Popen] = {}
    try:
        for label in WORKER_LABELS:
            argv = [dagster_celery, "worker", "start", "-A", "dagster_celery.app", "-y", config]
            argv += ["-n", f"bench-{label}", "--", "--concurrency=1"]
            argv += ["--without-mingle", "--without-gossip"]
            with workers.logs[label].open("wb") as log:
                processes[label] = reaper.spawn(
                    argv,
                    env=env | {celery_job.WORKER_LABEL: label},
                    cwd=root,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        deadline = time.monotonic() + WORKER_START_SECONDS
        while not set(workers.names.values()) <= _answering(env):
            dead = [label for label, p in processes.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                pytest.fail(
                    f"Celery workers not ready (exited: {dead})\n{workers.log_text()}",
                    pytrace=False,
                )
        yield workers
    finally:
        reaper.stop(*processes.values(), grace=15)


def _worker_of_each_step(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """Step key → the Celery node that executed it, from the engine event every worker
    task writes before it runs its step."""
    ran_on = {}
    for record in instance.get_records_for_run(run_id, of_type=EVENT.ENGINE_EVENT).records:
        metadata = record.event_log_entry.dagster_event.event_specific_data.metadata
        if "Celery worker" in metadata:
            ran_on[record.event_log_entry.step_key] = metadata["Celery worker"].value
    return ran_on


def _submit_all(
    workload: celery_job.Workload, workers: Workers, watchdog: Reaper, logs: Path
) -> str:
    """Every run of the workload at once, each by `dagster job execute` in its own process
    (runs in threads of one process deadlock in `logging`: Dagster reconfigures it per run).
    Returns the tag value that marks this batch of runs."""
    batch = uuid.uuid4().hex
    argv = [str(Path(sys.executable).with_name("dagster")), "job", "execute"]
    argv += ["-m", workload.module, "-a", workload.attribute, "-j", workload.job]
    argv += ["-c", str(DEPLOY / "celery" / "celery.yaml")]
    processes = []
    try:
        for number, tags in enumerate(workload.runs):
            with (logs / f"submit-{number}.log").open("wb") as log:
                processes.append(
                    watchdog.spawn(
                        [*argv, "--tags", json.dumps({**tags, BATCH_TAG: batch})],
                        env=workers.env,
                        cwd=settings.REPO_ROOT,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        deadline = time.monotonic() + SUBMIT_SECONDS
        for process in processes:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 1))
            except subprocess.TimeoutExpired:
                pytest.fail(
                    f"runs still going after {SUBMIT_SECONDS} s\n{workers.log_text()}",
                    pytrace=False,
                )
    finally:
        watchdog.stop(*processes)
    return batch


@pytest.mark.parametrize("workload_name", sorted(celery_job.WORKLOADS))
def test_celery_executor_spreads_steps_over_two_workers(
    workload_name: str,
    tmp_path: Path,
    postgres_home: Path,
    postgres_server: Postgres,  # noqa: F811
    celery_workers: Workers,
    reaper: Reaper,  # noqa: F811
) -> None:
    workload = celery_job.WORKLOADS[workload_name]
    batch = _submit_all(workload, celery_workers, reaper, tmp_path)
    submit_logs = "\n".join(p.read_text()[-3000:] for p in sorted(tmp_path.glob("submit-*.log")))

    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={BATCH_TAG: batch}))
        assert len(runs) == len(workload.runs), submit_logs
        assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs), (
            f"{submit_logs}\n{celery_workers.log_text()}"
        )
        ran_on = {
            (run.run_id, step): node
            for run in runs
            for step, node in _worker_of_each_step(instance, run.run_id).items()
        }
        reports = [
            record.event_log_entry.dagster_event.event_specific_data.materialization.metadata
            for run in runs
            for record in instance.get_records_for_run(
                run.run_id, of_type=EVENT.ASSET_MATERIALIZATION
            ).records
        ]

    # Every step went through Celery, and each of the two workers took some.
    assert len(ran_on) == workload.steps, ran_on
    assert set(ran_on.values()) == set(celery_workers.names.values()), ran_on
    if workload.reports_process:  # the steps say so themselves: worker labels and processes
        assert len(reports) == workload.steps
        assert {r["worker_label"].value for r in reports} == set(WORKER_LABELS)
        pids = {r["pid"].value for r in reports}
        assert len(pids) >= 2 and os.getpid() not in pids
    # What the workers wrote reached the shared Postgres instance: read it back with SQL.
    (successes,) = postgres_rows(
        postgres_server,
        "SELECT count(*) FROM event_logs WHERE run_id = ANY(%s) AND dagster_event_type = %s",
        [[run.run_id for run in runs], EVENT.STEP_SUCCESS.value],
    )
    assert successes == (workload.steps,)
