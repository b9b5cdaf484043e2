"""The Navigator page's judge-split count and classic v1 sections (pure page shaping).

Kept apart from `views.navigator_view` so the v1 display (stored overall, what is shown, the
`mixed` label, every dimension) and the runs waiting on a person have one home.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench_pipeline.site.release_view import Release


def pending_splits(release: Release) -> int | None:
    """Runs waiting for a person to decide a judge split (None: an older release that did
    not publish the count)."""
    rows = release.rows("navigator_models")
    if not rows or "pending_runs" not in rows[0]:
        return None
    return sum(int(r.get("pending_runs") or 0) for r in rows)


def v1_results(release: Release) -> list[dict[str, Any]]:
    """One row per model, task and distinct score: stored and shown overall, label, the
    dimensions, and how many calls scored so."""
    counted: Counter[tuple] = Counter()
    for row in release.rows("navigator_v1_results"):
        key = (row["task"], row["model"], row["tier"], row["stored_overall"],
               row["displayed_overall"], row["label"], row["dimensions"], row["grader"],
               row.get("rubric_version"), bool(row.get("simulated")))  # fmt: skip
        counted[key] += 1
    return [
        {"task": task, "model": model, "tier": tier, "stored_overall": stored,
         "displayed_overall": shown, "label": label,
         "dimensions": sorted(json.loads(dimensions or "{}").items()), "grader": grader,
         "rubric_version": rubric, "simulated": simulated, "calls": calls}
        for (task, model, tier, stored, shown, label, dimensions, grader, rubric, simulated),
        calls in sorted(counted.items(), key=lambda item: tuple(map(str, item[0][:2])))
    ]  # fmt: skip


def navigator_v1_view(release: Release) -> dict[str, Any]:
    """What the Navigator page adds: the split count and the v1 library and results."""
    results = v1_results(release)
    return {
        "pending_splits": pending_splits(release),
        "v1_tasks": release.rows("navigator_v1_tasks"),
        "v1_results": results,
        "v1_mixed": sum(r["calls"] for r in results if r["label"] == "mixed"),
    }
