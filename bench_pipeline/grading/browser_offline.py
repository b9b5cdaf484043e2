"""The offline inspector: recorded inspections replayed, with no browser and no subprocess.

A recording is what a real inspection reported for one page and one list of checks, kept as
`<key>.json` (and its screenshot as `<key>.png`) in a directory, where the key is a digest
of the page, the checks and the grader version (`recording_key`). `RecordingInspector` wraps
a real inspector and keeps a recording of every inspection; `RecordedInspector` answers from
them, the same page and checks always giving the same report. A page it holds no recording
of is `inconclusive` and goes to a person, as a page the browser could not open does: the
offline inspector never guesses a grade.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_pipeline.grading.browser import (
    GRADER,
    NEEDS_A_PERSON,
    BrowserGoal,
    BrowserReport,
    GoalResult,
    PrototypeInspector,
    report_from_json,
    report_to_json,
)

OFFLINE_GRADER = "browser:recorded@1"
"""The grader named on the report of a page with no recording (no browser looked at it)."""


def recording_key(html: str, checks: Sequence[BrowserGoal]) -> str:
    """The digest a recording is filed under: page, checks (as the task bank states them) and
    the grader version, so a changed measure or rule never replays an old answer."""
    document = {
        "grader": GRADER,
        "html": html,
        "checks": [check.model_dump(mode="json") for check in checks],
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def record(
    directory: Path, html: str, checks: Sequence[BrowserGoal], report: BrowserReport
) -> Path:
    """Keep `report` (and its screenshot, when it has one) as the recording of this page and
    these checks; returns the recording's path."""
    directory.mkdir(parents=True, exist_ok=True)
    key = recording_key(html, checks)
    if report.screenshot_path is not None and report.screenshot_path.exists():
        _write_atomically(directory / f"{key}.png", report.screenshot_path.read_bytes())
    stored = dataclasses.replace(report, screenshot_path=None)  # the picture travels by key
    target = directory / f"{key}.json"
    _write_atomically(target, report_to_json(stored).encode())
    return target


@dataclass(frozen=True)
class RecordingInspector:
    """A real inspector whose every report is also kept in `directory`."""

    inner: PrototypeInspector
    directory: Path

    def inspect(
        self, html: str, checks: Sequence[BrowserGoal], screenshot_path: Path
    ) -> BrowserReport:
        """The inner inspector's report, recorded before it is returned."""
        report = self.inner.inspect(html, checks, screenshot_path)
        record(self.directory, html, checks, report)
        return report


@dataclass(frozen=True)
class RecordedInspector:
    """The offline inspector: the recording of each page in `directory`, else a report that
    sends the page to a person."""

    directory: Path

    def inspect(
        self, html: str, checks: Sequence[BrowserGoal], screenshot_path: Path
    ) -> BrowserReport:
        """The recorded report of this page and these checks, its screenshot copied to
        `screenshot_path`.

        Raises:
            ValueError: The recording exists but cannot be read (its file named).
        """
        key = recording_key(html, checks)
        path = self.directory / f"{key}.json"
        if not path.exists():
            return _not_recorded(checks, path)
        try:
            report = report_from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValueError(f"{path}: unreadable browser recording: {error}") from None
        picture = self.directory / f"{key}.png"
        shot: Path | None = None
        if picture.exists():
            shot = Path(screenshot_path).absolute()
            shot.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(shot, picture.read_bytes())
        return dataclasses.replace(report, screenshot_path=shot)


def _not_recorded(checks: Sequence[BrowserGoal], path: Path) -> BrowserReport:
    why = f"not inspected: no recorded inspection of this page ({path.name})"
    goals = tuple(
        GoalResult(c.id, "inconclusive", why if c.decidable else NEEDS_A_PERSON) for c in checks
    )
    return BrowserReport(
        outcome="inconclusive",
        reason=f"offline inspector: no recorded inspection of this page in {path.parent}",
        needs_person=True,
        goals=goals,
        measures=None,
        screenshot_path=None,
        blocked_requests=(),
        page_errors=(),
        elapsed_seconds=0.0,
        grader=OFFLINE_GRADER,
    )
