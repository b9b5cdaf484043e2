"""Where answer code runs for `unit_tests` checks: the jail, and an offline stand-in.

A `Sandbox` takes a `SandboxJob` (the answer's code, the entrypoint, the calls to make,
limits) and returns a `SandboxRun` (what each call gave back, as a `CallRun`), or raises
`JailUnavailable` when it cannot run the job as it must: then the check is `inconclusive` and
goes to a person. Code is never run outside the jail instead.

The hidden tests never enter the answer's process. A job holds only the calls (how to call
the entrypoint, and the JSON arguments); the expected values stay with the grader
(`grading.scripted`), which compares. Each call runs in a jail and interpreter of its own
(`sandbox_child`), which loads the code, makes that one call and writes the result back as
plain JSON data: nothing of the answer's classes crosses, so a value whose `__eq__` is
always true is simply not JSON. The answer can write on the reply channel too, but whatever
arrives there is read as the reply to that one call only, never as a verdict: a forged line
can spoil only the answer's own result (an extra or malformed line makes the reply
`unreadable`, a failed test), and it cannot reach another call, which runs in another jail.
The grader reads each call's output as it arrives, keeping at most `OUTPUT_CAP_BYTES`
(stdout and stderr together); past that it kills the jail and the call is `over_cap`, so a
flood costs the grader at most that much memory.

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
  writes outside home), and the check's timeout (all its calls together), after which the
  whole process group and with it the PID namespace is killed;
- where the machine allows it, a pids cgroup of its own (`PIDS_LIMIT` processes and threads),
  so even a fork that got past the hook cannot flood the host (RLIMIT_NPROC would not do:
  it does not bind root, and the grader may run as root).

`OfflineSandbox` runs nothing: it returns runs recorded for given code (deterministic), so the
rules that turn call results into grades are tested without a subprocess.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
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
from typing import Any, Literal, Protocol

from bench_pipeline.core import settings
from bench_pipeline.taskbank.models import CALL_NESTING, json_depth

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
OUTPUT_CAP_BYTES = 1024**2
"""Most bytes of one call's output (stdout and stderr) the grader reads before it kills the
jail: the reply, with what was printed, fits many times over."""
READ_BYTES = 64 * 1024
"""Bytes read from a pipe at a time."""
PIDS_LIMIT = 64
"""Most processes and threads one job may have at once, where a pids cgroup can be made."""
CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
"""Where a per-job pids cgroup is tried: cgroup v1's pids hierarchy, then the v2 root."""


class JailUnavailable(Exception):
    """The job could not be run in the jail (the reason is for the person who decides)."""


@dataclass(frozen=True)
class SandboxCall:
    """One call the jail makes: `via` as in `taskbank.models.UnitTestCall`, JSON arguments."""

    via: Literal["call", "value", "fullmatch"]
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class SandboxJob:
    """One answer and the calls to make on it (never what they should give)."""

    code: str
    entrypoint: str
    calls: tuple[SandboxCall, ...]
    timeout_seconds: float
    """The limit of all the calls together, starting each jail and loading the code included
    (as when the tests ran in one process: an answer cannot take it once per call)."""
    kept_chars: int = PRINTED_KEPT_CHARS
    memory_bytes: int = MEMORY_LIMIT_BYTES
    file_size_bytes: int = FILE_SIZE_LIMIT_BYTES

    def payload(self, call: SandboxCall) -> bytes:
        """What the jail's child reads for `call`."""
        return json.dumps(
            {
                "code": self.code,
                "entrypoint": self.entrypoint,
                "via": call.via,
                "args": list(call.args),
                "kept": self.kept_chars,
                "memory": self.memory_bytes,
                "fsize": self.file_size_bytes,
            }
        ).encode()


CallStatus = Literal[
    "returned",
    "raised",
    "not_json",
    "load_error",
    "missing_entrypoint",
    "ended_loading",
    "no_reply",
    "timed_out",
    "over_cap",
    "unreadable",
]
"""How one call ended:

- `returned`: it returned `value`, plain JSON data;
- `raised`: it raised (`error` is `Type: message`);
- `not_json`: it returned something that is not plain JSON data (`error` says why);
- `load_error`: the code does not load (`error`); `missing_entrypoint`: it does not define
  the entrypoint;
- `ended_loading`: the process ended while loading the code (`exit_code`); `no_reply`: it
  ended during the call, before a reply;
- `timed_out`: the time limit passed and the jail was killed;
- `over_cap`: it wrote more than `OUTPUT_CAP_BYTES` and the jail was killed;
- `unreadable`: the reply channel held something other than the child's events (`error`).
"""

