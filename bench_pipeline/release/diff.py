"""What changed between two releases, from their published JSON files (values as published).

For every table: the keys of rows added and removed, each changed value with the lineage of
its new row (lineage columns themselves are not compared: a new run id alone is no change),
and, for a ranked table, every row whose rank moved. Ranks are read from the published rank
columns; only a release made before it published them has its ranks derived, by the same
rule (`scores/ranking.py`). `caused_by` names the source runs that
brought new content: runs of the new release whose source, payload digest and status no run
of the old release had (a re-ingestion of an unchanged payload is not a cause). `upstream`
says the same in the publishers' terms (`upstream.py`: a listing dropped or added, a price
moved, a score added), each with its source and data date.

Only the tables that can have changed are read: a table whose JSON file has the same digest in
both releases is unchanged, and a new table's rows are not read (but `models`', for the models
added), so the diff of a release that changed one table reads that one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_pipeline.release.published import PUBLISHED_BY_NAME
from bench_pipeline.release.schema import RankRule, rules_from_document
from bench_pipeline.release.upstream import upstream_changes

MANIFEST = "manifest.json"

Row = dict[str, Any]


def load_manifest(release_dir: Path) -> dict[str, Any]:
    return json.loads((release_dir / MANIFEST).read_text(encoding="utf-8"))


def _rows(release_dir: Path, entry: dict[str, Any]) -> list[Row]:
    return json.loads((release_dir / entry["files"]["json"]["path"]).read_text(encoding="utf-8"))


def _shape(entry: dict[str, Any]) -> tuple[list[str], tuple[RankRule, ...], list[str]]:
    """Key, rank rules and lineage columns: as the manifest recorded them, else as defined.

    A manifest from before rank columns were published names one `rank_by` column and no
    rank column; its board is then read by today's declaration of the table.
    """
    defined = PUBLISHED_BY_NAME.get(entry["name"])
    key = entry.get("key") or (list(defined.key) if defined else [])
    if "ranks" in entry:
        ranks = rules_from_document(entry)
    else:
        ranks = defined.ranks if defined else ()
    lineage = entry.get("lineage", list(defined.lineage) if defined else [])
    return list(key), ranks, list(lineage)


def _key(row: Row, key: list[str]) -> tuple:
    return tuple(row.get(column) for column in key)


def _ranks(rows: list[Row], key: list[str], rule: RankRule) -> dict[tuple, int | None]:
    """Each row's rank on the board: its published rank column, or (a release from before
    ranks were published) the rank the rule gives."""
    if rows and rule.column in rows[0]:
        ranks = [row.get(rule.column) for row in rows]
    else:
        ranks = rule.ranks(rows)
    return {_key(row, key): rank for row, rank in zip(rows, ranks, strict=True)}


def diff_table(
    old_rows: list[Row],
    new_rows: list[Row],
    key: list[str],
    ranks: Sequence[RankRule],
    lineage: list[str],
) -> dict[str, Any]:
    """What changed in one table: rows added and removed, values changed, rank moves.

    Args:
        old_rows: The older release's rows (as published in JSON).
        new_rows: The newer release's rows.
        key: The columns naming a row.
        ranks: The table's boards; a rank column's changes are reported as rank moves
            (with the column), not as changed values.
        lineage: Columns shown beside a change and never compared.
    """

    def named(k: tuple) -> dict[str, Any]:
        return dict(zip(key, k, strict=True))

    old = {_key(row, key): row for row in old_rows}
    new = {_key(row, key): row for row in new_rows}
    old_columns = list(old_rows[0]) if old_rows else []
    new_columns = list(new_rows[0]) if new_rows else []
    rank_columns = {rule.column for rule in ranks}
    skipped = {*key, *lineage, *rank_columns}
    compared = [c for c in new_columns if c not in skipped and c in old_columns]
    changed = [
        {
            "key": named(k),
            "column": column,
            "old": old[k][column],
            "new": row[column],
            "lineage": {c: row[c] for c in lineage if c in row},
        }
        for k, row in new.items()
        if k in old
        for column in compared
        if old[k][column] != row[column]
    ]
    result: dict[str, Any] = {
        "rows_added": [named(k) for k in new if k not in old],
        "rows_removed": [named(k) for k in old if k not in new],
        "changed": changed,
        "rank_moves": [],
    }
    for rule in ranks:
        old_rank, new_rank = _ranks(old_rows, key, rule), _ranks(new_rows, key, rule)
        result["rank_moves"] += [
            {"key": named(k), "old_rank": old_rank.get(k), "new_rank": new_rank.get(k)}
            | ({"column": rule.column} if len(ranks) > 1 else {})
            for k in new
            if k in old and old_rank.get(k) != new_rank.get(k)
        ]
    if old_rows and new_rows and set(old_columns) != set(new_columns):
        result["columns_added"] = [c for c in new_columns if c not in old_columns]
        result["columns_removed"] = [c for c in old_columns if c not in new_columns]
    return result


def unchanged() -> dict[str, list]:
    """What `diff_table` gives for two identical tables."""
    return {"rows_added": [], "rows_removed": [], "changed": [], "rank_moves": []}


def _same_json(old_entry: dict[str, Any], new_entry: dict[str, Any]) -> bool:
    """Whether two manifest entries name JSON files with the same digest (so the same rows,
    and the table's diff is `unchanged()` without reading either)."""
    return old_entry["files"]["json"]["sha256"] == new_entry["files"]["json"]["sha256"]


def _causes(old: dict[str, Any] | None, new: dict[str, Any]) -> list[dict[str, Any]]:
    if old is None:
        return list(new["source_runs"])
    seen_ids = {run["run_id"] for run in old["source_runs"]}
    seen_payloads = {(r["source"], r["content_sha256"], r["status"]) for r in old["source_runs"]}
    return [
        run
        for run in new["source_runs"]
        if run["run_id"] not in seen_ids
        and (run["source"], run["content_sha256"], run["status"]) not in seen_payloads
    ]


def diff_releases(old_dir: Path | None, new_dir: Path) -> dict[str, Any]:
    """The differences from the release in `old_dir` (None: no earlier release) to `new_dir`."""
    new = load_manifest(new_dir)
    old = load_manifest(old_dir) if old_dir is not None else None
    old_entries = {entry["name"]: entry for entry in old["tables"]} if old else {}
    new_entries = {entry["name"]: entry for entry in new["tables"]}
    tables: dict[str, Any] = {}
    models: dict[str, list] = {"models_added": [], "models_removed": []}
    for name, entry in new_entries.items():
        old_entry = old_entries.get(name)
        if old_entry is not None and _same_json(old_entry, entry):
            tables[name] = unchanged()  # the same rows, byte for byte: nothing to read
            continue
        if old_entry is None:
            tables[name] = {"added_table": True, "rows": entry["rows"]}
            if name != "models":
                continue  # a new table's rows matter only for the models added
        new_rows = _rows(new_dir, entry)
        old_rows: list[Row] = []
        if old_entry is not None:
            assert old_dir is not None
            old_rows = _rows(old_dir, old_entry)
            tables[name] = diff_table(old_rows, new_rows, *_shape(entry))
        if name == "models":
            old_ids = {row["model_id"] for row in old_rows}
            new_ids = {row["model_id"] for row in new_rows}
            models["models_added"] = [
                r["model_id"] for r in new_rows if r["model_id"] not in old_ids
            ]
            models["models_removed"] = [
                r["model_id"] for r in old_rows if r["model_id"] not in new_ids
            ]
    for name, entry in old_entries.items():
        if name not in new_entries:
            tables[name] = {"removed_table": True, "rows": entry["rows"]}
    causes = _causes(old, new)
    upstream: dict[str, list[Row]] = {}  # nothing to say against no earlier release
    if old is not None:
        assert old_dir is not None
        sides = {"old": (old_dir, old_entries), "new": (new_dir, new_entries)}

        def side_rows(table: str, side: str) -> list[Row]:
            folder, entries = sides[side]
            return _rows(folder, entries[table]) if table in entries else []

        upstream["upstream"] = upstream_changes(
            side_rows, lambda table: tables.get(table) or {}, old, new,
            {run["source"] for run in causes},
        )  # fmt: skip
    return {
        "from": old["release_id"] if old else None,
        "to": new["release_id"],
        **models,
        **upstream,
        "tables": tables,
        "caused_by": {"source_runs": causes, "case_versions": []},
    }
