"""A schedule tick while the source's previous run is still going, and that run meeting a column
renamed upstream: the tick starts no second run (skipped, the running run named), the running
run is rejected with the drift named, and the live tables are row for row what they were.

The slow run is real: `dagster job execute` of `refresh_epoch` in live source mode, in its own
process, fetching Epoch's zip from a loopback server that holds the download until the tick has
been evaluated. The tick is real too: the scheduler daemon's own iteration
(`launch_scheduled_runs`) over a gRPC code server loading `bench_pipeline.definitions`, on the
same Dagster instance, at the schedule's next cron time.
"""

import io
import logging
import subprocess
import sys
import threading
import time
import types
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
import duckdb
import pytest
from abuse_tally import TALLY
from dagster._core.scheduler.instigation import TickStatus
from dagster._core.test_utils import create_run_for_test, create_test_daemon_workspace_context
from dagster._core.workspace.load_target import ModuleTarget
from dagster._scheduler.scheduler import launch_scheduled_runs
from loopback import LoopbackServer, Reply

from bench_pipeline.core import settings
from bench_pipeline.definitions import build_definitions
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.sensors import schedules

pytestmark = pytest.mark.assets

REPO = Path(__file__).resolve().parent.parent
EPOCH = source_definitions()["epoch"]
ZIP_PATH = urlsplit(EPOCH.live.zip_url or "").path
JOB, SCHEDULE = "refresh_epoch", "refresh_epoch_schedule"
LOCATION = "bench_pipeline"


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(f"benchmark_data/{name}", content)
    return buffer.getvalue()


def _epoch_files() -> dict[str, bytes]:
    folder = settings.REPO_ROOT / "sources" / "snapshots" / "epoch"
    return {name: (folder / name).read_bytes() for name in EPOCH.live.zip_members}


def _renamed_column(files: dict[str, bytes]) -> dict[str, bytes]:
    """gpqa_diamond.csv with its score column renamed upstream (mean_score → score_mean)."""
    header, rest = files["gpqa_diamond.csv"].split(b"\n", 1)
    assert b"mean_score" in header
    return files | {"gpqa_diamond.csv": header.replace(b"mean_score", b"score_mean") + b"\n" + rest}


class EpochDownloads:
    """The loopback's answer for Epoch's zip: the real one, then the drifted one, held until
    `release` is set (the first held request sets `arrived`)."""

    def __init__(self) -> None:
        self.good = _zip(_epoch_files())
        self.drifted = _zip(_renamed_column(_epoch_files()))
        self.served = 0
        self.arrived = threading.Event()
        self.release = threading.Event()

    def __call__(self, _sent: bytes) -> Reply:
        self.served += 1
        if self.served == 1:
            return Reply(200, body=self.good)
        self.arrived.set()
        self.release.wait(timeout=120)
        return Reply(200, body=self.drifted)


def _live_tables() -> dict[str, list[tuple]]:
    with duckdb.connect(str(settings.warehouse_path()), read_only=True) as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
            for table in EPOCH.tables
        }


