"""Render the many model pages in two processes: the machine's two cores, and no copy.

The pages of a site are independent once the release is shaped, so `render_split` forks
children that inherit the shaped release as it is in memory (nothing is pickled or read
again), each rendering one contiguous part of the pages while this process renders the
first; what each call returns comes back through a pipe, as JSON. Every page's bytes depend
on its own inputs only, so the site is byte-identical to a one-process build. A child
reports a failure through the pipe (what failed and why) and its exit status; the parent
waits for every child and raises, so the build fails before anything is published (see
`swap.publish_site`); when the parent itself fails, it kills the children first. Without
`os.fork` (not POSIX) the pages render here, one after another.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

MAX_WORKERS = 2
"""Processes rendering at once, this one included: the machine has two cores."""
MIN_PART = 250
"""Fewest pages worth a process of their own (a fork costs tens of milliseconds)."""
_REPORT_CHARACTERS = 8_000
_PR_SET_PDEATHSIG = 1


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
    render: Callable[[Item], Result],
    label: Callable[[Item], str],
    workers: int,
    min_part: int | None = None,
) -> list[Result]:
    """`render` every item; returns what each call returned, in the order of `items`.

    Args:
        items: what to render, in the order a one-process build renders it.
        render: renders one item (writes its page); what it returns must be JSON (a child
            sends it back through a pipe).
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
        return [render(item) for item in items]
    bounds = [len(items) * k // parts for k in range(parts + 1)]
    chunks = [items[bounds[k] : bounds[k + 1]] for k in range(parts)]
    children: list[_Child] = []
    # The inherited objects leave the collector's view, so that a collection in a child
    # does not write to (and so copy) every page of the inherited memory.
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        try:
            for chunk in chunks[1:]:  # one at a time: a failed fork still stops the others
                children.append(_fork(chunk, render, label))  # noqa: PERF401
        finally:
            if not frozen_before:  # leave frozen what a caller had frozen
                gc.unfreeze()
        results = [render(item) for item in chunks[0]]
    except BaseException:
        _stop(children)
        raise
    failures = []
    for child, chunk in zip(children, chunks[1:], strict=True):
        returned, failure = _collect(child, len(chunk))
        results += returned
        if failure:
            failures.append(failure)
    if failures:
        raise WorkerError("; ".join(failures))
    return results


def _fork(
    chunk: Sequence[Item], render: Callable[[Item], Result], label: Callable[[Item], str]
) -> _Child:
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid:  # the parent
        os.close(write)
        return _Child(pid, read)
    os.close(read)
    code, current = 0, None
    try:
        _die_with(parent)
        results = []
        for current in chunk:
            results.append(render(current))
        report = json.dumps({"results": results}).encode("utf-8")
    except BaseException as error:  # report everything: the parent raises it
        code = 1
        where = label(current) if current is not None else "before the first page"
        lines = traceback.format_exception_only(type(error), error)
        message = f"rendering {where}: {''.join(lines).strip()}"[:_REPORT_CHARACTERS]
        report = json.dumps({"failure": message}).encode("utf-8")
    try:
        with os.fdopen(write, "wb") as pipe:
            pipe.write(report)
    finally:
        os._exit(code)  # no atexit handlers, no flushing the parent's buffers twice


def _die_with(parent: int) -> None:
    """Have the kernel kill this child when its parent dies (Linux), so a killed build leaves
    no process writing into its abandoned folder."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the child ends with its part
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _collect(child: _Child, expected: int) -> tuple[list[Any], str]:
    """Wait for `child`: what its `expected` calls returned, and its failure in words."""
    with os.fdopen(child.report, "rb") as pipe:
        received = pipe.read()
    _, status = os.waitpid(child.pid, 0)
    name = f"site worker {child.pid}"
    if os.WIFSIGNALED(status):
        return [], f"{name} killed by signal {os.WTERMSIG(status)}"
    try:
        report = json.loads(received)
    except ValueError:
        report = {}
    if "failure" in report or os.WEXITSTATUS(status):
        return [], f"{name} failed {report.get('failure') or 'without a message'}"
    results = report.get("results")
    if not isinstance(results, list) or len(results) != expected:
        return [], f"{name} returned {len(results or [])} results for {expected} pages"
    return results, ""


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
