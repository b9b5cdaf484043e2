"""The response cache at 50,000 entries: a reader process's peak memory, and lookup times.

A journal of 50,000 answers of about 20 kB each (about 1 GB, the size the cache reaches
after a long campaign) is written through `ResponseCache.put`. Then, each in a fresh
process:

* baseline: a process that imports the provider layer and opens nothing, the floor every
  reader pays.
* first reader: opens the cache with no index yet and looks up 2,000 entries (the first
  lookup indexes the whole journal, streamed in bounded chunks).
* warm reader: the same lookups with the index built.

Every lookup must return its own answer (checked). Printed: each process's peak resident
memory (`VmHWM`, `benchmarks.memory`) and the lookups' wall time. Goal: a reader's peak
under 100 MB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Message, Usage
from bench_pipeline.providers.cache import ResponseCache

ENTRIES = 50_000
SIZE = 20_000
LOOKUPS = 2_000
GOAL_MB = 100.0
SEED = 20_261_201

_READER = """
import json, random, sys, time
from bench_pipeline.providers.cache import ResponseCache
from benchmarks.memory import peak_rss_mb
from benchmarks.response_cache import request_for
root, entries, lookups, seed, read = sys.argv[1], *map(int, sys.argv[2:6])
start = time.perf_counter()
found = 0
if read:
    cache = ResponseCache(root)
    for n in random.Random(seed).sample(range(entries), lookups):
        response = cache.get(request_for(n).request_hash())
        found += response is not None and response.content.startswith(f"answer {n} ")
print(json.dumps({"found": found, "seconds": time.perf_counter() - start,
                  "peak_mb": peak_rss_mb()}))
"""


def request_for(n: int) -> ChatRequest:
    """The n-th benchmark request (the same in every process)."""
    return ChatRequest(model="bench/model", messages=(Message(role="user", content=f"q {n}"),))


def _fill(root: Path, entries: int, size: int) -> None:
    cache = ResponseCache(root)
    padding = "x" * size
    for n in range(entries):
        request = request_for(n)
        cache.put(
            request,
            ChatResponse(
                request_hash=request.request_hash(),
                model=request.model,
                content=f"answer {n} {padding}",
                finish_reason="stop",
                usage=Usage(prompt_tokens=10, completion_tokens=size // 4),
                wall_seconds=0.5,
                provider="benchmark",
            ),
        )


def _reader(root: Path, entries: int, lookups: int, read: bool) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _READER,
            str(root),
            str(entries),
            str(lookups),
            str(SEED),
            str(int(read)),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(out.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit status 1 when the goal is missed or an answer is wrong."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.response_cache")
    parser.add_argument("--entries", type=int, default=ENTRIES)
    args = parser.parse_args(argv)
    lookups = min(LOOKUPS, args.entries)
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as folder:
        root = Path(folder)
        start = time.perf_counter()
        _fill(root, args.entries, SIZE)
        written = time.perf_counter() - start
        journal_mb = (root / "responses.jsonl").stat().st_size / 1e6
        floor = _reader(root, args.entries, lookups, read=False)
        first = _reader(root, args.entries, lookups, read=True)
        warm = _reader(root, args.entries, lookups, read=True)
    print(
        f"Response cache, {args.entries:,} entries ({journal_mb:,.0f} MB journal, "
        f"written in {written:.1f} s), {lookups:,} lookups per reader"
    )
    print(f"  baseline      import only        peak {floor['peak_mb']:6.1f} MB")
    for name, run in (("first reader", first), ("warm reader", warm)):
        print(
            f"  {name:12s}  {run['seconds']:6.2f} s lookups  peak {run['peak_mb']:6.1f} MB "
            f"({run['peak_mb'] / floor['peak_mb']:.2f}× the baseline), "
            f"{int(run['found']):,}/{lookups:,} found"
        )
    peak = max(first["peak_mb"], warm["peak_mb"])
    met = peak < GOAL_MB and first["found"] == warm["found"] == lookups
    print(f"  goal (a reader's peak under {GOAL_MB:.0f} MB) " + ("met" if met else "NOT met"))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
