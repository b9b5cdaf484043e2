"""Prototype inspection in a real browser: Debian's Chromium at /usr/bin/chromium, driven by
Playwright in a worker process. Measures are asserted exactly on fixture pages written for
them; a hanging page must come back `inconclusive` within the deadline and leave no process
behind; the page must not reach the network.

Without Chromium these tests fail, they do not skip (CI installs it: `apt-get install chromium`).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import CountingServer
from pydantic import ValidationError

from bench_pipeline.grading import browser, browser_parent
from bench_pipeline.grading.browser import BrowserReport, CardGrid
from bench_pipeline.grading.browser_parent import inspect_prototype
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.models import BrowserCheck

pytestmark = pytest.mark.integration

PROTOTYPES = Path(__file__).parent / "fixtures" / "prototypes"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def prototype(name: str) -> str:
    return (PROTOTYPES / name).read_text(encoding="utf-8")


def goal(id: str, **fields: str) -> BrowserCheck:
    return BrowserCheck(id=id, question=f"Question for {id}?", **fields)


def assert_png(path: Path | None) -> None:
    assert path is not None and path.exists()
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000


def our_browser_processes() -> list[int]:
    """Processes started by an inspection (their HOME is its `bench-browser-` directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if b"/bench-browser-" in environment and stat[stat.rindex(")") + 2] not in "ZX":
            found.append(int(entry.name))
    return found


# Model: what makes a check decidable ---------------------------------------------------------


def test_browser_check_fields_are_optional_and_left_out_when_unset():
    plain = BrowserCheck(id="opens", question="Does it open?")
    assert plain.model_dump(mode="json") == {"id": "opens", "question": "Does it open?"}
    assert not plain.decidable
    full = goal("reveal", click="#reveal", selector="#answer", expect_text="42")
    assert full.decidable
    assert full.model_dump(mode="json")["click"] == "#reveal"
    with pytest.raises(ValidationError, match="`click` needs a `selector` or `expect_text`"):
        goal("click-only", click="#reveal")


def test_the_bank_prototype_cases_still_load_with_a_decidable_check():
    bank = load_bank()
    dashboard = bank.get("pm", "pm-proto-usage-dashboard")
    assert [c.id for c in dashboard.browser_checks if c.decidable] == ["headline_shown"]
    invite = bank.get("pm", "pm-proto-invite-flow")
    assert not any(c.decidable for c in invite.browser_checks)  # typing is for a person


# Measures and goals on the fixture pages ----------------------------------------------------

PLAIN_GOALS = [
    goal("reveals_answer", click="#reveal", selector="#answer", expect_text="42"),
    goal("answer_shown_at_first", selector="#answer"),
    goal("wrong_answer", click="#reveal", expect_text="43"),
    BrowserCheck(id="looks_calm", question="Does the page look calm?"),
]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> BrowserReport:
    shot = tmp_path_factory.mktemp("plain") / "shots" / "plain.png"
    return inspect_prototype(prototype("plain.html"), PLAIN_GOALS, shot)


def test_plain_page_measures(plain):
    assert plain.measures is not None
    assert plain.measures.colours == (
        "rgba(255, 255, 255, 1)",  # page background, button text
        "rgba(29, 78, 216, 1)",  # button background and border
        "rgba(34, 34, 34, 1)",  # text
    )
    assert plain.measures.colour_count == 3
    assert plain.measures.gradients == 0
    assert plain.measures.font_families == ("Georgia, serif",)
    assert plain.measures.card_grids == ()
    assert plain.measures.em_dashes == 0
    assert plain.blocked_requests == () and plain.page_errors == ()
    assert plain.grader == "browser:chromium@1"


def test_plain_page_goals(plain):
    assert [(g.id, g.outcome, g.reason) for g in plain.goals] == [
        (
            "reveals_answer",
            "pass",
            "after clicking '#reveal', '#answer' is visible, '42' is shown in '#answer'",
        ),
        ("answer_shown_at_first", "fail", "'#answer' is not visible"),
        (
            "wrong_answer",
            "fail",
            "after clicking '#reveal', '43' is not shown on the page; it shows "
            "'A question What is six times seven? Show the answer The answer is 42.'",
        ),
        ("looks_calm", "inconclusive", browser.NEEDS_A_PERSON),
    ]
    assert (plain.outcome, plain.reason, plain.needs_person) == (
        "partial",
        "1 of 3 decidable goals pass; 1 left to a person",
        True,
    )


def test_plain_page_screenshot(plain):
    assert plain.screenshot_path is not None
    assert plain.screenshot_path.name == "plain.png"
    assert_png(plain.screenshot_path)
    assert not list(plain.screenshot_path.parent.glob(".*partial*"))


@pytest.fixture(scope="module")
def gradients(tmp_path_factory: pytest.TempPathFactory) -> BrowserReport:
    shot = tmp_path_factory.mktemp("gradients") / "gradients.png"
    goals = [goal("headline", selector="h1", expect_text="Ship faster")]
    return inspect_prototype(prototype("gradients.html"), goals, shot)


def test_gradient_page_measures(gradients):
    measures = gradients.measures
    assert measures is not None
    # body 1, header 2 layers, header::before 1, three badges 1 each; the hidden one not.
    assert measures.gradients == 7
    # h1, two card paragraphs, the footer's &mdash;; not the title, script or hidden text.
    assert measures.em_dashes == 4
    assert measures.font_families == ("Georgia, serif", "Inter, system-ui, sans-serif")
    # The three cards; not the nav links (no inner structure) nor the stats (one is wider).
    assert measures.card_grids == (
        CardGrid(container="html > body > section.grid", signature="article.card", cards=3),
    )
    assert measures.colours == ("rgba(15, 23, 42, 1)", "rgba(255, 255, 255, 1)")


def test_gradient_page_goal_and_screenshot(gradients):
    assert (gradients.outcome, gradients.reason, gradients.needs_person) == (
        "pass",
        "1 of 1 decidable goals pass",
        False,
    )
    assert_png(gradients.screenshot_path)


def test_a_missing_click_target_fails_the_goal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative screenshot path is the caller's, not the worker's
    report = inspect_prototype(
        prototype("plain.html"),
        [goal("filter", click="#filter", expect_text="Platform")],
        Path("relative") / "missing.png",
    )
    assert report.screenshot_path == tmp_path / "relative" / "missing.png"
    assert_png(report.screenshot_path)
    assert [(g.outcome, g.reason) for g in report.goals] == [
        ("fail", "nothing matches the element to click, '#filter'")
    ]
    assert (report.outcome, report.needs_person) == ("fail", False)


def test_the_bank_headline_check_on_a_small_dashboard(tmp_path):
    dashboard = load_bank().get("pm", "pm-proto-usage-dashboard")
    page = "<!doctype html><main><h1><strong>98</strong> of 120 seats used</h1></main>"
    report = inspect_prototype(page, dashboard.browser_checks, tmp_path / "dash.png")
    outcomes = {g.id: g.outcome for g in report.goals}
    assert outcomes == {
        "headline_shown": "pass",
        "sorted_by_inactive": "inconclusive",
        "filter_works": "inconclusive",
    }
    wrong = "<!doctype html><main><h1>99 of 120 seats used</h1></main>"
    report = inspect_prototype(wrong, dashboard.browser_checks, tmp_path / "wrong.png")
    assert report.goals[0].outcome == "fail"


# Pages that hang ------------------------------------------------------------------------------


def test_a_page_that_never_loads_is_inconclusive_within_the_deadline(tmp_path):
    started = time.monotonic()
    report = inspect_prototype(
        prototype("hang.html"), PLAIN_GOALS[:1], tmp_path / "hang.png", timeout_seconds=6
    )
    assert time.monotonic() - started < 6 + 1
    assert report.outcome == "inconclusive" and report.needs_person
    assert report.reason == "the page did not finish loading within 2.4s (a script may be stuck)"
    assert report.goals[0].outcome == "inconclusive"
    assert report.goals[0].reason.startswith("not tried: the page did not finish loading")
    assert report.measures is None and report.screenshot_path is None
    assert not (tmp_path / "hang.png").exists()
    assert our_browser_processes() == []


HANG_AFTER_LOAD = """<!doctype html>
<p>Loaded, then stuck for ever.</p>
<script>
  addEventListener("load", () => setTimeout(() => { while (true) {} }, 0));
</script>
"""


def test_a_page_that_hangs_after_loading_is_killed_at_the_deadline(tmp_path):
    # Loading succeeds, so only the hard deadline can stop the inspection: Playwright's
    # evaluate would wait for ever on the stuck page.
    started = time.monotonic()
    report = inspect_prototype(
        HANG_AFTER_LOAD, PLAIN_GOALS[:1], tmp_path / "late.png", timeout_seconds=5
    )
    assert time.monotonic() - started < 5 + 1
    assert (report.outcome, report.reason, report.needs_person) == (
        "inconclusive",
        "timed out after 5s before the page could be measured",
        True,
    )
    assert report.goals[0].reason == (
        "not tried: timed out after 5s before the page could be measured"
    )
    time.sleep(0.2)
    assert our_browser_processes() == []


def test_a_stale_screenshot_is_not_reported_as_this_runs(tmp_path):
    shot = tmp_path / "stale.png"
    shot.write_bytes(b"old picture")
    report = inspect_prototype(prototype("hang.html"), [], shot, timeout_seconds=4)
    assert report.screenshot_path is None and not shot.exists()


# No network -----------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[CountingServer]:
    listening = CountingServer()
    yield listening
    listening.close()


def reaching_page(port: int) -> str:
    base = f"http://127.0.0.1:{port}"
    return f"""<!doctype html>
<html><head>
<link rel="stylesheet" href="{base}/style.css">
<script src="https://cdn.example.com/lib.js"></script>
</head><body>
<p>Tries every way out.</p>
<img src="{base}/pixel.png" alt="">
<script>
  fetch("{base}/api").catch(() => {{}});
  try {{ new WebSocket("ws://127.0.0.1:{port}/socket"); }} catch (e) {{}}
  navigator.sendBeacon("{base}/beacon", "x");
</script>
</body></html>"""


def _assert_contained(report: BrowserReport, server: CountingServer) -> None:
    assert report.outcome == "inconclusive" and report.reason == "no goals to check"
    assert report.measures is not None
    base = f"http://127.0.0.1:{server.port}"
    assert {f"{base}/style.css", "https://cdn.example.com/lib.js", f"{base}/pixel.png"} <= set(
        report.blocked_requests
    )
    time.sleep(0.3)
    assert server.accepted == 0
    # The server does count a connection that is allowed, so the zero above means something.
    socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
    deadline = time.monotonic() + 2
    while server.accepted == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.accepted == 1


def test_the_page_cannot_reach_a_loopback_server(server, tmp_path):
    report = inspect_prototype(reaching_page(server.port), [], tmp_path / "net.png")
    _assert_contained(report, server)


def test_routing_alone_keeps_the_page_offline(server, tmp_path, monkeypatch):
    # Force the fallback taken where `unshare` is not allowed: only routing, offline mode and
    # the dead proxy stand between the page and the loopback server.
    monkeypatch.setattr(browser_parent, "_isolation", lambda: ())
    report = inspect_prototype(reaching_page(server.port), [], tmp_path / "net.png")
    _assert_contained(report, server)
    assert our_browser_processes() == []


# The inspector grading is handed ---------------------------------------------------------------


def test_a_cycle_graded_in_chromium_is_replayed_offline_exactly(tmp_path):
    """The real inspector, as the browser resource gives it, grades a prototype run in a cycle
    and records the inspection; the offline inspector then grades the same run identically
    without starting any process, and a page it never saw goes to a person."""
    import asyncio
    from datetime import UTC, datetime

    from bench_pipeline.grading.browser_offline import OFFLINE_GRADER
    from bench_pipeline.grading.cycle import RunToGrade, grade_runs
    from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
    from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
    from bench_pipeline.resources.browser import BrowserResource

    case = load_bank().get("pm", "pm-proto-usage-dashboard")
    page = "<!doctype html><main><h1><strong>98</strong> of 120 seats used</h1></main>"
    runs = [RunToGrade("r-dash", case, case.prompts()[0].input_id, page, "Acme")]
    recordings = tmp_path / "recordings"

    def cycle(resource: BrowserResource, shots: str):
        result = asyncio.run(grade_runs(
            runs, SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL, [], "c-browser",
            rates={}, now=datetime(2026, 12, 1, tzinfo=UTC), screenshots=tmp_path / shots,
            inspector=resource.inspector(),
        ))  # fmt: skip
        (row,) = [g for g in result.grades if g["grader_kind"] == "browser"]
        (report,) = result.browser
        return row, report

    live, live_report = cycle(BrowserResource(recordings_dir=str(recordings)), "live")
    assert (live["outcome"], live["grader"]) == ("pass", browser.GRADER)
    assert live["reason"] == "1 of 1 decidable goals pass; 2 left to a person"
    assert_png(Path(live_report["screenshot"]))

    before = our_browser_processes()
    replayed, replay_report = cycle(
        BrowserResource(mode="offline", recordings_dir=str(recordings)), "replay"
    )
    assert our_browser_processes() == before == []
    same = ("outcome", "reason", "grader", "details", "grade_id")
    assert {k: replayed[k] for k in same} == {k: live[k] for k in same}
    assert (
        Path(replay_report["screenshot"]).read_bytes()
        == Path(live_report["screenshot"]).read_bytes()
    )

    runs[0] = RunToGrade(
        "r-dash", case, case.prompts()[0].input_id, page.replace("98", "97"), "Acme"
    )
    unseen, _ = cycle(BrowserResource(mode="offline", recordings_dir=str(recordings)), "unseen")
    assert (unseen["outcome"], unseen["grader"]) == ("inconclusive", OFFLINE_GRADER)
