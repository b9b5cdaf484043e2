"""Facts about other processes on this machine."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True when a process with `pid` exists (one owned by another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
