"""The Chromium inspector's worker process: Playwright driving one inspection.

Run as `python -m bench_pipeline.grading.browser_worker` by `browser_parent`, the job as JSON
on stdin. Each step is reported as one line on stdout, `MARK` then a JSON event: `loaded`,
`measures` (what `browser_measure.js` returned), `screenshot`, `goal_start` and `goal` per
goal, then one final `done`, `page_failed` or `launch_error`. Anything else the process
prints goes to stderr, so it can never pass for a report.

Containment: every request other than the page itself is aborted (and listed), the context is
offline, and Chromium's proxy points at a closed port so nothing that escapes routing reaches
a host.
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

from bench_pipeline.grading.browser import CHROMIUM, MIN_CARDS, QUIET_ARGS, SIZE_RATIO, GoalOutcome

PAGE_URL = "http://prototype.localhost/"
"""Where the page is served from (by the route, never a network): a `.localhost` name is a
secure context, so storage and other secure-only APIs a prototype may use work."""
VIEWPORT = {"width": 1280, "height": 800}
DEAD_PROXY = "http://127.0.0.1:9"
"""Port 9 (discard): nothing listens, so a request that slipped past routing goes nowhere."""
LAUNCH_ARGS = (
    *QUIET_ARGS,
    f"--proxy-server={DEAD_PROXY}",
    "--proxy-bypass-list=<-loopback>",  # loopback through the dead proxy too
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
MARK = "@@bench-browser "
TERMINAL_EVENTS = frozenset({"done", "page_failed", "launch_error"})
MEASURE_SCRIPT = "browser_measure.js"


def measure_script() -> str:
    """The measuring script shipped beside this module (one arrow function expression)."""
    return resources.files("bench_pipeline.grading").joinpath(MEASURE_SCRIPT).read_text("utf-8")


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def main() -> None:
    """The worker: read the job from stdin, report each step as one marked JSON line."""
    job = json.loads(sys.stdin.read())
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything else that prints goes to stderr, not into the reports

    def emit(**event: Any) -> None:
        report.write(MARK + json.dumps(event) + "\n")
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
            limits = {"sizeRatio": SIZE_RATIO, "minCards": MIN_CARDS}
            emit(event="measures", **page.evaluate(measure_script(), limits))
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


if __name__ == "__main__":
    main()
