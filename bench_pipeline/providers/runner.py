"""Run many requests through one provider with a bound on how many are in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider


async def run_all(
    provider: Provider, requests: Iterable[ChatRequest], concurrency: int
) -> list[ChatResponse]:
    """Answer every request, at most `concurrency` at a time; responses in request order.

    The first failure cancels the requests still running or waiting and is raised as is
    (responses already received stay in any cache the provider writes to).

    Raises:
        ValueError: `concurrency` is below 1.
        ProviderError: A request failed for good.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)

    async def one(request: ChatRequest) -> ChatResponse:
        async with gate:
            return await provider.complete(request)

    tasks = [asyncio.create_task(one(request)) for request in requests]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
