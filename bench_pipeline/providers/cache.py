"""A request → response cache keyed by `ChatRequest.request_hash()`, so reruns cost nothing.

Storage: a directory of JSON files, `<root>/<hash[:2]>/<hash>.json`, each holding the request
and its response. Chosen over a DuckDB table because:

- DuckDB allows one read-write process per file, and Dagster's multiprocess executor runs
  setup × case partitions in parallel processes: a shared table would serialise them on the
  file lock. Independent files need no lock: each is written to a temporary name and renamed
  into place (atomic on POSIX), so a reader sees a whole entry or none, and a crash leaves no
  half-written entry.
- The same files are the recorded store `RecordedProvider` replays: a cache directory can be
  checked in as fixtures, read and diffed by a person.

Deduplication of identical concurrent requests is per process (an asyncio lock per hash in
`CachedProvider`); two processes asking the same request at the same instant could both call
the model, the later write replacing the earlier (identical request, equally valid answer).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider


class ResponseStore(Protocol):
    """Anything that maps request hashes to stored responses."""

    def get(self, request_hash: str) -> ChatResponse | None: ...

    def put(self, request: ChatRequest, response: ChatResponse) -> None: ...


class ResponseCache:
    """A directory of JSON files, one per request hash (see the module docstring)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.root)!r})"

    def path_for(self, request_hash: str) -> Path:
        """Where the entry for `request_hash` lives (whether or not it exists)."""
        if len(request_hash) != 64 or any(c not in "0123456789abcdef" for c in request_hash):
            raise ValueError(f"not a request hash: {request_hash!r}")
        return self.root / request_hash[:2] / f"{request_hash}.json"

    def get(self, request_hash: str) -> ChatResponse | None:
        """The stored response for `request_hash`, or None."""
        path = self.path_for(request_hash)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        response = ChatResponse.model_validate(json.loads(text)["response"])
        if response.request_hash != request_hash:
            raise ValueError(f"{path} holds the response to {response.request_hash}")
        return response

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        """Store `response` as the answer to `request` (atomically replacing any old entry)."""
        request_hash = request.request_hash()
        if response.request_hash != request_hash:
            raise ValueError(
                f"response answers {response.request_hash}, not this request ({request_hash})"
            )
        path = self.path_for(request_hash)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "request": request.model_dump(mode="json"),
            "response": response.model_copy(update={"from_cache": False}).model_dump(mode="json"),
        }
        text = json.dumps(entry, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{request_hash}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def hashes(self) -> Iterator[str]:
        """Every request hash stored."""
        for path in sorted(self.root.glob("??/*.json")):
            yield path.stem

    def __contains__(self, request_hash: object) -> bool:
        try:
            return isinstance(request_hash, str) and self.path_for(request_hash).is_file()
        except ValueError:
            return False

    def __len__(self) -> int:
        return sum(1 for _ in self.hashes())


@dataclass
class _Flight:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class CachedProvider(Provider):
    """Answers from `cache` when it can; otherwise asks `inner` once and stores the answer.

    Identical requests in flight at the same time share one call: the second waits for the
    first and is then served from the cache. A failed call is not stored (the next request
    tries again). Simulated answers are passed through but never stored: they cost nothing
    to make again and must never be served in place of a real model's answer.
    """

    name = "cached"

    def __init__(self, inner: Provider, cache: ResponseStore) -> None:
        self.inner = inner
        self.cache = cache
        self.simulated = inner.simulated
        self._flights: dict[str, _Flight] = {}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The cached answer (`from_cache=True`), or the inner provider's, now stored."""
        request_hash = request.request_hash()
        flight = self._flights.setdefault(request_hash, _Flight())
        flight.users += 1
        try:
            async with flight.lock:
                cached = self.cache.get(request_hash)
                if cached is not None:
                    return cached.model_copy(update={"from_cache": True})
                response = await self.inner.complete(request)
                if not response.simulated:
                    # In a worker thread: creating the entry's file costs about a millisecond
                    # on this machine, which would stall every other call in flight.
                    await asyncio.to_thread(self.cache.put, request, response)
                return response
        finally:
            flight.users -= 1
            if flight.users == 0:
                del self._flights[request_hash]
