"""Model runs as the pipeline does them, as plain calls: the `runs/task_bank` and
`runs/model_runs` assets are these functions wired to their resources, and tests call the
same functions.

The warehouse is reached through `Connect` (short-lived connections, as the warehouse
resource gives them) and held only to read the plan and to write rows, never while models
answer: a step on another worker, or any other writer, gets the file between two flushes.

A batch holds a lock per partition (`core/locks`) from before it reads which runs are stored
until its last row is written: two runs of one partition at once (a backfill and a retry, or a
partition submitted twice) would otherwise both find a run missing and both pay for it. The
second waits and then resumes past everything the first stored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import duckdb

from bench_pipeline.core import settings
from bench_pipeline.core.locks import holding
from bench_pipeline.providers.base import Provider
from bench_pipeline.runs.execute import BatchReport, execute_batch
from bench_pipeline.runs.plan import EXECUTED_SUITES, WorkItem, planned_partitions, work_items
from bench_pipeline.runs.proposals import mark_proposed, with_proposals
from bench_pipeline.runs.rates import rates_by_api_id
from bench_pipeline.runs.shared import (
    SharedResponses,
    SharedStore,
    StoreUnreachable,
    default_worker_name,
)
from bench_pipeline.runs.store import (
    store_bank_and_setups,
    store_failures,
    store_runs,
    stored_run_ids,
)
from bench_pipeline.runs.worker import WorkerReport, work
from bench_pipeline.taskbank import TaskBank
from bench_pipeline.taskbank.setups import SetupCatalog

Connect = Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]
"""Opens a short-lived, migrated warehouse connection (`WarehouseResource.connection`)."""


class ModelCalls(Protocol):
    """What answers a batch's calls: the provider for each work item, closed at the end (the
    model-calls resource's `ProviderChooser`)."""

    def __call__(self, item: WorkItem) -> Provider:
        """The provider that answers `item` (by its setup)."""
        ...

    async def aclose(self) -> None:
        """Close whatever connections the providers opened."""
        ...


@dataclass(frozen=True)
class StoredBank:
    """The task bank and setups as stored, and the model-run partitions they plan."""

    catalog: SetupCatalog
    """The setups of `setups/` plus those proposed for new models (marked `proposed`)."""
    partitions: list[str]
    """Every executable setup × PM/Navigator case version, as partition keys."""
    counts: dict[str, int]
    """What was stored (`store_bank_and_setups`)."""


def store_task_bank(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, setups: SetupCatalog
) -> StoredBank:
    """Store the bank and the setups (with the proposed ones) and plan their partitions."""
    catalog = with_proposals(conn, setups)
    counts = store_bank_and_setups(conn, bank, catalog)
    mark_proposed(conn, catalog)
    return StoredBank(catalog, planned_partitions(bank, catalog), counts)


def run_model_batch(
    keys: Sequence[str],
    connect: Connect,
    calls: ModelCalls,
    *,
    bank: TaskBank,
    setups: SetupCatalog,
    locks: Path,
    concurrency: int = 8,
    progress: Callable[[BatchReport], None] | None = None,
    waiting: Callable[[str], None] | None = None,
    suites: Collection[str] = EXECUTED_SUITES,
    cases: Collection[str] = (),
    store: SharedStore | None = None,
) -> BatchReport:
    """Every work item of the partitions `keys` not stored yet, answered, costed at the rate
    in effect on the run date and stored as it finishes; failures stored at the end.

    Args:
        keys: Model-run partition keys (`<model record>@<harness>`, one per setup).
        connect: Opens a warehouse connection.
        calls: The providers; closed before returning.
        bank: The task bank.
        setups: The setups of `setups/` (proposed ones are added from the warehouse).
        locks: The folder of the partition locks (`WarehouseResource.locks_dir`): every
            process writing this warehouse must use the same one.
        concurrency: Calls in flight at most.
        progress: Called after each finished run with the report so far.
        waiting: Called with a partition key that another batch holds, before waiting.
        suites: Only the case versions of these suites (all executed ones by default).
        cases: Only these cases (`<suite>:<case id>`), when given.
        store: The PostgreSQL run store (`runs.shared.configured_store`), when the
            deployment names one: the runs are queued there, made by this process and any
            worker alike (row claims instead of the partition locks), and stored there for
            the publisher to merge (`runs/shared.py`). None (the default): the warehouse.

    Returns:
        The report; runs that failed for good are in `failures` (stored, not raised: the
        caller decides, and a rerun resumes past every stored run).
    """
    keys = list(keys)
    if store is not None:
        return _run_shared(keys, connect, calls, bank, setups, store, concurrency, progress,
                           suites, cases)  # fmt: skip
    with holding(locks, keys, waiting):
        return _run_held(keys, connect, calls, bank, setups, concurrency, progress, suites, cases)


