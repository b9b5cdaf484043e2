"""A model-run worker: claims queued runs from the PostgreSQL run store, makes them and
stores them there (`runs/shared.py`). Any number of workers, on any machines, each with its
own `BENCH_HOME`, share one queue; none opens a warehouse.

The loop: take a few open runs (a claim with a lease), rebuild each from the worker's own
task bank, answer them at most `concurrency` at a time through `runs.execute.execute_batch`
(the same rows, costs and flushes as on one machine), store each flush in one transaction
that also closes the runs' queue rows, and take more. A heartbeat thread renews the leases
of every run the worker holds, so only a worker that died (or lost the server) lets its
runs go back to the queue when their lease ends. A response is stored in the shared cache
the moment it arrives, so a run taken over after its worker died is served from there,
unless its call was still in flight.

When the store cannot be reached the worker takes no more work and stops with the reason
(`WorkerStopped`). Nothing is lost: each answer it got is in its own response cache, and
rows it could not store are kept in `$BENCH_HOME/spool/runs.jsonl`, which the next start
stores first (a row stored twice is kept once).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider
from bench_pipeline.runs.execute import BatchReport, execute_batch
from bench_pipeline.runs.plan import WorkItem
from bench_pipeline.runs.shared import (
    DEFAULT_LEASE_SECONDS,
    ItemError,
    SharedResponses,
    SharedStore,
    StoreUnreachable,
    decode_item,
    decode_row,
    encode_row,
)
from bench_pipeline.runs.store import RUN_COLUMNS
from bench_pipeline.taskbank import TaskBank

SPOOL = "runs.jsonl"
LANES = 2
"""Claims a worker works on at once, sharing its `concurrency`: while one claim's last calls
finish and its rows are stored, the other's calls keep the worker's calls in flight."""


class _Gated(Provider):
    """A provider whose calls wait for a place in the worker's shared gate."""

    def __init__(self, inner: Provider, gate: asyncio.Semaphore) -> None:
        self.inner = inner
        self.gate = gate
        self.name = inner.name
        self.simulated = inner.simulated

    async def complete(self, request: ChatRequest) -> ChatResponse:
        async with self.gate:
            return await self.inner.complete(request)


class WorkerStopped(RuntimeError):
    """The worker stopped taking work: the run store could not be reached."""


@dataclass
class WorkerReport:
    """What a worker did."""

    claimed: int = 0
    stored: int = 0
    """Rows new to the store (a row another worker stored first is not counted)."""
    calls: int = 0
    from_cache: int = 0
    failed: int = 0
    cost_usd: Decimal = Decimal(0)
    unpriced: int = 0
    flush_seconds: list[float] = field(default_factory=list)
    """Seconds of each flush to the store (the write and the queue update together)."""
    stopped: str | None = None
    """Why the worker stopped early, or None."""


class Heartbeat:
    """Renews the worker's leases every third of a lease, on its own connection."""

    def __init__(self, store: SharedStore, worker: str, lease_seconds: float) -> None:
        self.store = store.copy()
        self.worker = worker
        self.lease_seconds = lease_seconds
        self.failure: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.store.close()

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            try:
                self.store.renew(self.worker, self.lease_seconds)
            except StoreUnreachable as error:
                self.failure = str(error)
            else:
                self.failure = None


def spool_path(home: Path) -> Path:
    return home / "spool" / SPOOL


