"""A request → response cache keyed by `ChatRequest.request_hash()`, so reruns cost nothing.

Storage, under one directory:

- `responses.jsonl`, the journal every writer appends to: one JSON object per line,
  `{"hash": ..., "request": ..., "response": ...}`, the hash first so the journal is indexed
  without parsing whole entries. Appending is one `write` on a file opened `O_APPEND`, so
  processes writing at once (Dagster's multiprocess executor) never interleave entries and
  need no lock, and an entry is in the file the moment its call returns: a killed process
  loses nothing it was told. Each entry starts on a fresh line, so the torn tail a kill
  mid-write can leave spoils only itself (it is read as missing and asked again).
- `responses.index.sqlite`, where each journal entry sits (hash → offset, length), so a
  process looks an answer up without holding the journal in memory: a reader's memory does
  not grow with the journal (at 50,000 entries the old in-memory scan read 986 MB). It is
  derived, never the truth: writers only append to the journal, and a reader that misses
  indexes the entries appended since the index's high-water mark, streaming them in
  bounded chunks, in one `BEGIN IMMEDIATE` transaction (so processes catching up at once
  take turns). A writer indexes its own batch of entries from memory when the journal since
  the mark is exactly that batch (nobody else appended in between), without reading it
  back. A lost or unreadable index is rebuilt from the journal; a journal shorter than the
  index says (replaced by hand) is indexed again from the start.
- `<hash[:2]>/<hash>.json`, one file per entry, read but never written here: recordings a
  person checks in or edits by hand.

Entries are written with pydantic's JSON of the request and the response (field order, not
sorted; older journals with sorted keys read the same). Nothing is fsynced: an entry survives
a killed process (it is in the kernel's page cache), not a power cut, as before.

Why a journal: creating a file costs about 0.6 ms of kernel time on this machine (measured
with a throwaway script), as much as the rest of a call's client-side work, so a file per
answer kept `python -m benchmarks --only calls` well under its goal; an append costs
microseconds. Why not DuckDB: it allows one read-write process per file, and partitions run
in parallel processes.

Deduplication of identical concurrent requests is per process (an asyncio lock per hash in
`CachedProvider`); two processes asking the same request at the same instant could both call
the model, the later entry winning (identical request, equally valid answer).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider

JOURNAL = "responses.jsonl"
INDEX = "responses.index.sqlite"
CHUNK = 4 << 20
"""Journal bytes read at a time while indexing: a reader's memory stays bounded by this."""
PENDING_LIMIT = 1_024
"""A writer's own entries kept in memory before it indexes them."""
_HASH = re.compile(rb"[0-9a-f]{64}")
_HASH_TEXT = re.compile(r"[0-9a-f]{64}")
_HEAD = b'{"hash":"'


class ResponseStore(Protocol):
    """Anything that maps request hashes to stored responses."""

    def get(self, request_hash: str) -> ChatResponse | None: ...

    def put(self, request: ChatRequest, response: ChatResponse) -> None: ...


