"""The Chromium inspector's parent side: run the browser worker under a hard deadline.

Playwright's `evaluate` has no timeout and a prototype can hang the browser, so the browser
work runs in a worker process (`browser_worker`, in network and PID namespaces of its own
where this machine allows them) that reports each step as one marked JSON line on stdout;
on the deadline, or after its last report, every process of the worker is killed. The
report is assembled from those lines by `browser.assemble_report`.
"""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_pipeline.grading.browser import CHROMIUM, BrowserGoal, BrowserReport, assemble_report
from bench_pipeline.grading.browser_worker import MARK, TERMINAL_EVENTS
from bench_pipeline.grading.sandbox import network_isolation

ACTION_SECONDS = 2.0
"""How long a goal waits for a click to complete or an element or text to appear."""

KILL_WAIT_SECONDS = 5.0
"""How long to wait for killed browser processes to be gone before returning anyway."""

WORKER = "bench_pipeline.grading.browser_worker"


@dataclass(frozen=True)
class ChromiumInspector:
    """The real inspector: Debian's headless Chromium, `timeout_seconds` a hard deadline on
    each whole inspection."""

    timeout_seconds: float = 15.0

    def inspect(
        self, html: str, checks: Sequence[BrowserGoal], screenshot_path: Path
    ) -> BrowserReport:
        """See `inspect_prototype`."""
        return inspect_prototype(
            html, checks, screenshot_path, timeout_seconds=self.timeout_seconds
        )


def inspect_prototype(
    html: str,
    checks: Sequence[BrowserGoal],
    screenshot_path: Path,
    *,
    timeout_seconds: float = 15,
) -> BrowserReport:
    """Open `html` in headless Chromium, measure it, try the decidable `checks`, and save a
    full-page PNG to `screenshot_path`, all within `timeout_seconds` (a hard deadline).

    Raises:
        FileNotFoundError: Chromium is not installed.
        RuntimeError: Chromium cannot be started. Both are faults of the grader, not of the
            prototype.
    """
    if not CHROMIUM.exists():
        raise FileNotFoundError(f"Chromium is not installed at {CHROMIUM}")
    started = time.monotonic()
    deadline = started + timeout_seconds
    screenshot_path = Path(screenshot_path).absolute()  # the worker runs in another directory
    screenshot_path.parent.mkdir(parents=True, exist_ok=True)
    screenshot_path.unlink(missing_ok=True)  # a stale picture must not pass for this run's
    decidable = [c for c in checks if c.decidable]
    job = {
        "html": html,
        "goals": [c.model_dump(mode="json") for c in decidable],
        "screenshot": str(screenshot_path),
        "navigation_seconds": max(1.0, 0.4 * timeout_seconds),
        "action_seconds": ACTION_SECONDS,
        "screenshot_seconds": max(1.0, 0.2 * timeout_seconds),
    }
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as home:
        events, timed_out, returncode, stderr = _run_worker(job, Path(home), deadline)
    elapsed = time.monotonic() - started
    return assemble_report(checks, events, timed_out, returncode, stderr, timeout_seconds, elapsed)


@functools.cache
def _isolation() -> tuple[str, ...]:
    """`unshare` with a network and a PID namespace (killing the worker then ends every process
    it started), else a network namespace only, else nothing."""
    unshare = shutil.which("unshare")
    if unshare is not None:
        full = (unshare, "--net", "--pid", "--fork", "--kill-child")
        try:
            probe = subprocess.run([*full, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            probe = None
        if probe is not None and probe.returncode == 0:
            return (*full, "--")
    return network_isolation()


def _run_worker(
    job: dict[str, Any], home: Path, deadline: float
) -> tuple[list[dict[str, Any]], bool, int | None, str]:
    package_root = Path(__file__).resolve().parents[2]
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),  # or Chromium writes into ~
        "XDG_CACHE_HOME": str(home / "cache"),
        "PYTHONPATH": str(package_root),
        "LC_ALL": "C.UTF-8",
    }
    with (home / "stderr.log").open("w+b") as stderr:
        process = subprocess.Popen(
            [*_isolation(), sys.executable, "-m", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=environment,
            cwd=home,
            start_new_session=True,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            try:
                process.stdin.write(json.dumps(job).encode())
                process.stdin.close()
            except BrokenPipeError:
                pass  # the worker died first; its stderr says why
            events, timed_out = _read_events(process.stdout.fileno(), deadline)
        finally:
            # After its last report the worker has nothing left to say, and closing a browser
            # whose page hangs can hang too: end everything now.
            _kill_tree(process.pid)
            process.wait()
            process.stdout.close()
        stderr.seek(0)
        return events, timed_out, process.returncode, stderr.read().decode("utf-8", "replace")


def _read_events(fd: int, deadline: float) -> tuple[list[dict[str, Any]], bool]:
    """The worker's reports until a final one, the end of its output, or the deadline (then
    `True`)."""
    events: list[dict[str, Any]] = []
    pending = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return events, True
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return events, False
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace")
            if not text.startswith(MARK):
                continue  # something else printing; reports carry the mark
            event = json.loads(text[len(MARK) :])
            events.append(event)
            if event["event"] in TERMINAL_EVENTS:
                return events, False


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _kill_tree(root: int) -> None:
    """SIGKILL the worker's process group and every process below it. Chromium starts its own
    process group, so the group alone would miss it; the tree is read before anything dies,
    because an orphan is re-parented away from it."""
    doomed = [root, *_descendants(root)]
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(root, signal.SIGKILL)
    except ProcessLookupError:
        pass
    # A kill lands asynchronously; return only once nothing of the inspection still runs.
    until = time.monotonic() + KILL_WAIT_SECONDS
    while any(_running(pid) for pid in doomed[1:]) and time.monotonic() < until:
        time.sleep(0.01)


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"  # a zombie runs nothing
