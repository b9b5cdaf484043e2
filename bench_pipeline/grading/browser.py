"""Prototype tasks in a real browser: design measures, decidable goal checks, a screenshot.

`inspect_prototype(html, checks, screenshot_path)` opens a prototype (one HTML file) in
Debian's headless Chromium through Playwright, measures its rendered design, answers the
browser checks that name a selector or text (`BrowserCheck.decidable`), saves a full-page
screenshot, and returns a `BrowserReport`.

The measures exist because the PM suite reads prototype "taste" from them: generic
AI-looking design shows as many gradients, em dashes in the copy and grids of identical
cards, and a design brief ("one accent colour, plain system fonts") is checked against the
colours and fonts actually used. They are taken from the rendered DOM at first load, before
any goal is tried, over visible elements only: `checkVisibility()` with opacity and
`visibility` considered, and a box of non-zero size.

- `colours`: distinct colours painted: the text colour of elements that hold text of their own
  (a non-blank text node child) and of form controls, every background colour, and the colour
  of every border side that is drawn (width > 0, style not none/hidden). Fully transparent
  ones are not colours used. Each is normalised to `rgba(r, g, b, a)` (alpha to 3 decimals);
  colours written in other spaces (`oklch()`, ...) are converted by painting a canvas pixel.
  Colours inside gradients, shadows and SVG paint are not counted (gradients have their own
  measure).
- `gradients`: gradient layers in `background-image` (each `...gradient(` counts once, so
  `radial-gradient(...), linear-gradient(...)` is two), summed over visible elements and their
  rendered `::before`/`::after` boxes, where decorative overlays usually live.
- `font_families`: distinct computed `font-family` stacks of elements that hold text or are
  form controls, quotes removed (`Inter, system-ui, sans-serif`). The declared stack, not the
  face the machine substituted: the choice is what the prototype's author made.
- `card_grids`: containers laid out as a grid or flex box (`display` grid, inline-grid, flex or
  inline-flex) that have at least `MIN_CARDS` visible children with the same signature (tag
  and sorted classes, e.g. `article.card`), where every one of those children has at least
  two visible element children (a card has inner structure, which a row of links or buttons
  does not) and their boxes are of similar size (largest over smallest at most
  `SIZE_RATIO`, in width and in height). A container counts once, by its largest such group.
- `em_dashes`: U+2014 characters in `document.body.innerText`, i.e. in text the page shows
  (not in the title, scripts, hidden elements, attributes or CSS `content`).

Goals run each on a freshly loaded page (so one check's clicks cannot decide another's), in
the order given; see `BrowserCheck` for what they check. A check naming neither a selector nor
a text is `inconclusive` and goes to a person.

Containment. The page gets no network: every request other than the page itself is aborted
(and listed in the report, which is the evidence for a "loads things from the network"
critical failure), the context is offline, Chromium's proxy points at a closed port so nothing
that escapes routing reaches a host, and, where this machine allows it, the whole browser runs
in a network namespace of its own. A prototype can hang the browser (`while (true) {}`) and
Playwright's `evaluate` has no timeout, so the browser work runs in a worker process (in a
PID namespace of its own when available) and `timeout_seconds` is a hard deadline on the whole
inspection: on expiry every process of the worker is killed.

Outcomes. A page that does not load, crashes, hangs or times out is `inconclusive` with
`needs_person=True`, never `fail`: the prototype may be fine and the browser at fault, and
methodology sends stuck attempts to a person. Otherwise the outcome is that of the decided goals:
`pass` when all pass, `fail` when none does, `partial` in between, and `inconclusive` when no
goal could be decided; `needs_person` is set whenever any goal was left undecided. A broken
grader (Chromium missing, or failing to launch) raises instead: that says nothing about the
prototype.
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
from typing import Any, Literal

from bench_pipeline.grading.outcomes import ResultOutcome
from bench_pipeline.grading.scripted import network_isolation
from bench_pipeline.taskbank.models import BrowserCheck

GRADER = "browser:chromium@1"
"""Recorded on every report; the version moves whenever a measure or rule here changes."""

CHROMIUM = Path("/usr/bin/chromium")
PAGE_URL = "http://prototype.localhost/"
"""Where the page is served from (by the route, never a network): a `.localhost` name is a
secure context, so storage and other secure-only APIs a prototype may use work."""
VIEWPORT = {"width": 1280, "height": 800}
DEAD_PROXY = "http://127.0.0.1:9"
"""Port 9 (discard): nothing listens, so a request that slipped past routing goes nowhere."""
QUIET_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
)
"""Chromium as a headless worker here: no sandbox (root in a VM), no GPU, no calls home."""
LAUNCH_ARGS = (
    *QUIET_ARGS,
    f"--proxy-server={DEAD_PROXY}",
    "--proxy-bypass-list=<-loopback>",  # loopback through the dead proxy too
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)

MIN_CARDS = 3
SIZE_RATIO = 1.25
ACTION_SECONDS = 2.0
"""How long a goal waits for a click to complete or an element or text to appear."""

KILL_WAIT_SECONDS = 5.0
"""How long to wait for killed browser processes to be gone before returning anyway."""

_MARK = "@@bench-browser "
_TERMINAL = frozenset({"done", "page_failed", "launch_error"})

GoalOutcome = Literal["pass", "fail", "inconclusive"]
BrowserGoal = BrowserCheck
"""A goal is a task-bank browser check."""


@dataclass(frozen=True)
class CardGrid:
    """A repeated card grid (see the module docstring for the definition)."""

    container: str
    """A short CSS path to the container, e.g. `main > section.grid`."""
    signature: str
    """The cards' tag and classes, e.g. `article.card`."""
    cards: int


