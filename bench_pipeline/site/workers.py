"""Render the many model pages in two processes: the machine's two cores, and no copy.

The pages of a site are independent once the release is shaped, so `render_split` forks
children that inherit the shaped release as it is in memory (nothing is pickled or read
again), each rendering one contiguous part of the pages while this process renders the
first. Every page's bytes depend on its own inputs only, so the site is byte-identical to a
one-process build. A child reports failure through a pipe (what failed and why) and its
exit status; the parent then stops any other child, waits for all of them, and raises, so
the build fails before anything is published (see `swap.publish_site`). Without `os.fork`
(not POSIX) the pages render here, one after another.
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

Item = TypeVar("Item")

MAX_WORKERS = 2
"""Processes rendering at once, this one included: the machine has two cores."""
MIN_PART = 250
"""Fewest pages worth a process of their own (a fork costs tens of milliseconds)."""
_REPORT_BYTES = 8_000


class WorkerError(RuntimeError):
    """A child process failed to render its pages."""


@dataclass
class _Child:
    pid: int
    report: int
    """The read end of the pipe the child writes its failure to."""


def default_workers() -> int:
    """Processes to render with: the cores this process may use, at most `MAX_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


def render_split(
    items: Sequence[Item],
    render: Callable[[Item], None],
    adopt: Callable[[Item], None],
    label: Callable[[Item], str],
    workers: int,
    min_part: int | None = None,
) -> None:
    """`render` every item; items a child rendered are then passed, in order, to `adopt`
    in this process (to record what the child wrote).

    Args:
        items: what to render, in the order a one-process build renders it.
        render: renders one item (writes its page).
        adopt: records, in this process, an item a child rendered.
        label: names an item in a failure's message.
        workers: processes to render with, this one included.
        min_part: fewest items per process (default `MIN_PART`); fewer items use fewer
            processes.

    Raises:
        WorkerError: a child failed (its message names the item) or was killed.
    """
    smallest = MIN_PART if min_part is None else max(1, min_part)
    parts = max(1, min(workers, len(items) // smallest))
    if parts == 1 or not hasattr(os, "fork"):
        for item in items:
            render(item)
        return
    bounds = [len(items) * k // parts for k in range(parts + 1)]
    chunks = [items[bounds[k] : bounds[k + 1]] for k in range(parts)]
    children: list[_Child] = []
    try:
        for chunk in chunks[1:]:  # one at a time: a failed fork still stops the earlier ones
            children.append(_fork(chunk, render, label))  # noqa: PERF401
        for item in chunks[0]:
            render(item)
    except BaseException:
        _stop(children)
        raise
    failures = _collect(children)
    if failures:
        raise WorkerError("; ".join(failures))
    for chunk in chunks[1:]:
        for item in chunk:
            adopt(item)


def _fork(chunk: Sequence[Item], render: Callable[[Item], None], label: Callable[[Item], str]):
    read, write = os.pipe()
    pid = os.fork()
    if pid:  # the parent
        os.close(write)
        return _Child(pid, read)
    os.close(read)
    code, current = 0, None
    try:
        for current in chunk:
            render(current)
    except BaseException as error:  # report everything: the parent raises it
        code = 1
        where = label(current) if current is not None else "before the first page"
        lines = traceback.format_exception_only(type(error), error)
        message = f"rendering {where}: {''.join(lines).strip()}"
        os.write(write, message.encode("utf-8", "replace")[:_REPORT_BYTES])
    finally:
        os._exit(code)  # no atexit handlers, no flushing the parent's buffers twice


def _collect(children: list[_Child]) -> list[str]:
    """Wait for every child; the failures, each in words."""
    failures = []
    for child in children:
        chunks = []
        while block := os.read(child.report, 65536):
            chunks.append(block)
        os.close(child.report)
        _, status = os.waitpid(child.pid, 0)
        message = b"".join(chunks).decode("utf-8", "replace")
        if os.WIFSIGNALED(status):
            failures.append(f"site worker {child.pid} killed by signal {os.WTERMSIG(status)}")
        elif os.WEXITSTATUS(status) or message:
            failures.append(f"site worker {child.pid} failed {message or 'without a message'}")
    return failures


def _stop(children: list[_Child]) -> None:
    """Kill and reap the children (this process failed: their pages are not wanted)."""
    for child in children:
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for child in children:
        os.close(child.report)
        try:
            os.waitpid(child.pid, 0)
        except ChildProcessError:
            pass
