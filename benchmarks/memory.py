"""A benchmark process's own peak memory, the same way in every benchmark."""

from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_mb() -> float:
    """This process's high-water RSS in MB: `VmHWM`, which starts afresh at exec.

    Not `ru_maxrss`: Linux carries it across fork and exec, so a spawned child would report
    at least its parent's RSS when it was started (under `python -m benchmarks`, a parent
    that has imported every benchmark's libraries: about 196 MB).
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
