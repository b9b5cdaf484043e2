"""Where answer code runs for `unit_tests` checks: the jail, and an offline stand-in.

A `Sandbox` takes a `SandboxJob` (the answer's code, the entrypoint, the test statements,
limits) and returns a `SandboxRun` (the events of `sandbox_child`, the exit code, whether it
timed out), or raises `JailUnavailable` when it cannot run the job as it must: then the check
is `inconclusive` and goes to a person. Code is never run outside the jail instead.

`JailedSandbox` is the real one. Threat model (see site/methodology/runs-and-grading.md):
answer code is written by a model that may have been steered by anyone, so it is treated as
hostile and may try to read secrets (the API key in the grader's environment, the private
task bank, the warehouse), write outside its directory, reach the network, exhaust memory or
processes, or outlive the grading. It runs under bubblewrap with:

- new user, PID, network, IPC, UTS and cgroup namespaces, every capability dropped, no
  further user namespaces (`--disable-userns`), a new session (no terminal to inject into),
  and `--die-with-parent`;
- a read-only root holding only `/usr` (and the `/bin`, `/lib*` links into it), the Python
  installation the grader runs on and the child program; a private `/proc` showing only the
  jail's own processes; a minimal `/dev`; fresh, size-limited tmpfs home and `/tmp`; nothing
  else: no `/etc`, no `BENCH_HOME`, no task bank, no repository, no virtualenv;
- an empty environment, for bubblewrap itself too (so even the jail's PID 1 holds none);
- the interpreter in isolated mode without `site` (`-I -S`): the standard library only;
- the child's own limits: address space (`MEMORY_LIMIT_BYTES`), file size, no core dumps,
  the audit hook of `sandbox_child` as a second layer (no sockets, processes, `ctypes`,
  writes outside home), and the check's timeout, after which the whole process group and
  with it the PID namespace is killed;
- where the machine allows it, a pids cgroup of its own (`PIDS_LIMIT` processes and threads),
  so even a fork that got past the hook cannot flood the host (RLIMIT_NPROC would not do:
  it does not bind root, and the grader may run as root).

`OfflineSandbox` runs nothing: it returns runs recorded for given code (deterministic), so the
rules that turn events into grades are tested without a subprocess.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench_pipeline.core import settings

BWRAP = "/usr/bin/bwrap"
"""Debian's bubblewrap (package `bubblewrap`, installed by `make services`)."""
CHILD = Path(__file__).with_name("sandbox_child.py")
JAIL_HOME = "/home/answer"
"""The answer's working directory inside the jail (a fresh tmpfs)."""
JAIL_CHILD = "/opt/grader/child.py"
TMPFS_BYTES = 64 * 1024**2
"""Size of each of the jail's tmpfs mounts (home and /tmp)."""
MEMORY_LIMIT_BYTES = 2 * 1024**3
"""Address-space limit of the test process (refuses runaway allocations, not tight use)."""
FILE_SIZE_LIMIT_BYTES = 16 * 1024**2
"""Largest file the test process may write (inside its home)."""
PRINTED_KEPT_CHARS = 2000
"""How much of what the answer prints is kept in the details; the rest is only counted."""
STDERR_KEPT_CHARS = 2000
PIDS_LIMIT = 64
"""Most processes and threads one job may have at once, where a pids cgroup can be made."""
CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
"""Where a per-job pids cgroup is tried: cgroup v1's pids hierarchy, then the v2 root."""


class JailUnavailable(Exception):
    """The job could not be run in the jail (the reason is for the person who decides)."""


@dataclass(frozen=True)
class SandboxJob:
    """One answer and its tests."""

    code: str
    entrypoint: str
    tests: tuple[str, ...]
    timeout_seconds: float
    kept_chars: int = PRINTED_KEPT_CHARS
    memory_bytes: int = MEMORY_LIMIT_BYTES
    file_size_bytes: int = FILE_SIZE_LIMIT_BYTES

    def as_json(self) -> bytes:
        return json.dumps(
            {
                "code": self.code,
                "entrypoint": self.entrypoint,
                "tests": list(self.tests),
                "kept": self.kept_chars,
                "memory": self.memory_bytes,
                "fsize": self.file_size_bytes,
            }
        ).encode()