class ResponseCache:
    """A journal of entries plus hand-kept entry files (see the module docstring)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.journal = self.root / JOURNAL
        self.index_path = self.root / INDEX
        self._journal_name = str(self.journal)
        self._lock = threading.Lock()
        self._appender: int | None = None
        self._db: sqlite3.Connection | None = None
        self._db_pid = 0  # a connection never crosses a fork
        # This process's own entries not yet in the index (hash → offset, length), and the
        # journal size it can account for: a miss consults the index file again only when
        # the journal grew by more than this process wrote (another process answered).
        self._pending: dict[str, tuple[int, int]] = {}
        self._known_size = -1

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.root)!r})"

    def __del__(self) -> None:
        if self._appender is not None:
            os.close(self._appender)
        if self._db is not None and self._db_pid == os.getpid():
            self._db.close()

    def path_for(self, request_hash: str) -> Path:
        """Where a hand-kept entry file for `request_hash` lives (whether or not it exists)."""
        _check_hash(request_hash)
        return self.root / request_hash[:2] / f"{request_hash}.json"

    def get(self, request_hash: str) -> ChatResponse | None:
        """The stored response for `request_hash`, or None."""
        _check_hash(request_hash)
        response = self._from_journal(request_hash)
        if response is not None:
            return response
        # Every miss looks here before the model is asked: a plain string and one `access`
        # (no `Path` objects, no exception for the usual absent file), a measurable share
        # of a call's client-side work.
        path = f"{self.root}{os.sep}{request_hash[:2]}{os.sep}{request_hash}.json"
        if not os.access(path, os.F_OK):
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return None
        response = ChatResponse.model_validate(json.loads(text)["response"])
        if response.request_hash != request_hash:
            raise ValueError(f"{path} holds the response to {response.request_hash}")
        return response

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        """Append `response` as the answer to `request` (a later entry replaces an earlier)."""
        request_hash = request.request_hash()
        if response.request_hash != request_hash:
            raise ValueError(
                f"response answers {response.request_hash}, not this request ({request_hash})"
            )
        # pydantic's own JSON (a third of the time of `model_dump` + `json.dumps`): the same
        # values read back, JSON escapes every line break, and an object ends the entry.
        if response.from_cache:
            response = response.model_copy(update={"from_cache": False})
        stored = response.model_dump_json()
        entry = (
            f'\n{{"hash":"{request_hash}","request":{request.model_dump_json()},'
            f'"response":{stored}}}\n'
        ).encode()
        with self._lock:
            if self._appender is None:
                self.root.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
                self._appender = os.open(self.journal, flags, 0o644)
            written = os.write(self._appender, entry)
            if written != len(entry):
                raise OSError(f"{self.journal}: wrote {written} of {len(entry)} bytes")
            # With O_APPEND the file position is now the end of this entry, whoever else wrote.
            end = os.lseek(self._appender, 0, os.SEEK_CUR)
            self._pending[request_hash] = (end - len(entry) + 1, len(entry) - 2)
            if self._known_size >= 0:
                self._known_size += len(entry)
            if len(self._pending) >= PENDING_LIMIT:
                self._catch_up()  # index them, so this process's memory stays bounded

    def hashes(self) -> Iterator[str]:
        """Every request hash stored, in order."""
        with self._lock:
            self._catch_up()
            journaled = {
                row[0].hex() for row in self._connection().execute("SELECT hash FROM entries")
            }
        files = {path.stem for path in self.root.glob("??/*.json")}
        yield from sorted(journaled | files)

    def __contains__(self, request_hash: object) -> bool:
        try:
            return isinstance(request_hash, str) and self.get(request_hash) is not None
        except ValueError:
            return False

    def __len__(self) -> int:
        return sum(1 for _ in self.hashes())

    def _from_journal(self, request_hash: str) -> ChatResponse | None:
        with self._lock:
            place = self._pending.get(request_hash)
            if place is None:
                # Bytes another process appended may answer the hash, or answer it again
                # (a later entry replaces an earlier): index them before looking.
                if self._journal_grew():
                    self._catch_up()
                place = self._lookup(request_hash)
        if place is None:
            return None
        offset, length = place
        with open(self._journal_name, "rb") as handle:
            handle.seek(offset)
            line = handle.read(length)
        try:
            response = ChatResponse.model_validate(json.loads(line)["response"])
        except (ValueError, KeyError, TypeError):
            return None  # a torn entry: ask again, and the new entry replaces it
        return response if response.request_hash == request_hash else None

    def _connection(self) -> sqlite3.Connection:
        """This process's connection to the index, made (and the index created) on first use."""
        if self._db is not None and self._db_pid == os.getpid():
            return self._db
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open_index()
        except sqlite3.DatabaseError:  # not an index any more (overwritten, torn): rebuild it
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.index_path}{suffix}").unlink(missing_ok=True)
            self._db = self._open_index()
        self._db_pid = os.getpid()
        return self._db

    def _open_index(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.index_path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # derived data: a lost tail is re-indexed
        db.execute(
            "CREATE TABLE IF NOT EXISTS entries "
            "(hash BLOB PRIMARY KEY, offset INTEGER NOT NULL, length INTEGER NOT NULL)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS progress (indexed_to INTEGER NOT NULL)")
        db.execute("INSERT INTO progress SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM progress)")
        return db

    def _lookup(self, request_hash: str) -> tuple[int, int] | None:
        row = (
            self._connection()
            .execute(
                "SELECT offset, length FROM entries WHERE hash = ?", (bytes.fromhex(request_hash),)
            )
            .fetchone()
        )
        return None if row is None else (row[0], row[1])

    def _journal_grew(self) -> bool:
        """Whether the journal holds bytes this process has not accounted for."""
        try:
            return os.stat(self._journal_name).st_size != self._known_size
        except FileNotFoundError:
            return False

    def _catch_up(self) -> bool:
        """Index the entries appended since the index's high-water mark (holding `_lock`).

        Returns:
            Whether anything was indexed.
        """
        try:
            size = self.journal.stat().st_size
        except FileNotFoundError:
            return False
        db = self._connection()
        (indexed_to,) = db.execute("SELECT indexed_to FROM progress").fetchone()
        if size == indexed_to:  # another process indexed it all already
            self._known_size = size
            self._pending = {h: place for h, place in self._pending.items() if place[0] >= size}
            return False
        db.execute("BEGIN IMMEDIATE")
        try:
            (indexed_to,) = db.execute("SELECT indexed_to FROM progress").fetchone()
            own = self._own_rows(indexed_to, size)
            if size < indexed_to:  # the journal was replaced: index it again from the start
                db.execute("DELETE FROM entries")
                indexed_to, own = 0, None
            if own is not None:  # a writer's own batch: what it holds in memory, not re-read
                db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", own)
                position = read = size
            else:
                position, read = self._index_from_journal(db, indexed_to)
            db.execute("UPDATE progress SET indexed_to = ?", (position,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._known_size = read
        self._pending = {h: place for h, place in self._pending.items() if place[0] >= position}
        return position != indexed_to

    def _own_rows(self, start: int, end: int) -> list[tuple[bytes, int, int]] | None:
        """Index rows for the journal bytes `[start, end)` when they are exactly this
        process's own pending entries, back to back (nobody else appended in between, no
        torn tail), else None: then the journal must be read."""
        rows = []
        position = start
        for request_hash, (offset, length) in sorted(
            self._pending.items(), key=lambda item: item[1][0]
        ):
            if offset <= start:
                continue  # indexed already (by another process catching up)
            if offset - 1 != position:  # each entry is its line break, the line, a line break
                return None
            rows.append((bytes.fromhex(request_hash), offset, length))
            position = offset + length + 1
        return rows if rows and position == end else None

    def _index_from_journal(self, db: sqlite3.Connection, indexed_to: int) -> tuple[int, int]:
        """Index the whole entries from `indexed_to` on, reading the journal in chunks.

        Returns:
            The position indexed to (the end of the last complete line) and the bytes read.
        """
        with self.journal.open("rb") as handle:
            handle.seek(indexed_to)
            position, carry = indexed_to, b""
            read = indexed_to
            while chunk := handle.read(CHUNK):
                read += len(chunk)
                lines = (carry + chunk).split(b"\n")
                carry = lines.pop()  # only complete lines: a writer may be mid-entry
                entries = []
                for line in lines:
                    # A torn entry almost never ends like a whole one; `get` parses anyway.
                    if (
                        line.startswith(_HEAD)
                        and _HASH.fullmatch(line, 9, 73)
                        and line.endswith(b"}}")
                    ):
                        entries.append((bytes.fromhex(line[9:73].decode()), position, len(line)))
                    position += len(line) + 1
                db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", entries)
        return position, read


def _check_hash(request_hash: str) -> None:
    if not (isinstance(request_hash, str) and _HASH_TEXT.fullmatch(request_hash)):
        raise ValueError(f"not a request hash: {request_hash!r}")


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
        flight = self._flights.get(request_hash)
        if flight is None:  # (not `setdefault`: that would build a lock for every call)
            flight = self._flights[request_hash] = _Flight()
        flight.users += 1
        try:
            async with flight.lock:
                cached = self.cache.get(request_hash)
                if cached is not None:
                    return cached.model_copy(update={"from_cache": True})
                response = await self.inner.complete(request)
                if not response.simulated:
                    self.cache.put(request, response)  # an append: microseconds, not a file
                return response
        finally:
            flight.users -= 1
            if flight.users == 0:
                del self._flights[request_hash]
