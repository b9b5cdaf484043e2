"""The browser grader's rules without a browser: a report assembled from the worker's events,
its JSON form, the offline inspector's recordings, and the resource that chooses the
inspector. (tests/test_grading_browser.py drives real Chromium.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench_pipeline.grading.browser import (
    GRADER,
    NEEDS_A_PERSON,
    BrowserReport,
    CardGrid,
    GoalResult,
    PageMeasures,
    assemble_report,
    report_from_json,
    report_to_json,
)
from bench_pipeline.grading.browser_offline import (
    OFFLINE_GRADER,
    RecordedInspector,
    RecordingInspector,
    record,
    recording_key,
)
from bench_pipeline.grading.browser_parent import ChromiumInspector
from bench_pipeline.grading.browser_worker import MEASURE_SCRIPT, measure_script
from bench_pipeline.resources.browser import BrowserResource
from bench_pipeline.taskbank.models import BrowserCheck

pytestmark = pytest.mark.unit

SHOWN = BrowserCheck(id="shown", question="Shown?", expect_text="42")
CLICKED = BrowserCheck(id="clicked", question="Clicked?", click="#go", selector="#done")
LOOKS = BrowserCheck(id="looks", question="Does it look calm?")
MEASURES = {
    "event": "measures",
    "colours": ["rgba(0, 0, 0, 1)"],
    "gradients": 2,
    "font_families": ["system-ui"],
    "card_grids": [{"container": "main", "signature": "article.card", "cards": 3}],
    "em_dashes": 1,
}


def events(*goals: tuple[str, str], final: str = "done") -> list[dict]:
    shot = {"event": "screenshot", "path": "/tmp/x.png"}
    tried = [{"event": "goal", "id": i, "outcome": o, "reason": f"{i} {o}"} for i, o in goals]
    return [{"event": "loaded"}, MEASURES, shot, *tried, {"event": final, "blocked": ["u"]}]


def assembled(evts: list[dict], checks=(SHOWN, CLICKED, LOOKS), timed_out=False):
    return assemble_report(list(checks), evts, timed_out, 0, "", 6, 1.0)


def test_decided_goals_set_the_outcome_and_undecidable_ones_go_to_a_person() -> None:
    mixed = assembled(events(("shown", "pass"), ("clicked", "fail")))
    assert (mixed.outcome, mixed.needs_person) == ("partial", True)
    assert mixed.reason == "1 of 2 decidable goals pass; 1 left to a person"
    assert mixed.goals[2] == GoalResult("looks", "inconclusive", NEEDS_A_PERSON)
    assert mixed.measures == PageMeasures(
        ("rgba(0, 0, 0, 1)",), 2, ("system-ui",), (CardGrid("main", "article.card", 3),), 1
    )
    assert mixed.blocked_requests == ("u",) and mixed.grader == GRADER
    every = assembled(events(("shown", "pass"), ("clicked", "pass")), checks=(SHOWN, CLICKED))
    assert (every.outcome, every.needs_person) == ("pass", False)
    none = assembled(events(("shown", "fail")), checks=(SHOWN,))
    assert none.outcome == "fail"
    undecided = assembled(events(), checks=(LOOKS,))
    assert (undecided.outcome, undecided.reason) == (
        "inconclusive",
        "no goal can be decided from the page",
    )


def test_a_stuck_page_is_inconclusive_and_says_where_it_stuck() -> None:
    before = assembled([{"event": "loaded"}], timed_out=True)
    assert (before.outcome, before.needs_person) == ("inconclusive", True)
    assert before.reason == "timed out after 6s before the page could be measured"
    assert before.goals[0].reason == f"not tried: {before.reason}"
    during = assembled([*events()[:3], {"event": "goal_start", "id": "clicked"}], timed_out=True)
    assert during.reason == "timed out after 6s while trying goal 'clicked'"
    failed = assembled([{"event": "page_failed", "reason": "the page crashed"}])
    assert (failed.outcome, failed.reason) == ("inconclusive", "the page crashed")
    cut = assembled(events()[:3])
    assert cut.reason == "the browser worker ended unexpectedly (exit code 0)"


def test_a_broken_grader_raises_instead_of_grading() -> None:
    with pytest.raises(RuntimeError, match="Chromium did not start: no display"):
        assembled([{"event": "launch_error", "error": "no display"}])
    with pytest.raises(RuntimeError, match=r"the browser worker failed \(exit 0\)"):
        assembled([])


def test_a_report_survives_its_json_form_and_a_wrong_one_is_refused() -> None:
    report = dataclasses.replace(
        assembled(events(("shown", "pass"), ("clicked", "fail"))), screenshot_path=Path("/x.png")
    )
    assert report_from_json(report_to_json(report)) == report
    with pytest.raises(ValueError, match="not a browser report: KeyError: 'measures'"):
        report_from_json('{"outcome": "pass"}')
    with pytest.raises(ValueError, match="not a browser report: JSONDecodeError"):
        report_from_json("{")


def test_recordings_replay_exactly_and_an_unseen_page_goes_to_a_person(tmp_path: Path) -> None:
    shot = tmp_path / "live.png"
    shot.write_bytes(b"\x89PNG picture")
    report = dataclasses.replace(assembled(events(("shown", "pass"))), screenshot_path=shot)
    recordings = tmp_path / "recordings"
    record(recordings, "<p>42</p>", [SHOWN, CLICKED, LOOKS], report)
    offline = RecordedInspector(recordings)
    replayed = offline.inspect("<p>42</p>", [SHOWN, CLICKED, LOOKS], tmp_path / "out" / "r.png")
    assert replayed == dataclasses.replace(report, screenshot_path=tmp_path / "out" / "r.png")
    assert (tmp_path / "out" / "r.png").read_bytes() == b"\x89PNG picture"
    # Other checks on the same page are another question: no recording answers it.
    unseen = offline.inspect("<p>42</p>", [SHOWN], tmp_path / "u.png")
    assert (unseen.outcome, unseen.needs_person, unseen.grader) == (
        "inconclusive",
        True,
        OFFLINE_GRADER,
    )
    assert (
        unseen.reason == f"offline inspector: no recorded inspection of this page in {recordings}"
    )
    assert unseen.goals[0].reason.startswith("not inspected: no recorded inspection")
    assert unseen.screenshot_path is None and not (tmp_path / "u.png").exists()


def test_an_unreadable_recording_names_its_file(tmp_path: Path) -> None:
    key = recording_key("<p>x</p>", [SHOWN])
    tmp_path.joinpath(f"{key}.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{key}\.json: unreadable browser recording"):
        RecordedInspector(tmp_path).inspect("<p>x</p>", [SHOWN], tmp_path / "s.png")


def test_the_recording_inspector_keeps_what_the_inner_one_reports(tmp_path: Path) -> None:
    class Fixed:
        def inspect(self, html, checks, screenshot_path) -> BrowserReport:
            return assembled(events(("shown", "fail")), checks=checks)

    recorder = RecordingInspector(Fixed(), tmp_path)
    first = recorder.inspect("<p>1</p>", [SHOWN], tmp_path / "a.png")
    again = RecordedInspector(tmp_path).inspect("<p>1</p>", [SHOWN], tmp_path / "b.png")
    # The inner report names a picture that was never written: none is kept or replayed.
    assert again == dataclasses.replace(first, screenshot_path=None)


def test_the_resource_chooses_the_inspector(tmp_path: Path) -> None:
    assert BrowserResource().inspector() == ChromiumInspector(timeout_seconds=60.0)
    recording = BrowserResource(recordings_dir=str(tmp_path), timeout_seconds=4).inspector()
    assert recording == RecordingInspector(ChromiumInspector(4), tmp_path)
    assert BrowserResource(mode="offline", recordings_dir=str(tmp_path)).inspector() == (
        RecordedInspector(tmp_path)
    )
    with pytest.raises(ValueError, match="browser mode must be one of"):
        BrowserResource(mode="firefox").inspector()


def test_the_measuring_script_ships_as_one_function_of_its_limits() -> None:
    script = measure_script()
    body = [line for line in script.splitlines() if not line.startswith("//")]
    assert body[0] == "({ sizeRatio: SIZE_RATIO, minCards: MIN_CARDS }) => {"
    assert body[-1] == "}" and MEASURE_SCRIPT.endswith(".js")