@dataclass(frozen=True)
class SandboxRun:
    """What came back from one job."""

    events: tuple[dict[str, Any], ...]
    returncode: int | None
    timed_out: bool
    stderr: str
    isolation: str
    """How it was isolated, as the grade's details record it."""


class Sandbox(Protocol):
    """Runs a job; raises `JailUnavailable` rather than run it unconfined."""

    def run(self, job: SandboxJob) -> SandboxRun: ...


def _interpreter() -> tuple[Path, Path]:
    """The real interpreter (not the virtualenv's link) and the installation it belongs to."""
    executable = Path(os.path.realpath(sys.executable))
    prefix = Path(os.path.realpath(sys.base_prefix))
    return executable, prefix


def _root_links() -> list[str]:
    """`/bin`, `/lib`, ... as on the host: links into `/usr` (merged /usr) or read-only binds."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args


def _bound_sources() -> list[Path]:
    """The host directories the jail shows (read-only)."""
    _, prefix = _interpreter()
    return [Path("/usr"), prefix]


def _forbidden_inside(sources: list[Path]) -> str | None:
    """Why showing `sources` would show the jail something secret, or None."""
    secret = {
        "BENCH_HOME": settings.bench_home(),
        "the warehouse": settings.warehouse_path(),
        "the task bank": settings.tasks_dir(),
        "the repository": Path(__file__).resolve().parents[2],
    }
    for source in sources:
        source = Path(os.path.realpath(source))
        for name, path in secret.items():
            path = Path(os.path.realpath(path))
            if path == source or source in path.parents:
                return f"{source}, which the jail would show, holds {name} ({path})"
    return None


def jail_command(bwrap: str, program: Sequence[str], extra_binds: Sequence[str] = ()) -> list[str]:
    """The bubblewrap command line running `program` (an argv inside the jail)."""
    _, prefix = _interpreter()
    binds = ["--ro-bind", "/usr", "/usr", *_root_links()]
    if not str(prefix).startswith("/usr/"):
        binds += ["--ro-bind", str(prefix), str(prefix)]
    return [
        bwrap,
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--disable-userns", "--cap-drop", "ALL",
        "--die-with-parent", "--new-session", "--clearenv", "--hostname", "jail",
        *binds, *extra_binds,
        "--proc", "/proc", "--dev", "/dev",
        "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp",
        "--size", str(TMPFS_BYTES), "--tmpfs", JAIL_HOME,
        "--remount-ro", "/",
        "--chdir", JAIL_HOME,
        "--", *program,
    ]  # fmt: skip


@contextmanager
def pids_cgroup(limit: int = PIDS_LIMIT) -> Iterator[Path | None]:
    """A fresh cgroup whose `pids.max` is `limit`, removed afterwards; None where this
    machine gives none (no pids controller, or no right to make a cgroup). The address-space
    limit and the audit hook still apply then, and the timeout ends whatever was started."""
    made = None
    for root in CGROUP_ROOTS:
        candidate = root / f"bench-jail-{uuid.uuid4().hex[:12]}"
        try:
            candidate.mkdir()
        except OSError:
            continue
        try:
            (candidate / "pids.max").write_text(f"{limit}\n")
        except OSError:
            candidate.rmdir()
            continue
        made = candidate
        break
    try:
        yield made
    finally:
        if made is not None:
            _remove_cgroup(made)


def _remove_cgroup(cgroup: Path, wait_seconds: float = 5.0) -> None:
    """Remove `cgroup` once the killed processes have left it (they leave as they exit)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            cgroup.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # left for the next look; an empty cgroup costs nothing
            time.sleep(0.01)


def _in_cgroup(cgroup: Path | None, command: list[str]) -> list[str]:
    """`command` started inside `cgroup` (joined by a shell before it execs, so that every
    process of the jail is counted from the first)."""
    if cgroup is None:
        return command
    join = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
    return ["/bin/sh", "-c", join, str(cgroup), *command]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _events(out: bytes) -> tuple[dict[str, Any], ...]:
    events = []
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a torn last line after a kill, or noise
        if isinstance(event, dict) and "event" in event:
            events.append(event)
    return tuple(events)


