"""Facts about other processes on this machine."""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def pid_alive(pid: int) -> bool:
    """True when a process with `pid` exists (one owned by another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this child process when its parent dies (Linux), so a killed
    parent leaves no child writing on; `parent` is the pid the child was started by.

    The kernel ties the request to the parent's thread that started the child: start
    children from a thread that lives as long as the parent's work."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the child ends with its work
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
