"""Several httpx clients used in turn, for many concurrent calls to one API.

httpcore's connection pool looks over every connection for every request it queues or
releases, so at high concurrency one big pool spends its time scanning itself (measured with
`python -m benchmarks --only calls`: one client with 32 connections reached about half the
ideal call rate, four clients of 8 connections well above it). Splitting the connections
over small clients keeps each scan short; calls take the clients in turn.
"""

from __future__ import annotations

import itertools
import math

import httpx

CONNECTIONS_PER_CLIENT = 8


class ClientPool:
    """`ceil(concurrency / per_client)` clients of `per_client` connections each."""

    def __init__(
        self,
        concurrency: int,
        *,
        timeout: httpx.Timeout | float,
        per_client: int = CONNECTIONS_PER_CLIENT,
    ) -> None:
        if concurrency < 1 or per_client < 1:
            raise ValueError("concurrency and per_client must be at least 1")
        size = min(per_client, concurrency)
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self.clients = [
            httpx.AsyncClient(limits=limits, timeout=timeout)
            for _ in range(math.ceil(concurrency / size))
        ]
        self._turn = itertools.cycle(self.clients)

    def next(self) -> httpx.AsyncClient:
        """The client whose turn it is."""
        return next(self._turn)

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()
