"""One `bench run` per BENCH_HOME, and what a dead one left behind.

`bench run` holds an exclusive `flock` on `build/bench-run.lock` for as long as it runs; the
kernel drops it when the process dies, however it dies, so a crashed run never blocks the next.
A second `bench run` refuses at once, naming the first (its pid, host and start, written into
the lock file). Every Dagster run a `bench run` starts is tagged with its pid and host, so the
next one can tell which unfinished runs belong to a process that no longer exists and mark
them failed: schedules then stop skipping their ticks for a run that will never end.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_pipeline.core.processes import pid_alive

PID_TAG = "bench/pid"
HOST_TAG = "bench/host"
BENCH_RUN_TAG = "bench/run"
"""Every Dagster run of one `bench run`, its parent run included, names the parent's id here
(a tag the UI's run list filters by; `cli.run_group`)."""
COMMAND_TAG = "bench/command"
"""The command line the runs belong to (`bench run`, `bench run --sources live`)."""


class RunLockedError(RuntimeError):
    """Another `bench run` holds this BENCH_HOME."""


def lock_path(home: Path) -> Path:
    return home / "build" / "bench-run.lock"


@contextmanager
def exclusive_run(home: Path, by: str = "") -> Iterator[dict[str, Any]]:
    """Hold the BENCH_HOME's run lock; yields what it records about this process. `by` names
    a holder other than `bench run` (a publishing step of a run the UI or automation started).

    Raises:
        RunLockedError: Another live process holds it (the message names that process).
    """
    path = lock_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # never truncate: the holder's details must stay readable
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise RunLockedError(_busy_message(home, path, handle.read())) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        } | ({"by": by} if by else {})
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(holder) + "\n")
        handle.flush()
        yield holder
    finally:
        handle.close()  # releases the lock


def running_run(home: Path) -> dict[str, Any] | None:
    """What the `bench run` holding this BENCH_HOME recorded of itself while it runs, else
    None. Only looks: taking the lock, even for a moment, could make a starting run refuse."""
    path = lock_path(home)
    try:
        holder = json.loads(path.read_text())
        pid = int(holder["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    held = _flocked(path)
    if held is None:  # no lock table to read: the recorded process, if alive here
        held = holder.get("host") == socket.gethostname() and pid_alive(pid)
    return holder if held else None


def _flocked(path: Path) -> bool | None:
    """Whether some process holds a `flock` on `path`, from Linux's lock table (the file's
    device and inode; a pid there could be reused, a held lock cannot outlive its holder);
    None when the table cannot be read."""
    try:
        found = path.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    inode = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino}"
    return any(
        fields[1] == "FLOCK" and fields[5] == inode
        for fields in (line.split() for line in table.splitlines())
        if len(fields) > 5
    )


def who_runs(holder: dict[str, Any]) -> str:
    """The `bench run` a lock's holder record names, for an operator's message."""
    who = f"pid {holder['pid']} on {holder['host']}, started {holder['started_at']}"
    return f"{holder['by']}: {who}" if holder.get("by") else who


def _busy_message(home: Path, path: Path, content: str) -> str:
    try:
        holder = json.loads(content)
        who = who_runs(holder)
    except (ValueError, KeyError, TypeError, AttributeError):
        holder, who = {}, "a process that has not yet written its details"
    if isinstance(holder, dict) and holder.get("by"):
        return (
            f"{who} is publishing from BENCH_HOME={home} (lock {path}); one publisher at a "
            "time: wait for its step to finish, then run again."
        )
    return (
        f"another `bench run` is already running on BENCH_HOME={home} ({who}; lock {path}). "
        "Two runs would write the same warehouse and site; wait for it to finish."
    )


def run_tags(holder: dict[str, Any]) -> dict[str, str]:
    return {PID_TAG: str(holder["pid"]), HOST_TAG: str(holder["host"])}


def dead_runs(instance) -> list:
    """Unfinished Dagster runs started by a `bench run` on this host whose process is gone."""
    import dagster as dg

    from bench_pipeline.sensors.schedules import IN_PROGRESS

    host, found = socket.gethostname(), []
    for record in instance.get_run_records(dg.RunsFilter(statuses=list(IN_PROGRESS))):
        run = record.dagster_run
        pid = run.tags.get(PID_TAG)
        if run.tags.get(HOST_TAG) != host or not (pid or "").isdigit():
            continue
        if int(pid) != os.getpid() and not pid_alive(int(pid)):
            found.append(run)
    return found


def fail_dead_runs(instance, record_failure) -> list[str]:
    """Mark every run of `dead_runs` failed (and `record_failure(run_id, job, message)` it)."""
    failed = []
    for run in dead_runs(instance):
        message = (
            f"marked failed by a later `bench run`: the process that ran it (pid "
            f"{run.tags[PID_TAG]}) is gone"
        )
        instance.report_run_failed(run, message=message)
        record_failure(run.run_id, run.job_name, message)
        failed.append(run.run_id)
    return failed