def store_or_spool(
    store: SharedStore, worker: str, rows: Sequence[Mapping[str, Any]], spool: Path
) -> int | None:
    """Store rows, or append them to the spool file when the store cannot be reached.
    Returns the rows new to the store, or None when they were spooled."""
    try:
        return store.store_runs(worker, rows)
    except StoreUnreachable:
        spool.parent.mkdir(parents=True, exist_ok=True)
        with spool.open("a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(encode_row(row)) + "\n")
        raise


def drain_spool(store: SharedStore, worker: str, spool: Path) -> int:
    """Store the rows an earlier start could not (then empty the spool). Returns the rows
    read; a torn last line (a kill mid-write) is skipped, its run is made again."""
    if not spool.exists():
        return 0
    rows = []
    for line in spool.read_text(encoding="utf-8").splitlines():
        try:
            stored = json.loads(line)
        except ValueError:
            continue
        rows.append(dict(zip(RUN_COLUMNS, decode_row(stored), strict=True)))
    if rows:
        store.store_runs(worker, rows)
    spool.unlink()
    return len(rows)


async def work(
    store: SharedStore,
    bank: TaskBank,
    provider_for: Callable[[WorkItem], Provider],
    *,
    worker: str,
    home: Path,
    concurrency: int = 8,
    batch: int | None = None,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    until_empty: bool = True,
    poll_seconds: float = 2.0,
    only: Sequence[str] | None = None,
    responses: SharedResponses | None = None,
    progress: Callable[[WorkerReport], None] | None = None,
) -> WorkerReport:
    """Take and make queued runs until none is left (or forever, polling, when not
    `until_empty`).

    Args:
        store: The run store.
        bank: This worker's task bank (queued runs name their case versions).
        provider_for: The provider of an item, its response cache shared through the store.
        worker: This worker's name (in its claims and rows), unique among live workers:
            claims left under it by an earlier start are given back first.
        home: Its `BENCH_HOME` (the spool lives there).
        concurrency: Calls in flight at most.
        batch: Runs claimed at a time (default: four times `concurrency`).
        lease_seconds: How long a claim outlives its worker's last renewal.
        until_empty: Stop when no run is open any more (held by others included).
        poll_seconds: Wait between looks at an empty queue.
        only: Only these run ids (the publisher's own batch).
        responses: The shared response cache `provider_for` answers through: looked up
            once per claim for all its runs, and asked why the store is down.
        progress: Called after each batch with the report so far.

    Returns:
        The report; `stopped` says why the worker stopped early (the store unreachable).
    """
    report = WorkerReport()
    spool = spool_path(home)
    size = batch or 4 * concurrency
    gate = asyncio.Semaphore(concurrency)

    def gated(item: WorkItem) -> Provider:
        return _Gated(provider_for(item), gate)

    async def lane(heartbeat: Heartbeat) -> None:
        while True:
            reason = (responses.down if responses else None) or heartbeat.failure
            if reason:
                raise StoreUnreachable(reason)
            claims = store.claim(worker, size, lease_seconds, only)
            if not claims:
                if until_empty and store.outstanding(only) == 0:
                    return
                await asyncio.sleep(poll_seconds)
                continue
            report.claimed += len(claims)
            await _make(store, bank, gated, claims, worker, spool, concurrency, report, responses)
            if progress is not None:
                progress(report)

    try:
        drain_spool(store, worker, spool)
        # Claims under this name are a previous life's (a name is unique among live
        # workers): its heartbeat would renew them for ever, so they go back to the queue.
        store.release(worker)
        with Heartbeat(store, worker, lease_seconds) as heartbeat:
            lanes = [asyncio.create_task(lane(heartbeat)) for _ in range(LANES)]
            try:
                await asyncio.gather(*lanes)
            finally:
                for task in lanes:
                    task.cancel()
    except StoreUnreachable as error:
        report.stopped = (
            f"worker {worker} stopped taking work: {error}. Runs it held go back to the queue "
            f"when their lease ends ({lease_seconds:.0f} s); rows it could not store are in "
            f"{spool} and are stored at its next start."
        )
    return report


async def _make(
    store: SharedStore,
    bank: TaskBank,
    provider_for: Callable[[WorkItem], Provider],
    claims: Sequence[Any],
    worker: str,
    spool: Path,
    concurrency: int,
    report: WorkerReport,
    responses: SharedResponses | None,
) -> None:
    items: list[WorkItem] = []
    unbuildable: dict[str, str] = {}
    for claim in claims:
        try:
            items.append(decode_item(claim.run_id, claim.item, bank))
        except (ItemError, KeyError, TypeError, ValueError) as error:
            unbuildable[claim.run_id] = f"{claim.partition_key}: {error}"
    rates = store.rates({item.setup.model.api_id for item in items})
    if responses is not None:
        responses.prefetch([item.request().request_hash() for item in items])
    lost: list[StoreUnreachable] = []

    def record(rows: list[dict[str, Any]]) -> None:
        started = time.perf_counter()
        try:
            new = store_or_spool(store, worker, rows, spool)
        except StoreUnreachable as error:
            lost.append(error)
            return
        report.flush_seconds.append(time.perf_counter() - started)
        report.stored += new or 0

    batch_report: BatchReport = await execute_batch(
        items, provider_for, rates, record, concurrency=concurrency
    )
    report.calls += batch_report.calls
    report.from_cache += batch_report.from_cache
    report.cost_usd += batch_report.cost_usd
    report.unpriced += batch_report.unpriced
    reason = responses.down if responses else None
    if lost or reason:
        # Failures while the store was away are the store's, not the runs': the runs go back
        # to the queue when the lease ends.
        raise lost[0] if lost else StoreUnreachable(str(reason))
    failures = {**unbuildable, **batch_report.failures}
    if failures:
        store.store_failures(worker, failures)
        report.failed += len(failures)
