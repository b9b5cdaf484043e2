"""Staging each fetched payload ahead, in a second process, while this one goes on.

`bench run` executes its steps one after another in one process, and staging a payload (the
contract check and the parse of hundreds of megabytes into frames) is Python on one core: at
50× the recorded data the sources' stagings took about 15 s with the other core idle. Inside
`ahead()` (which `bench run` enters), each source's `raw` step hands its new payload to one
worker process (`submit`), which stages it with `engine.stage_payload` into the run's files
while this process fetches the next source, runs the models and grades; the source's
`staging` step then `take`s the outcome, waiting while the worker is still on it, instead of
staging again. Both call the same function on the same bytes, so the frames are the same.

A payload the worker has not begun is taken back and staged by the step, as is one whose
worker failed (died, or could not be started): the step never depends on the worker. Outside
`ahead()`, as in the Dagster UI where each step is a process of its own, nothing is staged
ahead. The worker touches no database (the run's claim, its `source_runs` row and every
table stay with the steps), dies with this process, and what it wrote for a run that never
ends goes with the run's folder when the next run of the source closes it
(`engine.close_abandoned`).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import duckdb

from bench_pipeline.core.processes import die_with_parent
from bench_pipeline.ingest.catalog import SourceDefinition
from bench_pipeline.ingest.engine import (
    RUN_FAULTS,
    Parser,
    SourceRun,
    Staged,
    raw_file_paths,
    read_raw_files,
    stage_payload,
)
from bench_pipeline.ingest.work import run_folder, staged_file

log = logging.getLogger(__name__)

Job = tuple[SourceDefinition, Parser, list[tuple[str, Path]], Path]
"""A payload to stage: its source, parser, raw files (name, path) and the run's folder."""


def _stage_in_worker(
    definition: SourceDefinition, parse: Parser, paths: Sequence[tuple[str, Path]], folder: Path
) -> Staged:
    """What the worker does with one payload: `stage_payload` into the run's `folder`."""
    files = read_raw_files(paths)
    return stage_payload(definition, parse, files, lambda table: staged_file(folder, table))


def _serve(jobs: Connection, parent: int) -> None:
    """The worker: stage each job it is sent until it is sent None, answering each with the
    `Staged` outcome, or with the text of what went wrong outside staging's own catch."""
    die_with_parent(parent)
    while (job := _received(jobs)) is not None:
        try:
            answer: Staged | str = _stage_in_worker(*job)
        except RUN_FAULTS as error:  # answered as text; the step stages that payload
            answer = f"{type(error).__name__}: {error}"
        jobs.send(answer)


def _received(jobs: Connection) -> Job | None:
    """The next job; None when told to stop or when this process's parent is gone."""
    try:
        job: Job | None = jobs.recv()
    except EOFError:
        return None
    return job


@dataclass(eq=False)
class _Run:
    run_id: str
    job: Job
    begun: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    staged: Staged | None = None


class Prestager:
    """One worker process staging payloads in the order they are submitted, driven by a
    thread of this process that hands it one payload at a time (so a payload not yet begun
    can always be taken back). The worker is started by that thread and dies with it."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._queue: deque[_Run] = deque()
        self._runs: dict[str, _Run] = {}
        self._closed = False
        self._driver: threading.Thread | None = None
        self._worker: BaseProcess | None = None  # once started

    def submit(
        self,
        run_id: str,
        definition: SourceDefinition,
        parse: Parser,
        paths: Sequence[tuple[str, Path]],
        folder: Path,
    ) -> None:
        """Queue the payload of run `run_id` (its raw files at `paths`) for staging into
        `folder`, the run's folder."""
        run = _Run(run_id, (definition, parse, list(paths), folder))
        with self._lock:
            if self._closed:
                return
            self._runs[run_id] = run
            self._queue.append(run)
            if self._driver is None:
                self._driver = threading.Thread(target=self._drive, name="prestage", daemon=True)
                self._driver.start()
            self._lock.notify()

    def take(self, run_id: str) -> Staged | None:
        """Run `run_id` staged by the worker (waiting while the worker is on it), or None when
        the step must stage it: never submitted, not begun (withdrawn), or failed."""
        with self._lock:
            run = self._runs.pop(run_id, None)
            if run is None:
                return None
            if not run.begun:
                if run in self._queue:  # else cleared: the worker stopped
                    self._queue.remove(run)
                return None
        run.done.wait()
        return run.staged

    def close(self) -> None:
        """Withdraw what has not begun and stop the worker, even in the middle of a payload
        (what it wrote is cleared away with the run's folder)."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            self._lock.notify()
            worker = self._worker
        if worker is not None:
            worker.kill()
        if self._driver is not None:
            self._driver.join()

    def _next(self) -> _Run | None:
        with self._lock:
            while not self._queue and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            run = self._queue.popleft()
            run.begun = True
            return run

    def _drive(self) -> None:
        """Start the worker, then hand it each payload in turn and keep its answer."""
        context = multiprocessing.get_context("spawn")  # polars' threads do not survive a fork
        ours, theirs = context.Pipe()
        worker = context.Process(target=_serve, args=(theirs, os.getpid()), daemon=True)
        run: _Run | None = None
        try:
            with self._lock:
                if self._closed:
                    return
                worker.start()
                self._worker = worker
            theirs.close()
            while (run := self._next()) is not None:
                self._hand(ours, run)
        except Exception as error:  # the worker is gone or never came: the steps stage
            log.warning("staging in the steps from now: the worker stopped (%r)", error)
        finally:
            with self._lock:  # nothing more begins; whoever waits is told
                self._closed = True
                self._queue.clear()
            if run is not None:
                run.done.set()
            ours.close()
            if self._worker is not None:  # started
                self._worker.kill()
                self._worker.join(timeout=5)

    @staticmethod
    def _hand(ours: Connection, run: _Run) -> None:
        """Have the worker stage `run`; its outcome kept, or none (the step stages it).
        Raises when the worker is gone."""
        try:
            ours.send(run.job)  # pickled whole before anything is sent
        except (OSError, EOFError):
            raise
        except Exception as error:  # this job cannot be sent (a parser not importable)
            log.warning("staging %s in its step: %r", run.run_id, error)
            run.done.set()
            return
        answer = ours.recv()
        if isinstance(answer, str):
            log.warning("staging %s in its step: %s", run.run_id, answer)
        else:
            run.staged = answer
        run.done.set()


_active: Prestager | None = None


@contextmanager
def ahead() -> Iterator[Prestager]:
    """Stage payloads ahead (see the module) until the block ends."""
    global _active
    prestager = _active = Prestager()
    try:
        yield prestager
    finally:
        _active = None
        prestager.close()


def submit(
    conn: duckdb.DuckDBPyConnection, run: SourceRun, definition: SourceDefinition, parse: Parser
) -> bool:
    """Hand a new payload's run to the worker inside `ahead()`; True if it was."""
    if _active is None or run.status != "pending" or run.unchanged:
        return False
    paths = raw_file_paths(conn, run.run_id)
    _active.submit(run.run_id, definition, parse, paths, run_folder(conn, run.source, run.run_id))
    return True


def take(run_id: str) -> Staged | None:
    """`Prestager.take` inside `ahead()`; None outside it."""
    return _active.take(run_id) if _active is not None else None
