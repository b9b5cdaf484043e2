"""What changed upstream between two releases, in the publishers' terms: a listing a source
dropped (delisted: the model is removed from that source, never "renamed", even when the
registry still knows it under another source's id), a listing added, a price that moved, a
score added, removed or changed. Each change names its source and the date of that source's
data in the newer release (or, for a dropped listing, the older one's when the source is gone).

Read from the rows `diff.diff_releases` already compares; the run ids stay in `caused_by`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

Row = dict[str, Any]

PRICE_COLUMNS = ("input_usd_per_1m", "output_usd_per_1m", "blended_price_usd_per_1m")
PRICE_SOURCES = ("openrouter_models", "models_dev")
"""Where the market's rates come from, in the order `indices/market.py` takes them
(OpenRouter's canonical rate, else the lab's own from models.dev)."""
SCORE_SOURCE = "epoch"


def _by(rows: list[Row], *key: str) -> dict[tuple, Row]:
    return {tuple(row.get(k) for k in key): row for row in rows}


def upstream_changes(
    rows: Callable[[str, str], list[Row]],
    changed: Callable[[str], Mapping[str, Any]],
    old_manifest: Mapping[str, Any],
    new_manifest: Mapping[str, Any],
    sources: Collection[str],
) -> list[Row]:
    """Every upstream change, listings first, then prices, then scores. Only a source in
    `sources` (those whose payload changed: `diff._causes`) changes upstream: a listing
    that moved because the registry matched afresh, its source's data unchanged, is not news
    from that source.

    Args:
        rows: `rows(table, "old" | "new")`, a release's published rows of a table.
        changed: `changed(table)`, the table's `diff_table` result (empty when unchanged).
        old_manifest: The older release's manifest (its `source_runs` date the data).
        new_manifest: The newer release's.
        sources: The sources with a new payload in the newer release.
    """
    dates = {r["source"]: r.get("data_as_of") for r in old_manifest.get("source_runs", [])}
    dates |= {r["source"]: r.get("data_as_of") for r in new_manifest.get("source_runs", [])}
    found: list[Row] = []

    def change(kind: str, source: str, **detail: Any) -> None:
        if source not in sources:
            return
        found.append({"kind": kind, "source": source, "data_as_of": dates.get(source)} | detail)

    aliases = changed("model_aliases")
    if aliases.get("rows_added") or aliases.get("rows_removed"):
        old_models = _by(rows("models", "old"), "model_id")
        new_models = _by(rows("models", "new"), "model_id")
        old_aliases = _by(rows("model_aliases", "old"), "source", "source_key")
        new_aliases = _by(rows("model_aliases", "new"), "source", "source_key")
        for key in aliases.get("rows_removed") or []:
            listing = old_aliases.get((key["source"], key["source_key"]), {})
            model_id = listing.get("model_id")
            model = old_models.get((model_id,), {})
            name = model.get("name") or listing.get("name")
            removed = (model_id,) not in new_models
            # the registry may still hold the model, under an id another source gives it:
            # named here so that the removal does not read as a rename
            namesakes = sorted(
                m
                for (m,), row in new_models.items()
                if removed and name and row.get("name") == name and (m,) not in old_models
            )
            change(
                "delisted", key["source"], listing=key["source_key"], model_id=model_id,
                model_name=name, model_removed=removed, now_listed_as=namesakes,
            )  # fmt: skip
        for key in aliases.get("rows_added") or []:
            listing = new_aliases.get((key["source"], key["source_key"]), {})
            model_id = listing.get("model_id")
            model = new_models.get((model_id,), {})
            change(
                "listed", key["source"], listing=key["source_key"], model_id=model_id,
                model_name=model.get("name") or listing.get("name"),
                model_added=(model_id,) not in old_models,
            )  # fmt: skip
    # a rate moved with the first of its sources whose payload changed (none: our own doing)
    price_source = next((s for s in PRICE_SOURCES if s in sources), None)
    for price in changed("market").get("changed") or []:
        if price_source is not None and price.get("column") in PRICE_COLUMNS:
            change(
                "price", price_source, model_id=price["key"].get("model_id"),
                column=price["column"], old=price.get("old"), new=price.get("new"),
            )  # fmt: skip
    scores = changed("epoch_scores")
    if any(scores.get(k) for k in ("rows_added", "rows_removed", "changed")):
        old_scores = _by(rows("epoch_scores", "old"), "evaluation_id", "row_key")
        new_scores = _by(rows("epoch_scores", "new"), "evaluation_id", "row_key")
        for kind, keys, held in (
            ("score_added", scores.get("rows_added") or [], new_scores),
            ("score_removed", scores.get("rows_removed") or [], old_scores),
        ):
            for key in keys:
                row = held.get((key["evaluation_id"], key["row_key"]), {})
                change(
                    kind, SCORE_SOURCE, evaluation_id=key["evaluation_id"],
                    row_key=key["row_key"], model_version=row.get("model_version"),
                    model_id=row.get("model_id"), new=row.get("score"),
                    log_url=row.get("log_url"),
                )  # fmt: skip
        for value in scores.get("changed") or []:
            if value.get("column") != "score":
                continue
            key = value["key"]
            row = new_scores.get((key["evaluation_id"], key["row_key"]), {})
            change(
                "score_changed", SCORE_SOURCE, evaluation_id=key["evaluation_id"],
                row_key=key["row_key"], model_version=row.get("model_version"),
                model_id=row.get("model_id"), old=value.get("old"), new=value.get("new"),
                log_url=row.get("log_url"),
            )  # fmt: skip
    return found