@dataclass(frozen=True)
class PageMeasures:
    """The design measures of a page at first load (module docstring)."""

    colours: tuple[str, ...]
    gradients: int
    font_families: tuple[str, ...]
    card_grids: tuple[CardGrid, ...]
    em_dashes: int

    @property
    def colour_count(self) -> int:
        return len(self.colours)


@dataclass(frozen=True)
class GoalResult:
    """One browser check's answer; `inconclusive` ones go to a person."""

    id: str
    outcome: GoalOutcome
    reason: str


@dataclass(frozen=True)
class BrowserReport:
    """What the browser found. `measures` and `screenshot_path` are None when the page never
    got that far; goals never tried are `inconclusive` and say why."""

    outcome: ResultOutcome
    reason: str
    needs_person: bool
    goals: tuple[GoalResult, ...]
    measures: PageMeasures | None
    screenshot_path: Path | None
    blocked_requests: tuple[str, ...]
    """URLs the page tried to load and was refused (in order, without repeats)."""
    page_errors: tuple[str, ...]
    """Uncaught script errors, first line each."""
    elapsed_seconds: float
    grader: str = GRADER


def inspect_prototype(
    html: str,
    checks: Sequence[BrowserGoal],
    screenshot_path: Path,
    *,
    timeout_seconds: float = 15,
) -> BrowserReport:
    """Open `html` in headless Chromium, measure it, try the decidable `checks`, and save a
    full-page PNG to `screenshot_path`, all within `timeout_seconds` (a hard deadline).

    Raises `FileNotFoundError` when Chromium is not installed and `RuntimeError` when it
    cannot be started: faults of the grader, not of the prototype.
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
    return _report(checks, events, timed_out, returncode, stderr, timeout_seconds, elapsed)


# The parent side ------------------------------------------------------------------------------


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
    code = "from bench_pipeline.grading.browser import _worker_main; _worker_main()"
    with (home / "stderr.log").open("w+b") as stderr:
        process = subprocess.Popen(
            [*_isolation(), sys.executable, "-c", code],
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
            if not text.startswith(_MARK):
                continue  # something else printing; reports carry the mark
            event = json.loads(text[len(_MARK) :])
            events.append(event)
            if event["event"] in _TERMINAL:
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


def _measures(event: dict[str, Any]) -> PageMeasures:
    return PageMeasures(
        colours=tuple(event["colours"]),
        gradients=event["gradients"],
        font_families=tuple(event["font_families"]),
        card_grids=tuple(CardGrid(**grid) for grid in event["card_grids"]),
        em_dashes=event["em_dashes"],
    )


NEEDS_A_PERSON = "needs a person: the check names no selector or text to look for"


def _report(
    checks: Sequence[BrowserGoal],
    events: list[dict[str, Any]],
    timed_out: bool,
    returncode: int | None,
    stderr: str,
    timeout_seconds: float,
    elapsed: float,
) -> BrowserReport:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_kind.setdefault(event["event"], []).append(event)
    if "launch_error" in by_kind:
        raise RuntimeError(f"Chromium did not start: {by_kind['launch_error'][0]['error']}")
    if not events and not timed_out:
        raise RuntimeError(f"the browser worker failed (exit {returncode}): {stderr[-2000:]}")

    failure: str | None = None
    if timed_out:
        current = by_kind.get("goal_start", [])
        during = f" while trying goal '{current[-1]['id']}'" if current else ""
        if "measures" not in by_kind:
            during = " before the page could be measured"
        failure = f"timed out after {timeout_seconds:g}s{during}"
    elif "page_failed" in by_kind:
        failure = by_kind["page_failed"][0]["reason"]
    elif "done" not in by_kind:
        failure = f"the browser worker ended unexpectedly (exit code {returncode})"

    tried = {e["id"]: e for e in by_kind.get("goal", [])}
    goals = []
    for check in checks:
        if not check.decidable:
            goals.append(GoalResult(check.id, "inconclusive", NEEDS_A_PERSON))
        elif check.id in tried:
            goals.append(
                GoalResult(check.id, tried[check.id]["outcome"], tried[check.id]["reason"])
            )
        else:
            goals.append(GoalResult(check.id, "inconclusive", f"not tried: {failure}"))

    last = next((e for e in reversed(events) if "blocked" in e), {})
    shots = by_kind.get("screenshot", [])
    common = {
        "goals": tuple(goals),
        "measures": _measures(by_kind["measures"][0]) if "measures" in by_kind else None,
        "screenshot_path": Path(shots[0]["path"]) if shots else None,
        "blocked_requests": tuple(last.get("blocked", ())),
        "page_errors": tuple(last.get("page_errors", ())),
        "elapsed_seconds": elapsed,
    }
    if failure is not None:
        return BrowserReport("inconclusive", failure, True, **common)
    decided = [g for g in goals if g.outcome != "inconclusive"]
    undecided = len(goals) - len(decided)
    needs_person = undecided > 0
    if not decided:
        reason = "no goal can be decided from the page" if goals else "no goals to check"
        return BrowserReport("inconclusive", reason, needs_person, **common)
    passed = sum(g.outcome == "pass" for g in decided)
    outcome = "pass" if passed == len(decided) else "partial" if passed else "fail"
    reason = f"{passed} of {len(decided)} decidable goals pass"
    if undecided:
        reason += f"; {undecided} left to a person"
    return BrowserReport(outcome, reason, needs_person, **common)


# The worker side (runs in its own process) ----------------------------------------------------

_MEASURE_JS = r"""
() => {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 1;
  const paint = canvas.getContext("2d", { willReadFrequently: true });
  const normalised = new Map();
  const round3 = (x) => Math.round(x * 1000) / 1000;
  function rgba(value) {
    if (!value) return null;
    if (normalised.has(value)) return normalised.get(value);
    let parts = null;
    const m = value.match(
      /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)\s*(?:[,/]\s*([\d.]+)(%?))?\s*\)$/);
    if (m) {
      const alpha = m[4] === undefined ? 1 : parseFloat(m[4]) / (m[5] ? 100 : 1);
      parts = [Math.round(+m[1]), Math.round(+m[2]), Math.round(+m[3]), alpha];
    } else {
      paint.clearRect(0, 0, 1, 1);
      paint.fillStyle = "rgba(0, 0, 0, 0)";
      paint.fillStyle = value;
      paint.fillRect(0, 0, 1, 1);
      const d = paint.getImageData(0, 0, 1, 1).data;
      parts = [d[0], d[1], d[2], d[3] / 255];
    }
    const text = parts[3] > 0
      ? `rgba(${parts[0]}, ${parts[1]}, ${parts[2]}, ${round3(parts[3])})` : null;
    normalised.set(value, text);
    return text;
  }
  function visible(el) {
    const options = { checkOpacity: true, checkVisibilityCSS: true,
                      opacityProperty: true, visibilityProperty: true };
    if (!el.checkVisibility(options)) return false;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  }
  const FORM = new Set(["INPUT", "TEXTAREA", "SELECT", "BUTTON"]);
  function holdsText(el) {
    if (FORM.has(el.tagName) && !(el.tagName === "INPUT" && el.type === "hidden")) return true;
    for (const node of el.childNodes) {
      if (node.nodeType === Node.TEXT_NODE && node.data.trim()) return true;
    }
    return false;
  }
  const countGradients = (style) => (style.backgroundImage.match(/gradient\(/g) || []).length;
  function signature(el) {
    const classes = [...el.classList].sort();
    return el.tagName.toLowerCase() + classes.map((c) => "." + c).join("");
  }
  function describe(el) {
    const names = [];
    for (let node = el; node && names.length < 3; node = node.parentElement) {
      names.unshift(node.id ? `${node.tagName.toLowerCase()}#${node.id}` : signature(node));
      if (node.id) break;
    }
    return names.join(" > ");
  }
  const SIZE_RATIO = @SIZE_RATIO@, MIN_CARDS = @MIN_CARDS@;
  function cardGrid(el, style) {
    if (!/^(inline-)?(grid|flex)$/.test(style.display)) return null;
    const groups = new Map();
    for (const child of el.children) {
      if (!visible(child)) continue;
      const key = signature(child);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(child);
    }
    const candidates = [...groups.entries()]
      .filter(([, members]) => members.length >= MIN_CARDS)
      .sort((a, b) => b[1].length - a[1].length);
    for (const [key, members] of candidates) {
      const structured = members.every(
        (m) => [...m.children].filter(visible).length >= 2);
      if (!structured) continue;
      const boxes = members.map((m) => m.getBoundingClientRect());
      const similar = (sizes) => Math.max(...sizes) <= SIZE_RATIO * Math.min(...sizes);
      if (similar(boxes.map((b) => b.width)) && similar(boxes.map((b) => b.height))) {
        return { container: describe(el), signature: key, cards: members.length };
      }
    }
    return null;
  }
  const colours = new Set(), fonts = new Set(), grids = [];
  let gradients = 0;
  for (const el of document.querySelectorAll("*")) {
    if (!visible(el)) continue;
    const style = getComputedStyle(el);
    if (holdsText(el)) {
      colours.add(rgba(style.color));
      fonts.add(style.fontFamily.split(",")
        .map((f) => f.trim().replace(/^["']|["']$/g, "")).join(", "));
    }
    colours.add(rgba(style.backgroundColor));
    for (const side of ["top", "right", "bottom", "left"]) {
      const width = parseFloat(style.getPropertyValue(`border-${side}-width`));
      const line = style.getPropertyValue(`border-${side}-style`);
      if (width > 0 && line !== "none" && line !== "hidden") {
        colours.add(rgba(style.getPropertyValue(`border-${side}-color`)));
      }
    }
    gradients += countGradients(style);
    for (const pseudo of ["::before", "::after"]) {
      const box = getComputedStyle(el, pseudo);
      if (box.content !== "none" && box.content !== "normal" && box.display !== "none") {
        gradients += countGradients(box);
      }
    }
    const grid = cardGrid(el, style);
    if (grid) grids.push(grid);
  }
  colours.delete(null);
  const text = document.body ? document.body.innerText : "";
  return {
    colours: [...colours].sort(),
    gradients,
    font_families: [...fonts].sort(),
    card_grids: grids,
    em_dashes: text.split("\u2014").length - 1,
  };
}
""".replace("@SIZE_RATIO@", str(SIZE_RATIO)).replace("@MIN_CARDS@", str(MIN_CARDS))


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _worker_main() -> None:
    """The worker: read the job from stdin, report each step as one marked JSON line."""
    job = json.loads(sys.stdin.read())
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything else that prints goes to stderr, not into the reports

    def emit(**event: Any) -> None:
        report.write(_MARK + json.dumps(event) + "\n")
        report.flush()

    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM),
                headless=True,
                args=list(LAUNCH_ARGS),
                timeout=30_000,
            )
        except Error as exc:
            emit(event="launch_error", error=_first_line(exc))
            return
        _Session(browser, job, emit).run()
        browser.close()


class _Session:
    """One inspection inside the worker."""

    def __init__(self, browser: Any, job: dict[str, Any], emit: Any) -> None:
        self.job, self.emit = job, emit
        self.blocked: list[str] = []
        self.page_errors: list[str] = []
        self.crashed = False
        self.context = browser.new_context(
            viewport=VIEWPORT,
            device_scale_factor=1,
            offline=True,
            service_workers="block",
            reduced_motion="reduce",
            locale="en-US",
            timezone_id="UTC",
        )
        self.context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url == PAGE_URL:
            route.fulfill(
                status=200, content_type="text/html; charset=utf-8", body=self.job["html"]
            )
            return
        if url not in self.blocked:
            self.blocked.append(url)
        route.abort("blockedbyclient")

    def _open(self) -> Any:
        """A new page with the prototype loaded; raises `TimeoutError` (Playwright's) when it
        does not finish loading."""
        page = self.context.new_page()
        page.on("crash", lambda _: setattr(self, "crashed", True))
        page.on("pageerror", lambda error: self.page_errors.append(_first_line(error)))
        page.goto(PAGE_URL, wait_until="load", timeout=self.job["navigation_seconds"] * 1000)
        return page

    def _state(self) -> dict[str, Any]:
        return {"blocked": self.blocked, "page_errors": self.page_errors[:20]}

    def run(self) -> None:
        from playwright.sync_api import Error, TimeoutError

        emit = self.emit
        try:
            page = self._open()
        except TimeoutError:
            seconds = f"{self.job['navigation_seconds']:g}"
            reason = f"the page did not finish loading within {seconds}s (a script may be stuck)"
            emit(event="page_failed", reason=reason, **self._state())
            return
        except Error as exc:
            emit(event="page_failed", reason=f"the page did not load: {_first_line(exc)}")
            return
        emit(event="loaded", **self._state())
        try:
            emit(event="measures", **page.evaluate(_MEASURE_JS))
            final = Path(self.job["screenshot"])
            partial = final.with_name(f".{final.name}.partial")
            page.screenshot(
                path=str(partial),
                type="png",
                full_page=True,
                animations="disabled",
                timeout=self.job["screenshot_seconds"] * 1000,
            )
            os.replace(partial, final)  # only a whole picture ever has the final name
            emit(event="screenshot", path=str(final))
            page.close()
            for goal in self.job["goals"]:
                emit(event="goal_start", id=goal["id"])
                outcome, reason = self._goal(goal)
                emit(event="goal", id=goal["id"], outcome=outcome, reason=reason)
        except Error as exc:
            why = "the page crashed" if self.crashed else f"the browser failed: {_first_line(exc)}"
            emit(event="page_failed", reason=why, **self._state())
            return
        emit(event="done", **self._state())

    def _goal(self, goal: dict[str, Any]) -> tuple[GoalOutcome, str]:
        from playwright.sync_api import Error, TimeoutError

        wait = self.job["action_seconds"] * 1000
        try:
            page = self._open()
        except TimeoutError:
            return "inconclusive", "the page did not load again for this goal"
        try:
            steps: list[str] = []
            if goal.get("click"):
                target = page.locator(goal["click"])
                if target.count() == 0:
                    return "fail", f"nothing matches the element to click, {goal['click']!r}"
                if not target.first.is_visible():
                    return "fail", f"the element to click, {goal['click']!r}, is not visible"
                try:
                    target.first.click(timeout=wait)
                except TimeoutError:
                    return "inconclusive", (
                        f"clicking {goal['click']!r} did not complete within {wait / 1000:g}s"
                    )
                steps.append(f"after clicking {goal['click']!r}")
            scope = page.locator("body")
            where = "on the page"
            if goal.get("selector"):
                scope = page.locator(goal["selector"]).first
                where = f"in {goal['selector']!r}"
                try:
                    scope.wait_for(state="visible", timeout=wait)
                except TimeoutError:
                    found = page.locator(goal["selector"]).count()
                    problem = "is not visible" if found else "matches nothing"
                    return "fail", ", ".join([*steps, f"{goal['selector']!r} {problem}"])
                steps.append(f"{goal['selector']!r} is visible")
            if goal.get("expect_text"):
                expected = _normalise(goal["expect_text"])
                shown = ""
                until = time.monotonic() + wait / 1000
                while True:
                    shown = _normalise(scope.inner_text(timeout=wait))
                    if expected in shown or time.monotonic() >= until:
                        break
                    page.wait_for_timeout(100)
                if expected not in shown:
                    seen = shown if len(shown) <= 120 else shown[:119] + "…"
                    text = f"{expected!r} is not shown {where}; it shows {seen!r}"
                    return "fail", ", ".join([*steps, text])
                steps.append(f"{expected!r} is shown {where}")
            return "pass", ", ".join(steps)
        except Error as exc:
            if self.crashed:
                raise
            return "inconclusive", f"the check could not be run: {_first_line(exc)}"
        finally:
            if not self.crashed:
                page.close()
