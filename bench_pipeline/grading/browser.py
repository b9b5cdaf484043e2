"""Prototype tasks in a browser: what an inspection reports, and the rules that read it.

An inspector (`PrototypeInspector`) opens a prototype (one HTML file), measures its rendered
design, answers the browser checks that name a selector or text (`BrowserCheck.decidable`),
saves a full-page screenshot, and returns a `BrowserReport`. Two implementations:

- `browser_parent.ChromiumInspector`: Debian's headless Chromium through Playwright, in a
  worker process (`browser_worker`) that runs the measuring script `browser_measure.js`;
- `browser_offline.RecordedInspector`: replays reports an inspection recorded, with no
  browser and no subprocess; a page it has no recording of is `inconclusive` (a person looks).

This module holds what both share: the report records, the outcome rules (`assemble_report`,
from the worker's events), and the JSON form a recording is kept in.

The measures exist because the PM suite reads prototype "taste" from them: generic
AI-looking design shows as many gradients, em dashes in the copy and grids of identical
cards, and a design brief ("one accent colour, plain system fonts") is checked against the
colours and fonts actually used. `browser_measure.js` takes them from the rendered DOM at
first load, before any goal is tried, over visible elements only: `checkVisibility()` with
opacity and `visibility` considered, and a box of non-zero size.

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

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, Unpack

from bench_pipeline.grading.outcomes import ResultOutcome
from bench_pipeline.taskbank.models import BrowserCheck

GRADER = "browser:chromium@1"
"""Recorded on every report; the version moves whenever a measure or rule here changes."""

CHROMIUM = Path("/usr/bin/chromium")
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

MIN_CARDS = 3
SIZE_RATIO = 1.25
NEEDS_A_PERSON = "needs a person: the check names no selector or text to look for"

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
        """How many distinct colours the page paints."""
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


class PageFacts(TypedDict):
    """What a report says about the page whatever the outcome (`BrowserReport`'s fields)."""

    measures: PageMeasures | None
    screenshot_path: Path | None
    blocked_requests: tuple[str, ...]
    page_errors: tuple[str, ...]
    elapsed_seconds: float


class PrototypeInspector(Protocol):
    """Opens one prototype and reports on it; grading is handed one (a Dagster resource)."""

    def inspect(
        self, html: str, checks: Sequence[BrowserGoal], screenshot_path: Path
    ) -> BrowserReport:
        """Inspect `html` against `checks`, saving a screenshot at `screenshot_path`.

        Raises:
            FileNotFoundError, RuntimeError: The inspector itself is broken (a browser missing
                or failing to start): a fault of the grader, never a grade of the prototype.
        """
        ...


def measures_from_event(event: dict[str, Any]) -> PageMeasures:
    """The measures the script returned (the worker's `measures` event, or a recording)."""
    return PageMeasures(
        colours=tuple(event["colours"]),
        gradients=event["gradients"],
        font_families=tuple(event["font_families"]),
        card_grids=tuple(CardGrid(**grid) for grid in event["card_grids"]),
        em_dashes=event["em_dashes"],
    )


def assemble_report(
    checks: Sequence[BrowserGoal],
    events: list[dict[str, Any]],
    timed_out: bool,
    returncode: int | None,
    stderr: str,
    timeout_seconds: float,
    elapsed: float,
) -> BrowserReport:
    """The report from the worker's events (module docstring, "Outcomes").

    Raises:
        RuntimeError: Chromium did not start, or the worker died before saying anything.
    """
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

    last: dict[str, Any] = next((e for e in reversed(events) if "blocked" in e), {})
    shots = by_kind.get("screenshot", [])
    measures = measures_from_event(by_kind["measures"][0]) if "measures" in by_kind else None
    facts = PageFacts(
        measures=measures,
        screenshot_path=Path(shots[0]["path"]) if shots else None,
        blocked_requests=tuple(last.get("blocked", ())),
        page_errors=tuple(last.get("page_errors", ())),
        elapsed_seconds=elapsed,
    )
    if failure is not None:
        return BrowserReport("inconclusive", failure, True, goals=tuple(goals), **facts)
    return decide(goals, **facts)


def decide(goals: Sequence[GoalResult], **facts: Unpack[PageFacts]) -> BrowserReport:
    """The outcome of a page that loaded: that of its decided goals (module docstring)."""
    decided = [g for g in goals if g.outcome != "inconclusive"]
    undecided = len(goals) - len(decided)
    needs_person = undecided > 0
    if not decided:
        reason = "no goal can be decided from the page" if goals else "no goals to check"
        return BrowserReport("inconclusive", reason, needs_person, goals=tuple(goals), **facts)
    passed = sum(g.outcome == "pass" for g in decided)
    outcome: ResultOutcome = "pass" if passed == len(decided) else "partial" if passed else "fail"
    reason = f"{passed} of {len(decided)} decidable goals pass"
    if undecided:
        reason += f"; {undecided} left to a person"
    return BrowserReport(outcome, reason, needs_person, goals=tuple(goals), **facts)


def report_to_json(report: BrowserReport) -> str:
    """The report as JSON (a recording); `report_from_json` reads it back."""
    data = asdict(report)
    data["screenshot_path"] = (
        None if report.screenshot_path is None else str(report.screenshot_path)
    )
    return json.dumps(data, indent=1, sort_keys=True)


def report_from_json(text: str) -> BrowserReport:
    """The report `report_to_json` wrote.

    Raises:
        ValueError: The text is not such a report (the missing or unexpected field named).
    """
    try:
        data = json.loads(text)
        measures = data["measures"]
        return BrowserReport(
            outcome=data["outcome"],
            reason=data["reason"],
            needs_person=data["needs_person"],
            goals=tuple(GoalResult(**goal) for goal in data["goals"]),
            measures=None if measures is None else measures_from_event(measures),
            screenshot_path=None if data["screenshot_path"] is None
            else Path(data["screenshot_path"]),
            blocked_requests=tuple(data["blocked_requests"]),
            page_errors=tuple(data["page_errors"]),
            elapsed_seconds=data["elapsed_seconds"],
            grader=data["grader"],
        )  # fmt: skip
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"not a browser report: {type(error).__name__}: {error}") from None
