"""The PM suite's checks on the site: a page of their own, and the flag on the board.

`pm-checks.html` lists, per setup, the contamination check (counts, the paired gap, its exact
p-value, flagged or not) and, per task, whether its rubric separates setups. The PM board
marks a flagged setup through `board_context`. Everything comes from the release's
`pm_contamination` and `pm_task_admission` tables; nothing private is in either.
"""

from __future__ import annotations

from typing import Any, Protocol

from bench_pipeline.site.release_view import Release

PAGE = "pm-checks.html"


class Renderer(Protocol):
    """What the page needs from the site builder: its render call."""

    def render(self, path: str, template: str, shows: Any = (), **context: Any) -> None: ...


def board_context(release: Release) -> dict[str, Any]:
    """What the PM board adds: the setups the contamination check flags."""
    return {
        "contaminated": {
            str(r["setup_id"]) for r in release.rows("pm_contamination") if r.get("flagged")
        },
        "checks_page": PAGE,
    }


def pm_checks_view(release: Release) -> dict[str, Any]:
    """The checks page: contamination rows with their setup labels, and task admission."""
    labels = {
        str(r["setup_id"]): str(r.get("setup") or r["setup_id"]) for r in release.rows("pm_setups")
    }
    contamination = [
        r | {"label": labels.get(str(r["setup_id"]), str(r["setup_id"]))}
        for r in release.rows("pm_contamination")
    ]
    admission = release.rows("pm_task_admission")
    return {
        "contamination": contamination,
        "admission": admission,
        "parameters": release.schema.parameters("pm_task_admission"),
        "admitted": sum(1 for r in admission if r.get("separates")),
    }


def render_pm_checks(builder: Renderer, release: Release) -> None:
    """Write `pm-checks.html` (always: the methodology page links it; empty tables say so)."""
    builder.render(
        PAGE, "pm_checks.html", ("pm_contamination", "pm_task_admission"),
        **pm_checks_view(release),
    )  # fmt: skip
