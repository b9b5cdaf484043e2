"""Named exclusive locks shared by every process on a machine, waited for in a fixed order.

Each name is one file under a folder, locked with `flock`: the kernel drops the lock when its
holder dies, however it dies, so a killed holder never blocks the next. Several names are taken
in sorted order, so two holders that want overlapping sets wait for each other and never
deadlock. `flock` locks belong to an open file, so two threads of one process exclude each other
as two processes do.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

from bench_pipeline.core.files import path_segment


def lock_file(folder: Path, name: str) -> Path:
    """The lock file of `name` (see `core.files.path_segment`)."""
    return folder / f"{path_segment(name)}.lock"


@contextmanager
def holding(
    folder: Path, names: Collection[str], waiting: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the lock of every name until the block ends, waiting as long as another holds one.

    Args:
        folder: Where the lock files live (made if missing).
        names: The locks to take (duplicates are taken once).
        waiting: Called with a name whose lock another holder has, before waiting for it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as held:
        for name in sorted(set(names)):
            handle: IO[bytes] = held.enter_context(open(lock_file(folder, name), "ab"))
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting is not None:
                    waiting(name)
                fcntl.flock(handle, fcntl.LOCK_EX)
        yield
