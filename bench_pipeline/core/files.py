"""Files written whole or not at all, placed without copying, and the SHA-256 of a file.

Readers (the site server, analysts, the next run) may open a file at any moment, so a file
is first written under a hidden partial name beside its target and then renamed over it:
a rename within one folder is atomic, so a reader sees the old file or the new one, never
half of one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_BLOCK = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def path_segment(name: str) -> str:
    """`name` as one file or folder name: readable (its unsafe characters replaced), never
    `.` or `..` nor holding a slash, and distinct for names that read alike once replaced
    (a digest of the exact name ends it)."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{_UNSAFE.sub('_', name)[:80]}.{digest}"


def partial_path(target: Path) -> Path:
    """The hidden name a file is written under before it takes `target`'s name."""
    return target.with_name(f".{target.name}.partial")


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """Yield a partial path to write; on success rename it over `target`, else remove it.

    For writers that need a path rather than bytes (DuckDB, a browser's screenshot). A
    partial left by a crashed earlier attempt is removed first.

    Args:
        target: The file (or folder) the partial becomes.

    Yields:
        The partial path, in `target`'s folder.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(target)
    _remove(partial)
    try:
        yield partial
        os.replace(partial, target)
    except BaseException:
        _remove(partial)
        raise


def write_bytes(target: Path, content: bytes) -> Path:
    """Write `content` to `target` atomically (creating its folder); return `target`."""
    with replacing(target) as partial:
        partial.write_bytes(content)
    return target


def write_text(target: Path, text: str) -> Path:
    """Write `text` as UTF-8 to `target` atomically (creating its folder); return `target`."""
    return write_bytes(target, text.encode("utf-8"))


def place_copy(source: Path, target: Path) -> Path:
    """Put the bytes of `source`, a file nobody rewrites in place, at `target` atomically.

    A hard link when both are on one file system (no bytes copied, however large; every
    writer here replaces a file by renaming, so neither name can change the other's bytes),
    else a copy streamed in blocks. Returns `target`.
    """
    with replacing(target) as partial:
        try:
            os.link(source, partial)
        except OSError:  # another device, or a file system without hard links
            shutil.copyfile(source, partial)
    return target


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of a file's bytes, read in 1 MiB blocks (a large file too).

    Raises:
        OSError: The file cannot be read.
    """
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
