"""The scale-out deployment in `deploy/`, run for real against throwaway servers.

(a) The ingestion assets materialised against the Dagster instance of
    `deploy/postgres/dagster.yaml`: the run and its events land in PostgreSQL (read back
    with plain SQL), the rows land in DuckDB.
(b) The real model runs under dagster-celery's executor: `prepare_inputs` materialised on
    that instance (the task bank registers the model-run partitions in PostgreSQL), then
    several partitions' runs of `celery_model_runs` (`bench_pipeline/celery_definitions.py`,
    simulated model calls) submitted at once with `dagster job execute` and
    `deploy/celery/celery.yaml`, on a real Redis broker and two workers started with
    `dagster-celery worker start`: both workers execute steps, every partition is
    materialised in the instance, and the warehouse holds each of their runs exactly once.
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

import dagster as dg
import duckdb
import pytest
from conftest import LIVE_TABLES
from servers import Postgres, Reaper, Redis, postgres_server, reaper, redis_server  # noqa: F401

from bench_pipeline import celery_definitions
from bench_pipeline.assets.runs import MODEL_RUN_PARTITIONS, MODEL_RUNS_KEY, current_partitions
from bench_pipeline.celery_definitions import CELERY_RUN_JOB
from bench_pipeline.core import settings
from bench_pipeline.definitions import build_definitions
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.plan import work_items
from bench_pipeline.runs.shared import SharedStore, StoreAddress, merge_into_warehouse
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.integration

DEPLOY = settings.REPO_ROOT / "deploy"
STAGES = ("raw", "staging", "validated", "live")
WORKER_LABELS = ("a", "b")
WORKER_START_SECONDS = 90
SUBMIT_SECONDS = 180
PARTITIONS_AT_ONCE = 5
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


# --- (b) model-run partitions on two Celery workers -------------------------------------------


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
    broker and the backend, a BENCH_HOME of their own, recorded sources and simulated model
    calls (whatever the caller's environment says: nothing here may reach the network)."""
    venv_bin = str(Path(sys.executable).parent)
    inherited = {k: v for k, v in os.environ.items() if k != "BENCH_SNAPSHOTS"}
    return inherited | {
        "DAGSTER_HOME": str(home),
        "BENCH_HOME": str(bench_home),
        "BENCH_SOURCE_MODE": "recorded",
        "BENCH_MODEL_MODE": "simulated",
        "DAGSTER_CELERY_BROKER_URL": redis.url(0),
        "DAGSTER_CELERY_BACKEND_URL": redis.url(1),
        # `dagster-celery worker start` runs `celery` from PATH.
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
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
                    argv, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT
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


def _choose_partitions(keys: list[str], count: int) -> list[str]:
    """`count` partitions: one setup each, every case version inside."""
    chosen = keys[:count]
    assert len(chosen) == count, f"only {len(keys)} executable setups"
    return chosen


def _submit_all(partitions: list[str], workers: Workers, watchdog: Reaper, logs: Path) -> str:
    """One run of `celery_model_runs` per partition given, all at once, each submitted by
    `dagster job execute` in its own process (runs in threads of one process deadlock in
    `logging`: Dagster reconfigures it per run). Returns the tag value that marks the batch."""
    batch = uuid.uuid4().hex
    argv = [str(Path(sys.executable).with_name("dagster")), "job", "execute"]
    argv += ["-m", celery_definitions.__name__, "-a", "defs", "-j", CELERY_RUN_JOB]
    argv += ["-c", str(DEPLOY / "celery" / "celery.yaml")]
    processes = []
    try:
        for number, partition in enumerate(partitions):
            tags = {"dagster/partition": partition, BATCH_TAG: batch}
            with (logs / f"submit-{number}.log").open("wb") as log:
                processes.append(
                    watchdog.spawn(
                        [*argv, "--tags", json.dumps(tags)],
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


def _events(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> list:
    return [
        record.event_log_entry
        for record in instance.get_records_for_run(run_id, of_type=kind, limit=1000).records
    ]


def test_model_run_partitions_on_two_celery_workers(
    tmp_path: Path,
    postgres_home: Path,
    postgres_server: Postgres,  # noqa: F811
    celery_workers: Workers,
    reaper: Reaper,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real `runs/model_runs`: inputs prepared in-process on the Postgres instance (the
    task bank registers the partitions there), then several partitions' runs at once through
    `celery_model_runs`, one of them twice; every row once in the warehouse."""
    for name in ("BENCH_HOME", "BENCH_SOURCE_MODE", "BENCH_MODEL_MODE"):
        monkeypatch.setenv(name, celery_workers.env[name])
    monkeypatch.delenv("BENCH_SNAPSHOTS", raising=False)
    bench_home = Path(celery_workers.env["BENCH_HOME"])
    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        prepared = celery_definitions.defs.resolve_job_def("prepare_inputs").execute_in_process(
            instance=instance,
            raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
        assert prepared.success
        registered = instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)
    # The task bank registered the partitions in PostgreSQL (read back with SQL): every one
    # of the repository's task bank and setups (setups proposed for new models may add more).
    in_repository = current_partitions()
    assert set(in_repository) <= set(registered)
    assert sorted(
        key
        for (key,) in postgres_rows(
            postgres_server,
            "SELECT partition FROM dynamic_partitions WHERE partitions_def_name = %s",
            [MODEL_RUN_PARTITIONS.name],
        )
    ) == sorted(registered)

    chosen = _choose_partitions(in_repository, PARTITIONS_AT_ONCE)
    twice = chosen[0]  # submitted a second time with the others: it must not run twice
    batch = _submit_all([*chosen, twice], celery_workers, reaper, tmp_path)
    submit_logs = "\n".join(p.read_text()[-3000:] for p in sorted(tmp_path.glob("submit-*.log")))

    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={BATCH_TAG: batch}))
        assert len(runs) == len(chosen) + 1, submit_logs
        assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs), (
            f"{submit_logs}\n{celery_workers.log_text()}"
        )
        # The engine event a Celery worker writes before it executes a run's step.
        ran_on = {
            run.run_id: [
                entry.dagster_event.event_specific_data.metadata["Celery worker"].value
                for entry in _events(instance, run.run_id, EVENT.ENGINE_EVENT)
                if "Celery worker" in entry.dagster_event.event_specific_data.metadata
            ]
            for run in runs
        }
        run_pids = {
            entry.dagster_event.pid
            for run in runs
            for entry in _events(instance, run.run_id, EVENT.RUN_START)
        }
        step_pids = {
            entry.dagster_event.pid
            for run in runs
            for entry in _events(instance, run.run_id, EVENT.STEP_START)
        }
        materialised = {
            partition: instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=MODEL_RUNS_KEY, asset_partitions=[partition]),
                limit=10,
            ).records
            for partition in chosen
        }

    # Each run's one step went through Celery; both workers took some, in their own
    # processes (not the submitters', which orchestrated the runs).
    assert all(len(nodes) == 1 for nodes in ran_on.values()), ran_on
    assert {nodes[0] for nodes in ran_on.values()} == set(celery_workers.names.values()), ran_on
    assert len(step_pids) >= 2 and not step_pids & (run_pids | {os.getpid()})

    # Every chosen partition materialised, the twice-submitted one twice; between them its
    # two runs recorded its model runs once (the second found them stored and resumed past).
    assert {p: len(records) for p, records in materialised.items()} == {
        p: 2 if p == twice else 1 for p in chosen
    }
    bank, catalog = load_bank(), load_setups()
    expected = {(item.partition_key, item.run_id) for item in work_items(chosen, bank, catalog)}
    planned = {p: len(work_items([p], bank, catalog)) for p in chosen}

    def reported(record, field: str) -> int:
        return record.asset_materialization.metadata[field].value

    for partition, records in materialised.items():
        assert sum(reported(r, "runs recorded") for r in records) == planned[partition]
        assert {reported(r, "model mode") for r in records} == {"simulated"}
    # With the instance on PostgreSQL the runs go through the run store (runs/shared.py):
    # the twice-submitted partition's two runs share its runs by row claims, or the later
    # one finds them all made; either way they are made once between them.
    assert sum(
        reported(r, "runs resumed past") + reported(r, "runs recorded") for r in materialised[twice]
    ) in range(planned[twice], 2 * planned[twice] + 1)
    # Read straight from PostgreSQL: the materialisation events, by partition.
    assert dict(
        postgres_rows(
            postgres_server,
            "SELECT partition, count(*) FROM event_logs WHERE run_id = ANY(%s) "
            "AND dagster_event_type = %s GROUP BY partition",
            [[run.run_id for run in runs], EVENT.ASSET_MATERIALIZATION.value],
        )
    ) == {p: 2 if p == twice else 1 for p in chosen}

    # The publisher merges the run store into the warehouse (as `grading/grades` does)...
    store = SharedStore(StoreAddress.from_env(dict(os.environ)))
    merged = merge_into_warehouse(
        store, WarehouseResource(path=str(bench_home / "warehouse" / "bench.duckdb")).connection
    )
    store.close()
    assert merged.merged == len(expected)
    # ... which then holds exactly the chosen partitions' runs, each once, and no failure.
    with contextlib.closing(
        duckdb.connect(str(bench_home / "warehouse" / "bench.duckdb"), read_only=True)
    ) as conn:
        rows = conn.execute("SELECT partition_key, run_id, simulated FROM model_runs").fetchall()
        failures = conn.execute("SELECT count(*) FROM run_failures").fetchone()[0]
    assert len(rows) == len(expected)  # no run id twice
    assert {(partition, run_id) for partition, run_id, _ in rows} == expected
    assert all(simulated for _, _, simulated in rows)
    assert failures == 0