@dataclass(frozen=True)
class JailedSandbox:
    """Runs each job in a fresh bubblewrap jail (see the module docstring)."""

    bwrap: str = BWRAP

    def command(self) -> list[str]:
        executable, _ = _interpreter()
        program = [str(executable), "-I", "-S", "-B", "-X", "utf8", JAIL_CHILD]
        return jail_command(self.bwrap, program, ["--ro-bind", str(CHILD), JAIL_CHILD])

    def run(self, job: SandboxJob) -> SandboxRun:
        """Run `job` in the jail.

        Raises:
            JailUnavailable: bubblewrap is missing, or the jail did not come up (no `ready`
                event from the child before it ended).
        """
        if shutil.which(self.bwrap) is None:
            raise JailUnavailable(f"bubblewrap is not installed at {self.bwrap}")
        forbidden = _forbidden_inside(_bound_sources())
        if forbidden:
            raise JailUnavailable(forbidden)
        with pids_cgroup() as cgroup:
            run = self._run(job, cgroup)
        return run

    def _run(self, job: SandboxJob, cgroup: Path | None) -> SandboxRun:
        try:
            process = subprocess.Popen(
                _in_cgroup(cgroup, self.command()),
                env={},  # bubblewrap's own environment is readable from inside (PID 1)
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, so a kill reaches everything
            )
        except OSError as exc:
            raise JailUnavailable(f"bubblewrap did not start: {exc}") from exc
        timed_out = False
        try:
            out, err = process.communicate(job.as_json(), timeout=job.timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            out, err = process.communicate()
        finally:
            _kill_group(process)  # nothing it started may outlive the grading
        events = _events(out)
        stderr = err.decode("utf-8", "replace").strip()[-STDERR_KEPT_CHARS:]
        if not timed_out and not any(e["event"] == "ready" for e in events):
            raise JailUnavailable(
                f"the jail did not start (exit code {process.returncode}): {stderr or 'no message'}"
            )
        isolation = "bubblewrap jail" + (f", at most {PIDS_LIMIT} processes" if cgroup else "")
        return SandboxRun(events, process.returncode, timed_out, stderr, isolation)


def recorded_run(
    tests: Sequence[bool | tuple[str, str, str | None]] = (),
    *,
    load_error: str | None = None,
    missing_entrypoint: bool = False,
    stuck_in: int | None = None,
    ended_in: int | None = None,
    printed: str = "",
) -> SandboxRun:
    """The run `sandbox_child` would report, built by hand for the offline sandbox.

    Args:
        tests: Per test, True (passed) or (error type, message, left side repr).
        load_error: The code does not load, with this message.
        missing_entrypoint: The code loads but lacks the entrypoint.
        stuck_in: The run timed out during this test (1-based).
        ended_in: The process ended early during this test (exit code 3).
        printed: What the answer printed.
    """
    events: list[dict[str, Any]] = [{"event": "ready"}]
    if load_error is not None:
        events.append({"event": "load_error", "error": load_error})
    elif missing_entrypoint:
        events.append({"event": "missing_entrypoint"})
    else:
        for number, result in enumerate(tests, 1):
            events.append({"event": "start", "test": number})
            if number in (stuck_in, ended_in):
                code = 3 if number == ended_in else None
                return SandboxRun(tuple(events), code, stuck_in is not None, "", "offline")
            if result is True:
                events.append({"event": "test", "test": number, "passed": True})
            else:
                error, message, left = ("AssertionError", "", None) if result is False else result
                events.append({"event": "test", "test": number, "passed": False,
                               "error": error, "message": message, "left": left})  # fmt: skip
        events.append({"event": "done", "printed": len(printed), "output": printed})
    return SandboxRun(tuple(events), 0, False, "", "offline")


@dataclass(frozen=True)
class OfflineSandbox:
    """Returns the run recorded for a job's code; starts nothing (for tests and dry runs)."""

    runs: Mapping[str, SandboxRun]
    """Recorded runs by the exact code run."""

    def run(self, job: SandboxJob) -> SandboxRun:
        """The recorded run; `JailUnavailable` for code with none (never a guess)."""
        try:
            return self.runs[job.code]
        except KeyError:
            raise JailUnavailable("the offline sandbox has no recorded run for this code") from None


@functools.cache
def network_isolation() -> tuple[str, ...]:
    """The command prefix that runs a program without network (`unshare --net --`), or `()`
    when this machine does not allow it. For Chromium (grading/browser.py), which needs more
    of the host than the unit-test jail gives."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    try:
        probe = subprocess.run([unshare, "--net", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return (unshare, "--net", "--") if probe.returncode == 0 else ()
