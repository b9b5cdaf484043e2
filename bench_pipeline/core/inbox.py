"""Inbox files, read safely: only regular files up to a size limit, each read once.

Anyone who can write to an inbox can drop anything there under a `*.json` name: a FIFO blocks
its reader for ever, a symbolic link to /dev/zero never ends, a 300 MB file fills memory. So
an entry is looked at without following links, refused unopened unless it is a regular file
within `MAX_INBOX_BYTES`, opened without following links or blocking, checked again once
open (it may have been swapped since the look), and read to at most the limit plus one byte
(it may have grown). Its hash is that of the bytes read, so what is parsed is what is
recorded. Both inboxes (submitted runs, review files) and their sensors read through here.

Nothing here touches the warehouse: intakes read every file first and open the warehouse
only afterwards, so a slow disk or a large inbox never holds its write lock.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

MAX_INBOX_BYTES = 8 * 1024 * 1024
"""The largest inbox file read (8 MiB; a real submission or review is a few KiB). A larger
file is recorded as rejected without being read."""

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class InboxFile(NamedTuple):
    """One inbox entry: its bytes and their hash, or (when it must not be read) why not,
    with a stand-in hash naming the entry so it is recorded once."""

    path: Path
    sha256: str
    data: bytes | None
    """None when refused."""
    refusal: str | None = None
    size: int | None = None
    """Bytes on disk when looked at."""


def inbox_files(inbox: Path) -> list[Path]:
    """The `*.json` entries of the inbox, by name (other names and hidden ones are ignored)."""
    if not inbox.is_dir():
        return []
    return sorted(p for p in inbox.iterdir() if p.suffix == ".json" and not p.name.startswith("."))


def _stand_in(path: Path, what: str) -> str:
    return hashlib.sha256(f"refused\0{path.name}\0{what}".encode()).hexdigest()


def _refused(path: Path, what: str, reason: str, size: int | None = None) -> InboxFile:
    return InboxFile(path, _stand_in(path, what), None, reason, size)


def read_inbox_file(path: Path, max_bytes: int = MAX_INBOX_BYTES) -> InboxFile | None:
    """Read one inbox entry, never opening anything but a regular file within `max_bytes`.

    Returns:
        Its bytes and hash, or its refusal (not a regular file, too large); None when it
        vanished or cannot be read now (left for a later look).
    """
    try:
        info = os.lstat(path)
    except OSError:
        return None
    for test, kind in _KINDS:
        if test(info.st_mode):
            return _refused(path, kind, f"{kind}, not a regular file; never opened")
    if not stat.S_ISREG(info.st_mode):
        return _refused(path, "special", "not a regular file; never opened")
    if info.st_size > max_bytes:
        reason = f"{info.st_size} bytes, over the inbox limit of {max_bytes} bytes; not read"
        return _refused(path, f"{info.st_size}:{info.st_mtime_ns}", reason, info.st_size)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since the look
                return _refused(path, "swapped", "not a regular file; never read")
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    if len(data) > max_bytes:  # grew after the size check
        reason = f"over the inbox limit of {max_bytes} bytes; not read"
        return _refused(path, f"grew:{info.st_mtime_ns}", reason, len(data))
    return InboxFile(path, hashlib.sha256(data).hexdigest(), data, None, len(data))


def read_inbox(inbox: Path, max_bytes: int = MAX_INBOX_BYTES) -> Iterator[InboxFile]:
    """Every `*.json` entry of the inbox as `read_inbox_file` gives it, one at a time (so a
    caller that parses each keeps only one file's bytes), skipping those unreadable now."""
    for path in inbox_files(inbox):
        entry = read_inbox_file(path, max_bytes)
        if entry is not None:
            yield entry


def inbox_sha256(path: Path) -> str | None:
    """The entry's hash as `read_inbox_file` gives it (a stand-in for one it must not read)."""
    entry = read_inbox_file(path)
    return entry.sha256 if entry else None


class _Hashed(Protocol):
    @property
    def sha256(self) -> str: ...


Hashed = TypeVar("Hashed", bound=_Hashed)


def unseen(entries: Iterable[Hashed], recorded: set[str]) -> tuple[list[Hashed], int]:
    """The entries whose hash is not in `recorded` (an intake's file table), each content
    once, and how many were left out as seen before (a second copy in the inbox included)."""
    seen = set(recorded)
    new: list[Hashed] = []
    seen_before = 0
    for entry in entries:
        if entry.sha256 in seen:
            seen_before += 1
            continue
        seen.add(entry.sha256)
        new.append(entry)
    return new, seen_before