ENDS_THE_RUN: frozenset[str] = frozenset(
    {"load_error", "missing_entrypoint", "ended_loading", "timed_out", "over_cap"}
)
"""After a call that ended so, no further call is made: loading fails the same way each
time, and a runaway answer is not given its time limit or the grader's reading again."""


@dataclass(frozen=True)
class CallRun:
    """What came back from one call (see `CallStatus`); `value` and `error` come from the
    answer and are its own words, never a verdict."""

    status: CallStatus
    value: Any = None
    error: str = ""
    exit_code: int | None = None
    printed_chars: int = 0
    printed: str = ""
    """The first `PRINTED_KEPT_CHARS` characters the answer printed during this call."""


@dataclass(frozen=True)
class SandboxRun:
    """What came back from one job: a `CallRun` per call made, in order (fewer than the
    job's calls after one that `ENDS_THE_RUN`)."""

    calls: tuple[CallRun, ...]
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


@dataclass
class _Output:
    """What was read from one call's jail."""

    stdout: bytearray
    stderr: bytearray
    timed_out: bool = False
    over_cap: bool = False


def _collect(process: subprocess.Popen[bytes], payload: bytes, timeout: float) -> _Output:
    """Feed `payload` to `process` and read its stdout and stderr as they arrive, until both
    end, `timeout` seconds pass or more than `OUTPUT_CAP_BYTES` arrived (then it stops
    reading; the caller kills the jail). Never holds more than the cap."""
    assert process.stdin and process.stdout and process.stderr
    output = _Output(bytearray(), bytearray())
    deadline = time.monotonic() + timeout
    pending = memoryview(payload)
    received = 0
    with selectors.DefaultSelector() as selector:
        for stream, event in (
            (process.stdin, selectors.EVENT_WRITE),
            (process.stdout, selectors.EVENT_READ),
            (process.stderr, selectors.EVENT_READ),
        ):
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, event)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                output.timed_out = True
                break
            for key, _ in selector.select(remaining):
                if key.fileobj is process.stdin:
                    try:
                        pending = pending[os.write(key.fd, pending[:READ_BYTES]) :]
                    except BlockingIOError:
                        continue
                    except OSError:  # it stopped reading (a jail that did not start)
                        pending = pending[len(pending) :]
                    if not pending:
                        selector.unregister(process.stdin)
                        process.stdin.close()
                    continue
                try:
                    chunk = os.read(key.fd, READ_BYTES)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                received += len(chunk)
                if received > OUTPUT_CAP_BYTES:
                    output.over_cap = True
                    return output
                (output.stdout if key.fileobj is process.stdout else output.stderr).extend(chunk)
    return output


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _events(out: bytes) -> list[Any] | None:
    """The JSON lines of `out`, or None when any line is not JSON or the last is torn."""
    lines = out.decode("utf-8", "replace").split("\n")
    if lines[-1]:
        return None
    try:
        return [json.loads(line, parse_constant=_refuse_constant) for line in lines[:-1]]
    except (ValueError, RecursionError):
        return None


def _reply(event: dict[str, Any]) -> CallRun:
    """The `CallRun` of a `reply` event, or `unreadable` when it is not one the child writes."""
    status, printed, output = event.get("status"), event.get("printed"), event.get("output")
    if type(printed) is not int or type(output) is not str or printed < 0:
        return CallRun("unreadable", error="a reply without a count of what was printed")
    kept = output[:PRINTED_KEPT_CHARS]
    if status == "returned" and "value" in event:
        if json_depth(event["value"]) > CALL_NESTING:  # the child refuses deeper ones
            return CallRun("unreadable", error=f"a value nested deeper than {CALL_NESTING}")
        return CallRun("returned", value=event["value"], printed_chars=printed, printed=kept)
    error = event.get("error")
    if status in ("raised", "not_json") and isinstance(error, str):
        ended: CallStatus = "raised" if status == "raised" else "not_json"
        return CallRun(ended, error=error, printed_chars=printed, printed=kept)
    return CallRun("unreadable", error="a reply of no known form")


