"""Model-run batches and grading rounds as the assets run them, called directly over a real
warehouse in tmp_path: stored runs are never run again, a failed run is stored with its
partition and the next batch runs it, a cycle stores its grades and the next finds nothing."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench_pipeline.grading.browser_offline import RecordedInspector
from bench_pipeline.grading.rounds import grade_pending, review_round
from bench_pipeline.grading.sandbox import OfflineSandbox
from bench_pipeline.providers import SimulatedProvider
from bench_pipeline.providers.base import ChatRequest, ProviderError
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.batch import run_model_batch, store_task_bank
from bench_pipeline.runs.plan import WorkItem
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.store

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
CASE = "pm:pm-delay-update"  # one case of every setup's partition


class FailsFirstCalls(SimulatedProvider):
    """Simulated answers for every item, except that the first `failing` calls fail for good;
    closed like the model-calls resource's chooser."""

    def __init__(self, failing: int) -> None:
        self.failing, self.closed = failing, False

    def __call__(self, item: WorkItem) -> SimulatedProvider:
        return self

    async def complete(self, request: ChatRequest):
        if self.failing > 0:
            self.failing -= 1
            raise ProviderError("HTTP 400: bad request")
        return await super().complete(request)

    async def aclose(self) -> None:
        self.closed = True


class HeldCalls(FailsFirstCalls):
    """Simulated answers that wait until `release` is set, counting every call."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__(failing=0)
        self.release, self.calls, self.started = release, 0, threading.Event()

    async def complete(self, request: ChatRequest):
        self.calls += 1
        self.started.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        return await super().complete(request)


@pytest.fixture
def warehouse(tmp_path: Path) -> WarehouseResource:
    return WarehouseResource(path=str(tmp_path / "bench.duckdb"))


def test_a_batch_stores_its_runs_and_failures_and_resumes_past_them(warehouse) -> None:
    bank, setups = load_bank(), load_setups()
    with warehouse.connection() as conn:
        stored = store_task_bank(conn, bank, setups)
    keys = stored.partitions[:2]
    calls = FailsFirstCalls(failing=1)
    first = run_model_batch(
        keys,
        warehouse.connection,
        calls,
        bank=bank,
        setups=setups,
        cases=[CASE],
        locks=warehouse.locks_dir(),
    )
    assert calls.closed
    assert (first.planned, first.recorded, len(first.failures)) == (len(keys), len(keys) - 1, 1)
    with warehouse.connection() as conn:
        failures = conn.execute("SELECT partition_key, error FROM run_failures").fetchall()
        assert conn.execute("SELECT count(*) FROM model_runs").fetchall() == [(len(keys) - 1,)]
    ((partition, error),) = failures
    assert CASE.split(":")[1] in partition and error.endswith("HTTP 400: bad request")

    again = run_model_batch(
        keys,
        warehouse.connection,
        FailsFirstCalls(0),
        bank=bank,
        setups=setups,
        cases=[CASE],
        locks=warehouse.locks_dir(),
    )
    assert (again.skipped, again.recorded, again.failures) == (len(keys) - 1, 1, {})
    with warehouse.connection() as conn:
        assert conn.execute("SELECT count(*) FROM run_failures").fetchall() == [(0,)]


def test_a_round_grades_what_waits_and_the_next_finds_nothing(warehouse, tmp_path) -> None:
    bank, setups = load_bank(), load_setups()
    with warehouse.connection() as conn:
        stored = store_task_bank(conn, bank, setups)
    keys = stored.partitions
    calls = ModelCallsResource(mode="simulated", cache_dir=str(tmp_path / "cache"))
    run_model_batch(
        keys,
        warehouse.connection,
        calls.providers(),
        bank=bank,
        setups=setups,
        cases=[CASE],
        locks=warehouse.locks_dir(),
    )

    def grade():
        return grade_pending(
            warehouse.connection, calls.providers(), inspector=RecordedInspector(tmp_path / "b"),
            sandbox=OfflineSandbox({}),
            bank=bank, setups=setups, now=NOW, screenshots=tmp_path / "shots",
        )  # fmt: skip

    graded = grade()
    assert graded.cycle_id is not None and len(graded.runs) == len(keys)
    with warehouse.connection() as conn:
        cycles = conn.execute("SELECT cycle_id FROM grading_cycles").fetchall()
        grades = conn.execute("SELECT count(*) FROM grades").fetchall()[0][0]
    reviewed = review_round(warehouse.connection, tmp_path / "inbox", bank, NOW)
    assert cycles == [(graded.cycle_id,)] and grades == len(graded.result.grades) > 0
    assert grade().cycle_id is None  # nothing waits: nothing graded, nothing stored
    assert reviewed.simulated_reviews == len(keys)  # the labelled reviewer, simulated runs
    assert (reviewed.accepted_reviews, reviewed.rejected_files) == ([], {})
    assert reviewed.calibration_pairs == 0 and reviewed.agreement is None


def test_two_batches_of_one_partition_at_once_run_it_once(warehouse) -> None:
    """The second batch waits for the first's partition lock, then finds every run stored:
    no call is made twice and no run is recorded twice."""
    bank, setups = load_bank(), load_setups()
    with warehouse.connection() as conn:
        keys = store_task_bank(conn, bank, setups).partitions[:1]
    release, waited = threading.Event(), []
    first_calls, second_calls = HeldCalls(release), HeldCalls(threading.Event())
    second_calls.release.set()
    reports = {}

    def batch(name: str, calls: HeldCalls) -> None:
        reports[name] = run_model_batch(
            keys, warehouse.connection, calls, bank=bank, setups=setups,
            locks=warehouse.locks_dir(), waiting=lambda key: (waited.append(key), release.set()),
        )  # fmt: skip

    first = threading.Thread(target=batch, args=("first", first_calls))
    first.start()
    assert first_calls.started.wait(30)  # the first batch is answering, lock held
    second = threading.Thread(target=batch, args=("second", second_calls))
    second.start()
    for thread in (first, second):
        thread.join(120)
    assert waited == keys  # the second found the partition held and waited for it
    planned = reports["first"].planned
    assert planned > 1 and reports["first"].recorded == first_calls.calls == planned
    assert (reports["second"].skipped, reports["second"].recorded, second_calls.calls) == (
        planned,
        0,
        0,
    )
    with warehouse.connection() as conn:
        assert conn.execute("SELECT count(*) FROM model_runs").fetchall() == [(planned,)]
