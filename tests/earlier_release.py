"""The release's earlier code paths, kept as oracles for the faster ones that replaced them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from bench_pipeline.release.diff import _causes, _shape, diff_table, load_manifest
from bench_pipeline.release.downloads import neutralise_formulas, published_values


def earlier_json(frame: pl.DataFrame) -> bytes:
    """The JSON rendering as it was written before (NDJSON text split and joined in Python)."""
    lines = published_values(frame).write_ndjson().split("\n")
    body = ",\n".join(line for line in lines if line)
    return ("[\n" + body + "\n]\n" if body else "[]\n").encode()


def earlier_csv(frame: pl.DataFrame) -> bytes:
    """The CSV rendering as it was written before (as text, then encoded)."""
    return published_values(neutralise_formulas(frame)).write_csv(null_value="").encode()


def _rows(release_dir: Path, entry: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads((release_dir / entry["files"]["json"]["path"]).read_text(encoding="utf-8"))


def earlier_diff(old_dir: Path | None, new_dir: Path) -> dict[str, Any]:
    """`diff_releases` as it was: every table's rows read, in both releases, every time."""
    new = load_manifest(new_dir)
    old = load_manifest(old_dir) if old_dir is not None else None
    old_entries = {entry["name"]: entry for entry in old["tables"]} if old else {}
    new_entries = {entry["name"]: entry for entry in new["tables"]}
    tables: dict[str, Any] = {}
    models: dict[str, list] = {"models_added": [], "models_removed": []}
    for name, entry in new_entries.items():
        new_rows = _rows(new_dir, entry)
        if name not in old_entries:
            tables[name] = {"added_table": True, "rows": len(new_rows)}
            old_rows: list[dict[str, Any]] = []
        else:
            assert old_dir is not None
            old_rows = _rows(old_dir, old_entries[name])
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
    return {
        "from": old["release_id"] if old else None,
        "to": new["release_id"],
        **models,
        "tables": tables,
        "caused_by": {"source_runs": _causes(old, new), "case_versions": []},
    }
