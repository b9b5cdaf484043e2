"""Render the many model pages in two processes: the machine's two cores, and no copy.

The pages of a site are independent once the release is shaped, so `Split` forks children
that inherit the shaped release as it is in memory (nothing is pickled or read again). The
pages are cut into chunks whose numbers wait in a pipe; each process, this one included,
takes the next chunk until none is left, so a process slowed by other work (this one renders
the rest of the site meanwhile) or by a busy machine simply takes fewer. What each call
returns comes back through a pipe, as JSON, and is put back in the pages' order. Every
page's bytes depend on its own inputs only, so the site is byte-identical to a one-process
build. A child reports a failure through the pipe (what failed and why) and its exit status;
the parent waits for every child and raises, so the build fails before anything is
published (see `swap.publish_site`); when the parent itself fails, it kills the children
first. Without `os.fork` (not POSIX) the pages render here, one after another.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import struct
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from bench_pipeline.core.processes import die_with_parent

Item = TypeVar("Item")
Result = TypeVar("Result")

MAX_WORKERS = 2
"""Processes rendering at once, this one included: the machine has two cores."""
MIN_PART = 250
"""Fewest pages worth a process of their own (a fork costs tens of milliseconds)."""
CHUNK = 40
"""Pages per chunk a process takes at a time: small enough to even out the processes'
shares, large enough that taking one (a 4-byte read from a pipe) costs nothing."""
_MAX_CHUNKS = 4_096
"""At most this many chunk numbers (16 KiB) are queued: a pipe holds them all at once."""
_CHUNK_NUMBER = struct.Struct("<I")
_REPORT_CHARACTERS = 8_000


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


class Split(Generic[Item, Result]):
    """`render` over `items`, shared between this process and forked children.

    `start` forks the children, which begin at once; this process may then do other work
    and calls `finish` to take its own share of what is left and gather every result.
    `stop` (or an exception inside `finish`) kills the children.

    Args:
        items: what to render, in the order a one-process build renders it.
        render: renders one item (writes its page); what it returns must be JSON (a child
            sends it back through a pipe).
        label: names an item in a failure's message.
        workers: processes to render with, this one included.
        min_part: fewest items per process (default `MIN_PART`); fewer items use fewer
            processes.
    """

    def __init__(
        self,
        items: Sequence[Item],
        render: Callable[[Item], Result],
        label: Callable[[Item], str],
        workers: int,
        min_part: int | None = None,
    ) -> None:
        self.items, self.render, self.label = items, render, label
        smallest = MIN_PART if min_part is None else max(1, min_part)
        self.parts = max(1, min(workers, len(items) // smallest))
        if not hasattr(os, "fork"):
            self.parts = 1
        size = max(CHUNK, -(-len(items) // _MAX_CHUNKS))
        self.bounds = [(at, min(at + size, len(items))) for at in range(0, len(items), size)]
        self.children: list[_Child] = []
        self.queue: int | None = None
        self.current: Item | None = None

    def start(self) -> Split[Item, Result]:
        """Queue the chunks and fork the children (none when one process is enough)."""
        if self.parts == 1:
            return self
        read, write = os.pipe()
        os.write(write, b"".join(_CHUNK_NUMBER.pack(k) for k in range(len(self.bounds))))
        os.close(write)  # an empty queue then reads as its end
        self.queue = read
        # The inherited objects leave the collector's view, so that a collection in a child
        # does not write to (and so copy) every page of the inherited memory.
        frozen_before = gc.get_freeze_count()
        gc.freeze()
        try:
            for _ in range(self.parts - 1):  # one at a time: a failed fork stops the others
                self.children.append(_fork(self._serve))
        except BaseException:
            self.stop()
            raise
        finally:
            if not frozen_before:  # leave frozen what a caller had frozen
                gc.unfreeze()
        return self

    def finish(self) -> list[Result]:
        """Take this process's share, then every child's results, in the order of `items`.

        Raises:
            WorkerError: a child failed (its message names the item) or was killed.
        """
        if self.queue is None:
            return [self.render(item) for item in self.items]
        try:
            done = self._take()
        except BaseException:
            self.stop()
            raise
        os.close(self.queue)
        self.queue = None
        failures = []
        for child in self.children:
            returned, failure = _collect(child)
            if failure:
                failures.append(failure)
            for number, results in returned.items():
                start, end = self.bounds[int(number)]
                if not isinstance(results, list) or len(results) != end - start:
                    failures.append(f"site worker {child.pid} returned a short chunk {number}")
                done[int(number)] = results
        self.children = []
        missing = len(self.bounds) - len(done)
        if failures or missing:
            raise WorkerError("; ".join(failures) or f"{missing} chunks were never rendered")
        return [result for number in range(len(self.bounds)) for result in done[number]]

    def stop(self) -> None:
        """Kill and reap the children (their pages are not wanted) and drop the queue."""
        _stop(self.children)
        self.children = []
        if self.queue is not None:
            os.close(self.queue)
            self.queue = None

    def _take(self) -> dict[int, list[Any]]:
        """Render chunks from the queue until it is empty: chunk number → results (the item
        being rendered is kept in `current`, for a failure's message)."""
        assert self.queue is not None
        done: dict[int, list[Any]] = {}
        while taken := os.read(self.queue, _CHUNK_NUMBER.size):
            (number,) = _CHUNK_NUMBER.unpack(taken)
            start, end = self.bounds[number]
            results = []
            for item in self.items[start:end]:
                self.current = item
                results.append(self.render(item))
            done[number] = results
        return done

    def _serve(self) -> bytes:
        """A child's whole life: its chunks' results, or its failure, as the report."""
        self.current = None
        try:
            return json.dumps({"results": self._take()}).encode("utf-8")
        except BaseException as error:  # report everything: the parent raises it
            current = self.current
            where = self.label(current) if current is not None else "before the first page"
            lines = traceback.format_exception_only(type(error), error)
            message = f"rendering {where}: {''.join(lines).strip()}"[:_REPORT_CHARACTERS]
            return json.dumps({"failure": message}).encode("utf-8")


@contextmanager
def objects_frozen() -> Iterator[None]:
    """Leave the objects made so far out of the garbage collector's passes until the end.

    A build reads the release into a million or so dicts that live until it ends; each full
    pass of the collector (one every few thousand new objects) walks all of them again: at
    20,000 models, 0.6 s of the 1.0 s spent shaping the boards. Freezing them (as `Split`
    does before a fork) skips that walk; objects made later are collected as usual. Nothing
    frozen here can be freed before the end, which is when the build lets go of it anyway.
    """
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:  # leave frozen what a caller had frozen
            gc.unfreeze()


def render_split(
    items: Sequence[Item],
    render: Callable[[Item], Result],
    label: Callable[[Item], str],
    workers: int,
    min_part: int | None = None,
) -> list[Result]:
    """`render` every item in `workers` processes; what each call returned, in the order of
    `items` (a `Split` started and finished at once; see its arguments).

    Raises:
        WorkerError: a child failed (its message names the item) or was killed.
    """
    return Split(items, render, label, workers, min_part).start().finish()


def _fork(serve: Callable[[], bytes]) -> _Child:
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid:  # the parent
        os.close(write)
        return _Child(pid, read)
    os.close(read)
    code = 0
    try:
        die_with_parent(parent)
        report = serve()
        code = 1 if report.startswith(b'{"failure"') else 0
        with os.fdopen(write, "wb") as pipe:
            pipe.write(report)
    finally:
        os._exit(code)  # no atexit handlers, no flushing the parent's buffers twice


def _collect(child: _Child) -> tuple[dict[str, Any], str]:
    """Wait for `child`: the results of the chunks it rendered, and its failure in words."""
    with os.fdopen(child.report, "rb") as pipe:
        received = pipe.read()
    _, status = os.waitpid(child.pid, 0)
    name = f"site worker {child.pid}"
    if os.WIFSIGNALED(status):
        return {}, f"{name} killed by signal {os.WTERMSIG(status)}"
    try:
        report = json.loads(received)
    except ValueError:
        report = {}
    if "failure" in report or os.WEXITSTATUS(status):
        return {}, f"{name} failed {report.get('failure') or 'without a message'}"
    results = report.get("results")
    if not isinstance(results, dict):
        return {}, f"{name} sent no results"
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
