"""Links from a published figure to the publisher's evidence for it (a run's log viewer),
where the release carries one. Pure functions over release rows; nothing here renders."""

from __future__ import annotations

from collections.abc import Iterable

from bench_pipeline.site.layout import Row


def evidence_url(value: object) -> str | None:
    """`value` when it is a link a reader can open (https), else None."""
    return value if isinstance(value, str) and value.startswith("https://") else None


def index_evidence(lineage: Iterable[Row]) -> dict[str, str]:
    """The log viewer behind each model's score on each evaluation, from `index_lineage`,
    keyed `"<model_id> <evaluation_id>"` (as the Known Good Index page looks it up)."""
    found: dict[str, str] = {}
    for row in lineage:
        url = evidence_url(row.get("log_url"))
        if url is not None:
            found[f"{row.get('model_id')} {row.get('evaluation_id')}"] = url
    return found
