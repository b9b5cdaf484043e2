"""Large tables and charts kept to a readable page, and pages written only when they change.

A board of 100,000 models cannot be one HTML page, so each large table (market, models,
Known Good Index, capability indices, Arena) is server-rendered up to `PAGE_ROWS` rows in its
published order, and says so on the page: how many of how many rows it shows, that sorting
and filtering apply to those rows only, and which download holds every row. Charts that draw
one mark per model stop at `CHART_ROWS`, with a note.

`write_if_changed` is how every site file is written: a file whose bytes are already on disk
is left alone (same inode and mtime); a different one is replaced by a new file renamed over
it, so a file shared by hard link with an earlier site version (see `swap.seed_from`) is
never changed in place.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE_ROWS = 500
"""Rows a large table renders into its page (about 200 KB for the market)."""
CHART_ROWS = 100
"""Marks a per-model chart draws (the top ones, in the table's order)."""


@dataclass(frozen=True)
class Page:
    """The first page of a table: its rows, how many the table holds, where the rest is."""

    rows: list[Any]
    total: int
    table: str
    """The release table whose downloads hold every row."""

    @property
    def shown(self) -> int:
        return len(self.rows)

    @property
    def partial(self) -> bool:
        return self.shown < self.total


def first_page(rows: Sequence[Any], table: str, size: int = PAGE_ROWS) -> Page:
    """The first `size` of `rows`, for a table whose full rows are the download `table`."""
    return Page(list(rows[:size]), len(rows), table)


@dataclass(frozen=True)
class Stored:
    """A file as `store` left it: whether it was written, and its size and mtime on disk."""

    written: bool
    size: int
    mtime_ns: int


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def write_if_changed(target: Path, content: bytes) -> bool:
    """Write `content` to `target` unless it already holds exactly those bytes; True if
    written. A write goes to a hidden file renamed over the target (never in place)."""
    return store(target, content).written


def store(target: Path | str, content: bytes) -> Stored:
    """`write_if_changed`, returning the file's size and mtime as they are on disk now (read
    from the open file, so recording them costs no further look-up). `target` may be text:
    a new file needs no `Path`."""
    try:  # a new file (nothing there to share an inode with) is written directly
        return _write_new(target, content)
    except FileExistsError:
        pass
    except FileNotFoundError:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        return _write_new(target, content)
    path = Path(target)
    status = os.stat(path)
    if status.st_size == len(content) and path.read_bytes() == content:
        return Stored(False, status.st_size, status.st_mtime_ns)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    stored = _write_new(partial, content)
    os.replace(partial, path)
    return stored


def _write_new(target: Path | str, content: bytes) -> Stored:
    """Create `target` (FileExistsError if it is there) holding `content`."""
    descriptor = os.open(target, _CREATE, 0o666)
    try:
        with memoryview(content) as left:
            while left:
                left = left[os.write(descriptor, left) :]
        status = os.fstat(descriptor)
    finally:
        os.close(descriptor)
    return Stored(True, status.st_size, status.st_mtime_ns)


def copy_if_changed(source: Path, target: Path) -> bool:
    """`write_if_changed` for a file copied as it is (streamed: a release's DuckDB file may be
    large); True if written. The mode is not copied (release files are read-only)."""
    if target.is_file() and filecmp.cmp(source, target, shallow=False):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    shutil.copyfile(source, partial)
    os.replace(partial, target)
    return True