def _call_run(output: _Output, exit_code: int | None) -> CallRun:
    """What one call gave back, read from its jail's output.

    Raises:
        JailUnavailable: The jail did not come up (no `ready` from the child).
    """
    if output.over_cap:
        return CallRun("over_cap", exit_code=exit_code)
    if output.timed_out:
        return CallRun("timed_out")
    events = _events(bytes(output.stdout))
    if not events or events[0] != {"event": "ready"}:
        started = bytes(output.stdout).startswith(b'{"event": "ready"}\n')
        if not started:
            stderr = output.stderr.decode("utf-8", "replace").strip()[-STDERR_KEPT_CHARS:]
            raise JailUnavailable(
                f"the jail did not start (exit code {exit_code}): {stderr or 'no message'}"
            )
        return CallRun("unreadable", error="a line that is not one of the child's events")
    rest = events[1:]
    if not all(isinstance(e, dict) for e in rest):
        return CallRun("unreadable", error="a line that is not one of the child's events")
    kinds = [e.get("event") for e in rest]
    if not kinds:
        return CallRun("ended_loading", exit_code=exit_code)
    if kinds == ["load_error"] and type(rest[0].get("error")) is str:
        return CallRun("load_error", error=rest[0]["error"])
    if kinds == ["missing_entrypoint"]:
        return CallRun("missing_entrypoint")
    if kinds == ["loaded"]:
        return CallRun("no_reply", exit_code=exit_code)
    if kinds == ["loaded", "reply"]:
        return _reply(rest[1])
    return CallRun("unreadable", error=f"{len(events)} events where the child writes at most 3")


@dataclass(frozen=True)
class JailedSandbox:
    """Runs each call of a job in a fresh bubblewrap jail (see the module docstring)."""

    bwrap: str = BWRAP

    def command(self) -> list[str]:
        executable, _ = _interpreter()
        program = [str(executable), "-I", "-S", "-B", "-X", "utf8", JAIL_CHILD]
        return jail_command(self.bwrap, program, ["--ro-bind", str(CHILD), JAIL_CHILD])

    def run(self, job: SandboxJob) -> SandboxRun:
        """Run each call of `job` in a jail of its own, stopping after one that
        `ENDS_THE_RUN`.

        Raises:
            JailUnavailable: bubblewrap is missing, or a jail did not come up (no `ready`
                event from the child before it ended).
        """
        if shutil.which(self.bwrap) is None:
            raise JailUnavailable(f"bubblewrap is not installed at {self.bwrap}")
        forbidden = _forbidden_inside(_bound_sources())
        if forbidden:
            raise JailUnavailable(forbidden)
        calls: list[CallRun] = []
        deadline = time.monotonic() + job.timeout_seconds
        with pids_cgroup() as cgroup:
            for call in job.calls:
                left = deadline - time.monotonic()
                ran = self._run_call(job.payload(call), left, cgroup) if left > 0 else None
                calls.append(ran or CallRun("timed_out"))
                if calls[-1].status in ENDS_THE_RUN:
                    break
        isolation = "bubblewrap jail" + (f", at most {PIDS_LIMIT} processes" if cgroup else "")
        return SandboxRun(tuple(calls), isolation + ", one per call")

    def _run_call(self, payload: bytes, timeout: float, cgroup: Path | None) -> CallRun:
        try:
            process = subprocess.Popen(
                _in_cgroup(cgroup, self.command()),
                env={},  # bubblewrap's own environment is readable from inside (PID 1)
                cwd="/",  # the cgroup's shell puts its directory there as PWD: not the grader's
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, so a kill reaches everything
            )
        except OSError as exc:
            raise JailUnavailable(f"bubblewrap did not start: {exc}") from exc
        started = time.monotonic()
        try:
            output = _collect(process, payload, timeout)
            if output.timed_out or output.over_cap:
                _kill_group(process)
            try:
                process.wait(max(0.0, timeout - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:  # it closed its output but kept running
                output.timed_out = True
        finally:
            _kill_group(process)  # nothing it started may outlive the grading
            process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        return _call_run(output, process.returncode)


def recorded_run(*calls: CallRun) -> SandboxRun:
    """The run `JailedSandbox` would give back, built by hand for the offline sandbox: one
    `CallRun` per call made."""
    return SandboxRun(tuple(calls), "offline")


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
