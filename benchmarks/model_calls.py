"""Model-call throughput: 2,000 chat completions against a loopback server that answers each
after 50 ms, at concurrency 32, through the pipeline's real path (`CachedProvider` over
`OpenAICompatibleProvider`, every answer written to the response
cache).

The pipeline path spreads its connections over a `ClientPool` (see its docstring). The ideal
is concurrency / latency = 640 calls/s; the figure printed is achieved ÷ ideal
(goal ≥ 0.8). Measured in the same run for comparison: bare httpx posts at the same
concurrency on one plain httpx client (no provider layer, no cache, no pool). The
server is a small asyncio HTTP/1.1 server in its own process (keep-alive, counts requests), so
the client's event loop does not share a GIL with it. Nothing may be lost: every call
answered, every answer cached once, the server's count equal to the calls made.

    python -m benchmarks --only calls [--calls N] [--concurrency C] [--latency S]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench_pipeline.providers import (
    CachedProvider,
    ChatRequest,
    OpenAICompatibleProvider,
    ResponseCache,
    run_all,
)
from bench_pipeline.providers.pool import ClientPool

CALLS = 2_000
CONCURRENCY = 32
LATENCY = 0.05
GOAL = 0.8


async def _serve(latency: float, ready, count) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = json.loads(await reader.readexactly(length)) if length else {}
                await asyncio.sleep(latency)
                with count.get_lock():
                    count.value += 1
                answer = json.dumps({
                    "id": "bench", "model": body.get("model", "?"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "ok"}}],
                    "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
                }).encode()  # fmt: skip
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(answer)}\r\n\r\n".encode()
                    + answer
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    ready.put(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def _server_process(latency: float, ready, count) -> None:
    asyncio.run(_serve(latency, ready, count))


def _requests(calls: int) -> list[ChatRequest]:
    return [
        ChatRequest(model="bench/model", messages=[{"role": "user", "content": f"case {i}"}])
        for i in range(calls)
    ]


async def _bare(url: str, requests: list[ChatRequest], concurrency: int) -> int:
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def one(request: ChatRequest) -> int:
            async with gate:
                response = await client.post(url + "/chat/completions", json=request.body())
                return response.status_code

        statuses = await asyncio.gather(*(one(r) for r in requests))
    return sum(1 for s in statuses if s == 200)


async def _pipeline(url: str, requests: list[ChatRequest], concurrency: int, cache: Path) -> int:
    pool = ClientPool(concurrency, timeout=30)
    try:
        provider = CachedProvider(
            OpenAICompatibleProvider(None, base_url=url, client=pool), ResponseCache(cache)
        )
        responses = await run_all(provider, requests, concurrency)
    finally:
        await pool.aclose()
    return sum(1 for r in responses if r.content == "ok" and not r.from_cache)


def run(calls: int = CALLS, concurrency: int = CONCURRENCY, latency: float = LATENCY) -> int:
    context = multiprocessing.get_context("spawn")
    ready, count = context.Queue(), context.Value("i", 0)
    server = context.Process(target=_server_process, args=(latency, ready, count), daemon=True)
    server.start()
    try:
        url = f"http://127.0.0.1:{ready.get(timeout=30)}/v1"
        ideal = concurrency / latency
        print(f"model calls: {calls} calls, {latency * 1000:.0f} ms each, concurrency "
              f"{concurrency}; ideal {ideal:.0f} calls/s")  # fmt: skip

        started = time.perf_counter()
        bare_ok = asyncio.run(_bare(url, _requests(calls), concurrency))
        bare_rate = calls / (time.perf_counter() - started)

        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder)
            before = count.value
            started = time.perf_counter()
            answered = asyncio.run(_pipeline(url, _requests(calls), concurrency, cache))
            rate = calls / (time.perf_counter() - started)
            served = count.value - before
            cached = len(ResponseCache(cache))
            started = time.perf_counter()
            replayed = asyncio.run(_pipeline(url, _requests(calls), concurrency, cache))
            replay_seconds = time.perf_counter() - started
            served_again = count.value - before - served
    finally:
        server.kill()

    lost = calls - answered
    print(f"  bare httpx (baseline):       {bare_rate:7.0f} calls/s = {bare_rate / ideal:.2f} "
          f"× ideal ({bare_ok}/{calls} ok)")  # fmt: skip
    print(f"  provider + response cache:   {rate:7.0f} calls/s = {rate / ideal:.2f} × ideal, "
          f"{rate / bare_rate:.2f} × baseline")  # fmt: skip
    print(f"  answered {answered}/{calls}, server saw {served}, cached {cached}, lost {lost}")
    print(f"  rerun from the cache: {replay_seconds:.2f} s, {served_again} calls made, "
          f"{calls - replayed} served from cache")  # fmt: skip
    met = rate / ideal >= GOAL and lost == 0 and served == calls == cached and served_again == 0
    print(f"  goal ≥ {GOAL} × ideal with nothing lost: {'met' if met else 'NOT met'}")
    return 0 if met else 1


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument("--latency", type=float, default=LATENCY)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.model_calls")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args.calls, args.concurrency, args.latency)


if __name__ == "__main__":
    raise SystemExit(main())