def _source_runs() -> list[dict]:
    with duckdb.connect(str(settings.warehouse_path()), read_only=True) as conn:
        cursor = conn.execute(
            "SELECT * FROM source_runs WHERE source = 'epoch' ORDER BY started_at"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _next_tick(now: datetime) -> datetime:
    """The epoch schedule's next cron time (daily at 05:00 UTC) after `now`."""
    assert EPOCH.cadence_cron == "0 5 * * *"
    tick = now.replace(hour=5, minute=0, second=0, microsecond=0)
    return tick if tick > now else tick + timedelta(days=1)


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """BENCH_HOME and a persistent DAGSTER_HOME, set here and for every process started."""
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {"BENCH_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(dagster_home)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BENCH_SOURCE_MODE", "live")
    monkeypatch.delenv("BENCH_SNAPSHOTS", raising=False)
    return env


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(600)
def test_a_tick_during_a_drifted_run_starts_nothing_and_the_drift_is_rejected(
    homes: dict[str, str], tmp_path: Path
) -> None:
    downloads = EpochDownloads()
    with LoopbackServer({ZIP_PATH: downloads}) as server:
        mirror = {"base_url": server.url, "timeout_seconds": 120, "max_retries": 0}
        run_config = {"resources": {"epoch_source": {"config": mirror}}}
        instance = dg.DagsterInstance.get()

        # An earlier refresh, accepted: the live tables the drifted run must leave alone.
        baseline = (
            build_definitions("live")
            .resolve_job_def(JOB)
            .execute_in_process(instance=instance, run_config=run_config)
        )
        assert baseline.success
        [accepted] = _source_runs()
        assert accepted["status"] == "accepted", accepted["reason"]
        before = _live_tables()
        assert len(before["evaluation_rows"]) > 800 and before["epoch_models"]

        target = ModuleTarget(module_name="bench_pipeline.definitions", attribute="defs",
                              working_directory=str(REPO), location_name=LOCATION)  # fmt: skip
        with create_test_daemon_workspace_context(target, instance) as workspace:
            location = workspace.create_request_context().get_code_location(LOCATION)
            [repository] = location.get_repositories().values()
            schedule = repository.get_schedule(SCHEDULE)
            instance.start_schedule(schedule)

            # The next refresh, in its own process; the zip it fetches has a renamed column.
            (tmp_path / "run.yaml").write_text(
                "resources:\n  epoch_source:\n    config:\n"
                + "".join(f"      {k}: {v}\n" for k, v in mirror.items())
            )
            command = [sys.executable, "-m", "dagster", "job", "execute", "-m",
                       "bench_pipeline.definitions", "-a", "defs", "-j", JOB,
                       "-c", str(tmp_path / "run.yaml")]  # fmt: skip
            slow = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)  # fmt: skip
            try:
                assert downloads.arrived.wait(timeout=180), "the run never fetched"
                [running] = instance.get_runs(
                    dg.RunsFilter(job_name=JOB, statuses=[dg.DagsterRunStatus.STARTED])
                )

                # The schedule's tick comes while that run is still fetching.
                tick_time = _next_tick(datetime.now(UTC))
                list(launch_scheduled_runs(
                    workspace, logging.getLogger("scheduler"),
                    end_datetime_utc=tick_time + timedelta(seconds=30), iteration_times={},
                ))  # fmt: skip
                ticks = instance.get_ticks(schedule.get_remote_origin_id(), schedule.selector_id)
                runs_at_tick = instance.get_runs(dg.RunsFilter(job_name=JOB))
            finally:
                downloads.release.set()
                output, _ = slow.communicate(timeout=300)
            assert slow.returncode == 0, output.decode()[-3000:]
        zip_requests = len(server.requests(ZIP_PATH))

    # The tick was skipped, saying which run holds the source; it started nothing.
    [tick] = ticks
    assert tick.status == TickStatus.SKIPPED
    assert tick.timestamp == tick_time.timestamp()
    assert running.run_id in tick.skip_reason and JOB in tick.skip_reason
    assert tick.run_ids == []
    assert {r.run_id for r in runs_at_tick} == {baseline.run_id, running.run_id}
    runs = instance.get_runs(dg.RunsFilter(job_name=JOB))
    assert {r.run_id for r in runs} == {baseline.run_id, running.run_id}
    assert not instance.get_runs(dg.RunsFilter(tags={"dagster/schedule_name": SCHEDULE}))
    assert instance.get_run_by_id(running.run_id).status == dg.DagsterRunStatus.SUCCESS
    assert zip_requests == 2

    # The running run met the renamed column: rejected, the file and the column named.
    first, drifted = _source_runs()
    assert first["run_id"] == accepted["run_id"]
    assert (drifted["status"], drifted["mode"]) == ("rejected", "live")
    assert "gpqa_diamond.csv" in drifted["reason"] and "mean_score" in drifted["reason"]
    assert drifted["previous_rows"] == sum(len(rows) for rows in before.values())
    # The live tables are exactly as before, row for row.
    assert _live_tables() == before
    TALLY.add(faults=2, inputs=2, survived=2, lost=0)  # the drifted payload, the overlapping tick


# --- the schedule's decision, on an ephemeral instance ------------------------------------------


def _evaluate(name: str, instance: dg.DagsterInstance, definitions: dg.Definitions):
    context = dg.build_schedule_context(
        instance=instance, repository_def=definitions.get_repository_def()
    )
    return definitions.resolve_schedule_def(name).evaluate_tick(context)


@pytest.mark.faults
def test_a_tick_waits_for_any_unfinished_run_that_writes_its_source(monkeypatch) -> None:
    definitions = build_definitions()
    started = dg.DagsterRunStatus.STARTED
    with dg.instance_for_test() as instance:
        idle = _evaluate(SCHEDULE, instance, definitions)
        assert len(idle.run_requests) == 1 and idle.run_requests[0].tags["bench/source"] == "epoch"

        # `bench run`'s first job refreshes OpenRouter's model list (the rates need it), its
        # last job the other sources: a tick waits for the job that writes its source.
        first = create_run_for_test(instance, job_name="prepare_inputs", status=started)
        assert len(_evaluate(SCHEDULE, instance, definitions).run_requests) == 1
        waiting = _evaluate("refresh_openrouter_models_schedule", instance, definitions)
        assert waiting.run_requests == [] and first.run_id in waiting.skip_message
        assert "prepare_inputs, STARTED" in waiting.skip_message
        last = create_run_for_test(instance, job_name="grade_and_publish", status=started)
        waiting = _evaluate(SCHEDULE, instance, definitions)
        assert waiting.run_requests == [] and last.run_id in waiting.skip_message
        for run in (first, last):
            instance.report_run_failed(run)

        # A run of other assets does not hold it back; a run of the source's live table does,
        # and only for that source.
        create_run_for_test(instance, job_name="execute_model_runs", status=started)
        assert len(_evaluate(SCHEDULE, instance, definitions).run_requests) == 1
        waiting_run = create_run_for_test(
            instance, job_name="__ASSET_JOB", status=dg.DagsterRunStatus.NOT_STARTED,
            asset_selection=frozenset({dg.AssetKey(["epoch", "live"])}),
        )  # fmt: skip
        assert waiting_run.run_id in _evaluate(SCHEDULE, instance, definitions).skip_message
        arena = _evaluate("refresh_arena_schedule", instance, definitions)
        assert len(arena.run_requests) == 1

        # A run "in progress" for longer than any refresh takes died unreported: ignored.
        later = time.time() + schedules.STALE_AFTER.total_seconds() + 60
        monkeypatch.setattr(schedules, "time", types.SimpleNamespace(time=lambda: later))
        assert len(_evaluate(SCHEDULE, instance, definitions).run_requests) == 1
    TALLY.add(faults=3)
