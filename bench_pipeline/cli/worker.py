"""`bench worker` and `bench queue`: model runs on many machines through the run store
(`runs/shared.py`, `runs/worker.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence
from typing import TextIO

from bench_pipeline.core import settings

NO_STORE = (
    "no run store: set DAGSTER_PG_HOST, DAGSTER_PG_PORT, DAGSTER_PG_USER, DAGSTER_PG_PASSWORD "
    "and DAGSTER_PG_DB (the PostgreSQL database of the Dagster instance, deploy/README.md)"
)


def worker(
    name: str | None,
    concurrency: int,
    batch: int | None,
    lease_seconds: float,
    until_empty: bool,
    poll_seconds: float,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Take queued model runs from the run store and make them until stopped (or, with
    `until_empty`, until none is open). Exit status 3 when the store could not be reached."""
    from bench_pipeline.resources.models import ModelCallsResource
    from bench_pipeline.runs.shared import (
        SharedResponses,
        StoreUnreachable,
        configured_store,
        default_worker_name,
    )
    from bench_pipeline.runs.worker import WorkerReport, work
    from bench_pipeline.taskbank import load_bank

    store = configured_store()
    if store is None:
        print(f"bench worker: {NO_STORE}", file=err)
        return 2
    name = name or default_worker_name()
    calls = ModelCallsResource(concurrency=concurrency).providers()
    shared = SharedResponses(calls.cache, store, name)
    calls.share_run_cache(shared)
    bank = load_bank()
    print(
        f"worker {name}: taking model runs from {store.address} ({calls.mode} model calls, "
        f"{concurrency} at a time, BENCH_HOME {settings.bench_home()})",
        file=out,
        flush=True,
    )

    shown = [0]

    def progress(report: WorkerReport) -> None:
        flushes = " ".join(f"{s * 1000:.1f}" for s in report.flush_seconds[shown[0] :])
        shown[0] = len(report.flush_seconds)
        print(
            f"worker {name}: {report.claimed} claimed, {report.stored} stored, "
            f"{report.calls} model calls, {report.from_cache} from cache, "
            f"{report.failed} failed; flush ms: {flushes or '-'}",
            file=out,
            flush=True,
        )

    async def run() -> WorkerReport:
        try:
            return await work(
                store,
                bank,
                calls,
                worker=name,
                home=settings.bench_home(),
                concurrency=concurrency,
                batch=batch,
                lease_seconds=lease_seconds,
                until_empty=until_empty,
                poll_seconds=poll_seconds,
                responses=shared,
                progress=progress,
            )
        finally:
            await calls.aclose()

    try:
        report = asyncio.run(run())
    except KeyboardInterrupt:
        released = "its runs go back to the queue when their lease ends"
        with contextlib.suppress(StoreUnreachable):
            released = f"{store.release(name)} runs it held are back in the queue"
        print(f"worker {name}: interrupted; {released}", file=err)
        return 130
    finally:
        store.close()
    progress(report)
    if report.stopped:
        print(report.stopped, file=err)
        return 3
    return 0


def queue(partitions: Sequence[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Queue the runs of `partitions` (default: every current one) for the workers, from
    this machine's warehouse (after `prepare_inputs`)."""
    from bench_pipeline.resources.warehouse import WarehouseResource
    from bench_pipeline.runs.batch import queue_runs
    from bench_pipeline.runs.plan import planned_partitions
    from bench_pipeline.runs.proposals import with_proposals
    from bench_pipeline.runs.shared import configured_store
    from bench_pipeline.taskbank import load_bank
    from bench_pipeline.taskbank.setups import load_setups

    store = configured_store()
    if store is None:
        print(f"bench queue: {NO_STORE}", file=err)
        return 2
    bank, setups = load_bank(), load_setups()
    opened = WarehouseResource().connection
    keys = list(partitions)
    if not keys:
        with opened() as conn:
            keys = planned_partitions(bank, with_proposals(conn, setups))
    queued = queue_runs(keys, opened, bank, setups, store)
    store.close()
    print(
        f"{len(keys)} partitions, {queued.planned} runs planned: {queued.queued} queued, "
        f"{queued.stored} made already and waiting for the merge, "
        f"{queued.planned - len(queued.run_ids)} in the warehouse",
        file=out,
    )
    return 0
