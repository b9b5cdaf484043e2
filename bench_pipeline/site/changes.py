"""The upstream changes that open "What changed" (`release/upstream.py` in diff.json), as
sentences a reader can take in: who changed what, on which date's data, and which model it
touches. Pure shaping; run ids stay in the row-level detail below them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_pipeline.site import markup
from bench_pipeline.site.evidence import evidence_url
from bench_pipeline.site.layout import Row

KINDS = {
    "delisted": "Removed",
    "listed": "Listed",
    "price": "Price moved",
    "score_added": "Score added",
    "score_removed": "Score removed",
    "score_changed": "Score changed",
}
"""The headline word of each kind of change."""

UPSTREAM_SHOWN = 50
"""Upstream changes listed on the page (diff.json holds every one)."""


def _date(value: Any) -> str:
    return str(value)[:10] if value else markup.MISSING


def _text(change: Row, evaluations: Mapping[str, str]) -> str:
    kind = change.get("kind")
    name = change.get("model_name") or change.get("model_version") or change.get("model_id")
    if kind == "delisted":
        tail = (
            "; the model is removed from this release"
            if change.get("model_removed")
            else "; the model stays, listed by other sources"
        )
        if change.get("now_listed_as"):
            tail += (
                " (a model of the same name, listed by other sources, is added as "
                + ", ".join(change["now_listed_as"])
                + ": a new entry, not a rename)"
            )
        return f"{name}: the listing {change.get('listing')} is gone{tail}"
    if kind == "listed":
        new = "; a new model" if change.get("model_added") else ""
        return f"{name}: new listing {change.get('listing')}{new}"
    if kind == "price":
        column = str(change.get("column", "")).replace("_usd_per_1m", "").replace("_", " ")
        return (
            f"{name}: {column} {markup.usd(change.get('old'))} → "
            f"{markup.usd(change.get('new'))} per 1M tokens"
        )
    evaluation = evaluations.get(str(change.get("evaluation_id")), change.get("evaluation_id"))
    if kind == "score_changed":
        return (
            f"{name} on {evaluation}: {markup.number(change.get('old'))} → "
            f"{markup.number(change.get('new'))}"
        )
    return f"{name} on {evaluation}: {markup.number(change.get('new'))}"


def upstream_view(
    diff: Mapping[str, Any] | None,
    models: Mapping[str, Any],
    sources: Mapping[str, Row],
    evaluations: Mapping[str, str],
) -> dict[str, Any]:
    """The upstream changes as rows (`kind`, `what`, `source`, `date`, `model`, `evidence`),
    cut to UPSTREAM_SHOWN, with their count; `known` is False for a diff made before
    diff.json listed them."""
    changes = (diff or {}).get("upstream")
    if changes is None:
        return {"known": False, "rows": [], "count": 0}
    rows = []
    for change in changes[:UPSTREAM_SHOWN]:
        source = str(change.get("source"))
        listed = sources.get(source) or {}
        model_id = change.get("model_id")
        if change.get("model_removed"):
            model_id = None  # no page of it in this release to link
        rows.append(
            {
                "kind": change.get("kind"),
                "headline": KINDS.get(str(change.get("kind")), str(change.get("kind"))),
                "what": _text(change, evaluations),
                "source": source,
                "publisher": listed.get("publisher") or source,
                "date": _date(change.get("data_as_of")),
                "model": models.get(model_id) if isinstance(model_id, str) else None,
                "evidence": evidence_url(change.get("log_url")),
            }
        )
    return {"known": True, "rows": rows, "count": len(changes)}