def _run_held(
    keys: list[str],
    connect: Connect,
    calls: ModelCalls,
    bank: TaskBank,
    setups: SetupCatalog,
    concurrency: int,
    progress: Callable[[BatchReport], None] | None,
    suites: Collection[str],
    cases: Collection[str],
) -> BatchReport:
    with connect() as conn:
        items = work_items(keys, bank, with_proposals(conn, setups), suites, cases)
        done = stored_run_ids(conn, {item.partition_key for item in items})
        rates = rates_by_api_id(conn, {item.setup.model.api_id for item in items})

    def record(rows: list[dict]) -> None:
        with connect() as conn:
            store_runs(conn, rows)

    async def batch() -> BatchReport:
        try:
            return await execute_batch(
                items, calls, rates, record, done=done, concurrency=concurrency, progress=progress
            )
        finally:
            await calls.aclose()

    report = asyncio.run(batch())
    if report.failures:
        with connect() as conn:
            store_failures(conn, report.failures)
    return report


@dataclass(frozen=True)
class Queued:
    """What `queue_runs` found and queued."""

    planned: int
    """Work items of the partitions."""
    run_ids: list[str]
    """Those the warehouse does not hold (queued, or in the store already)."""
    stored: int
    """Of `run_ids`, those the run store holds already (made, not merged yet)."""
    queued: int
    """Rows added to the queue (or failed ones reopened)."""


def queue_runs(
    keys: Sequence[str],
    connect: Connect,
    bank: TaskBank,
    setups: SetupCatalog,
    store: SharedStore,
    suites: Collection[str] = EXECUTED_SUITES,
    cases: Collection[str] = (),
) -> Queued:
    """Queue in the run store every work item of `keys` that neither the warehouse nor the
    store holds, with the rates of their models (workers price runs from them)."""
    with connect() as conn:
        items = work_items(keys, bank, with_proposals(conn, setups), suites, cases)
        done = stored_run_ids(conn, {item.partition_key for item in items})
        rates = rates_by_api_id(conn, {item.setup.model.api_id for item in items})
    todo = [item for item in items if item.run_id not in done]
    ids = [item.run_id for item in todo]
    store.publish_rates(rates)
    already = store.stored_ids(ids)
    added = store.queue(item for item in todo if item.run_id not in already)
    return Queued(len(items), ids, len(already), added)


def _run_shared(
    keys: list[str],
    connect: Connect,
    calls: ModelCalls,
    bank: TaskBank,
    setups: SetupCatalog,
    store: SharedStore,
    concurrency: int,
    progress: Callable[[BatchReport], None] | None,
    suites: Collection[str],
    cases: Collection[str],
) -> BatchReport:
    """The batch through the run store: queue what neither the warehouse nor the store
    holds, then make it like any worker (`runs.worker.work`, limited to these runs) until
    none is open: runs other workers hold are waited for, or taken over once their lease
    ends. Rows stay in the store until the publisher merges them."""
    started = time.perf_counter()
    queued = queue_runs(keys, connect, bank, setups, store, suites, cases)
    ids = queued.run_ids
    name = default_worker_name()
    shared = SharedResponses(getattr(calls, "cache", None), store, name)
    share = getattr(calls, "share_run_cache", None)
    if share is not None:
        share(shared)
    report = BatchReport(planned=queued.planned, skipped=queued.planned - len(ids) + queued.stored)

    def progressed(made: WorkerReport) -> None:
        report.recorded, report.calls, report.from_cache = made.stored, made.calls, made.from_cache
        if progress is not None:
            progress(report)

    async def batch() -> WorkerReport:
        try:
            return await work(
                store, bank, calls, worker=name, home=settings.bench_home(),
                concurrency=concurrency, only=ids, responses=shared, progress=progressed,
            )  # fmt: skip
        finally:
            await calls.aclose()

    made = asyncio.run(batch())
    if made.stopped:
        raise StoreUnreachable(made.stopped)
    progressed(made)
    report.cost_usd, report.unpriced = made.cost_usd, made.unpriced
    report.failures = store.failures(ids)
    report.seconds = time.perf_counter() - started
    return report
