"""The files of a release folder being built, each with the SHA-256 and size it has.

The manifest lists every file's digest and size, and so does `datapackage.json`. A file the
build writes from bytes in memory is digested from those bytes as it is written; a file
another library writes (Parquet, DuckDB) is read once when it is first listed. So no file is
read back once for each list that names it (at 50× the data, the downloads alone are over a
gigabyte).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench_pipeline.core.files import sha256_file


@dataclass(frozen=True)
class Written:
    """One file's digest and size.

    Attributes:
        sha256: The hex SHA-256 of its bytes.
        size: Its size in bytes.
    """

    sha256: str
    size: int


class Ledger:
    """The digest and size of every file written into `folder` (paths relative to it).

    Only for a folder nobody else writes while it is built (a release's partial folder): a
    file's entry is what it held when it was written or first listed.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[str, Written] = {}

    def write(self, relative: str, content: bytes | Iterable[bytes | memoryview]) -> Written:
        """Write `content` (bytes, or parts written one after another) to `relative`
        (creating its folder) and note its digest.

        Each part is digested by one thread and written by another while the next is made
        (a download's parts are rendered by polars): digesting, writing and polars' rendering
        all run without the GIL, so the three overlap. Digesting and writing one after the
        other in one thread was the slowest of the three at 50x the recorded data (670 MB of
        `item_board_pairs.json`: about 0.5 s of SHA-256 and up to 1 s of writing).
        """
        parts = (content,) if isinstance(content, bytes) else content
        path = self.folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        digest, size = hashlib.sha256(), 0
        with path.open("wb") as handle, ThreadPoolExecutor(max_workers=2) as workers:
            stored: list[Future[object]] = []
            for part in parts:
                _wait(stored)  # one part in hand, one being stored: memory stays flat
                stored = [workers.submit(digest.update, part), workers.submit(handle.write, part)]
                size += len(part)
            _wait(stored)
        self._files[relative] = Written(digest.hexdigest(), size)
        return self._files[relative]

    def file(self, relative: str) -> Written:
        """The digest and size of `relative`: as written, or read now (once) if another
        writer made it.

        Raises:
            OSError: The file cannot be read.
        """
        if relative not in self._files:
            path = self.folder / relative
            self._files[relative] = Written(sha256_file(path), path.stat().st_size)
        return self._files[relative]


def _wait(futures: list[Future[object]]) -> None:
    """Wait for each of `futures`, raising the first one's error."""
    for future in futures:
        future.result()
