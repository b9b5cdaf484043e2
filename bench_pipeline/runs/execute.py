"""Execute a batch of work items: call the models, price each run, hand the rows to storage.

Resumable by construction, at two levels:

- a run id already stored is skipped (never called, never costed again);
- a response already in the request cache (`CachedProvider`) is served without a call, which
  covers a batch killed between a model's answer and the row being stored.

Rows are handed to `record` in small batches as runs finish, so a killed batch loses at most
the runs in flight. One failed run does not stop the others: failures are collected and
returned with their error, and the caller decides (the Dagster asset stores them and fails).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from bench_pipeline.providers.base import ChatResponse, Provider, ProviderError
from bench_pipeline.runs.costing import Rates, cost_of, rate_in_effect
from bench_pipeline.runs.plan import WorkItem

USAGE_MISSING = "usage_missing"
FLUSH_EVERY = 25


@dataclass
class BatchReport:
    """What a batch did; `cost_usd` sums the runs it recorded whose cost is known."""

    planned: int = 0
    skipped: int = 0
    """Already stored before the batch (resumed past)."""
    recorded: int = 0
    calls: int = 0
    """Requests answered by a provider call (not the cache)."""
    from_cache: int = 0
    cost_usd: Decimal = Decimal(0)
    unpriced: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    """run id -> error, for runs that failed for good."""
    seconds: float = 0.0


def rates_for_run(item: WorkItem, rates: Mapping[str, Sequence[Rates]], day: date) -> Rates | None:
    """The setup's rates in effect on `day`: 0 for a local model, else the dated row."""
    if item.setup.model.local:
        return Rates.local_model(day)
    return rate_in_effect(rates.get(item.setup.model.api_id, ()), day)


def evidence_sha256(response: ChatResponse) -> str:
    """SHA-256 of the stored response (the run's evidence), as canonical JSON."""
    body = response.model_dump(mode="json", exclude={"from_cache"})
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def run_row(
    item: WorkItem, response: ChatResponse, rates: Rates | None, day: date, now: datetime
) -> dict[str, Any]:
    """The `model_runs` row of one finished run."""
    usage = response.usage
    if usage is None:
        cost, warnings = None, [USAGE_MISSING]
    else:
        result = cost_of(usage, rates)
        cost, warnings = result.cost_usd, result.warnings
    request = item.request()
    return {
        "run_id": item.run_id,
        "partition_key": item.partition_key,
        "setup_id": item.setup.setup_id,
        "suite": item.case.suite,
        "case_id": item.case.id,
        "case_version": item.case.version,
        "input_id": item.prompt.input_id,
        "repeat": item.repeat,
        "run_date": day,
        "request_hash": response.request_hash,
        "output": response.content,
        "finish_reason": response.finish_reason,
        "max_tokens": request.max_tokens,
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "completion_tokens": usage.completion_tokens if usage else None,
        "cached_tokens": usage.cached_tokens if usage else None,
        "cache_write_tokens": usage.cache_write_tokens if usage else None,
        "reasoning_tokens": usage.reasoning_tokens if usage else None,
        "cost_usd": cost,
        "cost_warnings": ",".join(warnings),
        "wall_seconds": response.wall_seconds,
        "ttft_seconds": response.ttft_seconds,
        "retries": response.retries,
        "provider": response.provider,
        "simulated": response.simulated,
        "evidence_sha256": evidence_sha256(response),
        "recorded_at": now.replace(tzinfo=None),
    }


async def execute_batch(
    items: Sequence[WorkItem],
    provider_for: Callable[[WorkItem], Provider],
    rates: Mapping[str, Sequence[Rates]],
    record: Callable[[list[dict[str, Any]]], None],
    *,
    done: set[str] | frozenset[str] = frozenset(),
    concurrency: int = 8,
    progress: Callable[[BatchReport], None] | None = None,
) -> BatchReport:
    """Run every item whose run id is not in `done`, at most `concurrency` at a time.

    Args:
        items: The work.
        provider_for: The provider that answers an item (by its setup).
        rates: Dated rates by exact API id (`rates.rates_by_api_id`).
        record: Stores finished rows (called with up to `FLUSH_EVERY` rows at a time, and
            once more at the end for the rest).
        done: Run ids already stored: skipped.
        concurrency: Calls in flight at most.
        progress: Called after each finished run with the report so far.

    Returns:
        The report; runs that failed for good are in `failures` (not raised).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    started = time.perf_counter()
    report = BatchReport(planned=len(items))
    todo = [item for item in items if item.run_id not in done]
    report.skipped = len(items) - len(todo)
    gate = asyncio.Semaphore(concurrency)
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            record(list(pending))
            report.recorded += len(pending)
            pending.clear()

    async def one(item: WorkItem) -> None:
        async with gate:
            try:
                response = await provider_for(item).complete(item.request())
            except ProviderError as error:
                report.failures[item.run_id] = f"{item.partition_key}: {error}"
                return
        now = datetime.now(UTC)
        day = now.date()
        row = run_row(item, response, rates_for_run(item, rates, day), day, now)
        if response.from_cache:
            report.from_cache += 1
        else:
            report.calls += 1
        if row["cost_usd"] is None:
            report.unpriced += 1
        else:
            report.cost_usd += row["cost_usd"]
        pending.append(row)
        if len(pending) >= FLUSH_EVERY:
            flush()
        if progress is not None:
            progress(report)

    try:
        await asyncio.gather(*(one(item) for item in todo))
    finally:
        flush()
        report.seconds = time.perf_counter() - started
    return report
