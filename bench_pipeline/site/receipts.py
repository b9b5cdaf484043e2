"""Receipt pages, the task list, and the links boards use to reach them.

From the release's `receipts`, `receipt_scores` and `tasks` tables only: a page per receipt
(`receipts/<run>.html`: input, output, scores per criterion, graders, the PM judge's work,
costs), an index of receipts grouped by suite and setup (`receipts/index.html`, one anchor per
setup, which board rows link to), and the task list (`tasks.html`) with each task's "Measures
the model" / "Measures the system" mark. Called from `SiteBuilder.build` before the boards
render, because it also gives their templates `receipts_of` (a setup's receipt list) and
`measures_line` (what a suite's tasks measure).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from typing import Any, Protocol

import jinja2

from bench_pipeline.grading.judge_flows import BLIND_REVIEW_QUESTION
from bench_pipeline.site.markup import slugify
from bench_pipeline.site.release_view import Release

Row = dict[str, Any]
MEASURES = {"model": "Measures the model", "system": "Measures the system"}
SUITES = {"pm": "PM suite", "navigator": "Navigator", "usecase": "UseCaseRank"}
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,80}$")


class Builder(Protocol):
    """What these pages need from the site builder."""

    release: Release
    env: jinja2.Environment

    def render(self, path: str, template: str, shows: Any = (), **context: Any) -> None: ...


def receipt_path(run_id: str) -> str:
    """A receipt's page, relative to the site root (an unusual run id is hashed)."""
    name = run_id if _SAFE.match(run_id) else "run-" + hashlib.sha256(run_id.encode()).hexdigest()
    return f"receipts/{name[:90]}.html"


def setup_anchor(suite: str, setup: Any) -> str:
    """The id of a setup's section on the receipts index (a digest keeps two labels that
    slug alike apart)."""
    digest = hashlib.sha256(str(setup).encode()).hexdigest()[:6]
    return f"{suite}-{slugify(str(setup))}-{digest}"


def measures_summary(tasks: list[Row], suite: str) -> str | None:
    """What a suite's tasks measure, in words ("Measures the model: 4 tasks; ..."), or None
    when the release lists none of its tasks."""
    counts = Counter(str(t["measures"]) for t in tasks if t["suite"] == suite)
    if not counts:
        return None
    return "; ".join(
        f"{MEASURES.get(kind, kind)}: {n} {'task' if n == 1 else 'tasks'}"
        for kind, n in sorted(counts.items())
    )


def render_receipts(builder: Builder) -> None:
    """Register the boards' link helpers, then render every receipt, the index and the task
    list (the index and the list say so when the release has none: every footer links them)."""
    release = builder.release
    receipts = release.rows("receipts")
    tasks = release.rows("tasks")
    anchors = {(str(r["suite"]), str(r["setup"])) for r in receipts}

    def receipts_of(suite: str, setup: Any) -> str | None:
        """A setup's receipt list (by its label, as every board shows it), if it has any."""
        if (suite, str(setup)) not in anchors:
            return None
        return f"receipts/index.html#{setup_anchor(suite, setup)}"

    def measures_line(suite: str) -> str | None:
        """What the suite's tasks measure, for its board."""
        return measures_summary(tasks, suite)

    builder.env.globals.update(
        receipts_of=receipts_of,
        measures_line=measures_line,
        MEASURES=MEASURES,
        BLIND_REVIEW_QUESTION=BLIND_REVIEW_QUESTION,
    )
    builder.render("tasks.html", "tasks.html", suites=SUITES, tasks=tasks)
    scores: dict[str, list[Row]] = defaultdict(list)
    for row in release.rows("receipt_scores"):
        scores[str(row["run_id"])].append(row)
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for receipt in receipts:
        path = receipt_path(str(receipt["run_id"]))
        groups[(str(receipt["suite"]), str(receipt["setup"]))].append(receipt | {"href": path})
        builder.render(
            path,
            "receipt.html",
            simulated=["Receipts"] if receipt.get("simulated") else [],
            r=receipt,
            scores=scores.get(str(receipt["run_id"]), []),
            suite_title=SUITES.get(str(receipt["suite"]), receipt["suite"]),
            claims=_claims(receipt.get("claims_not_found")),
        )
    builder.render(
        "receipts/index.html",
        "receipts.html",
        ("receipts",),
        suites=SUITES,
        groups=[
            (suite, setup, setup_anchor(suite, setup), rows)
            for (suite, setup), rows in sorted(groups.items())
        ],
    )


def _claims(value: Any) -> list[str] | None:
    """The judge's unfound claims as a list (None: the claims check was not read)."""
    if value is None:
        return None
    found = json.loads(str(value))
    return [str(c) for c in found] if isinstance(found, list) else None
