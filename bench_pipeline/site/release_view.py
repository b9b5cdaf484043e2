"""One dataset release as the site reads it: the one model every page view is shaped from.

`load_release` reads the manifest, every table it lists, the diff and the schema;
`Release` holds them. Every view module (`views`, `navigator_v1`, `hub`, `compare`, ...)
imports it from here, and this module imports no view, so the site's modules stay a tree
(`tests/test_site_structure.py` keeps it so).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_pipeline.site.large_tables import LargeTable, open_large
from bench_pipeline.site.layout import Row, Schema, complete, decode_json, load_schema, read_json


@dataclass(frozen=True)
class Release:
    """One release as read: manifest, every table's rows, the diff and the schema."""

    directory: Path
    manifest: dict[str, Any]
    tables: dict[str, list[Row]]
    diff: dict[str, Any] | None
    schema: Schema
    large: dict[str, LargeTable] = field(default_factory=dict)
    """The tables read through their Parquet file, not held (`large_tables.py`)."""
    digests: dict[str, str] = field(default_factory=dict)
    """The SHA-256 of each table's JSON file as read, by table (what `tables` holds)."""

    @property
    def id(self) -> str:
        """The release id."""
        return str(self.manifest["release_id"])

    @property
    def present(self) -> set[str]:
        """The names of every table the release holds."""
        return set(self.tables) | set(self.large)

    def rows(self, table: str) -> list[Row]:
        """The table's rows (none when the release lacks it)."""
        return self.tables.get(table, [])


def safe_id(release_id: str) -> str:
    """A release id usable as a folder name, else ValueError."""
    if not release_id or Path(release_id).name != release_id or release_id in (".", ".."):
        raise ValueError(f"not a usable release id: {release_id!r}")
    return release_id


def load_release(directory: Path) -> Release:
    """The manifest, every table it lists (from its JSON file, hashed as it is read; a large
    one through its Parquet file, see `large_tables.py`), the diff and the schema."""
    manifest = read_json(directory / "manifest.json")
    safe_id(str(manifest["release_id"]))
    schema = load_schema(directory)
    large = {e["name"]: t for e in manifest.get("tables", [])
             if (t := open_large(directory, e, schema)) is not None}  # fmt: skip
    tables, digests = {}, {}
    for entry in manifest.get("tables", []):
        if entry.get("files", {}).get("json") and entry["name"] not in large:
            content = (directory / entry["files"]["json"]["path"]).read_bytes()
            digests[entry["name"]] = hashlib.sha256(content).hexdigest()
            tables[entry["name"]] = complete(schema.columns(entry["name"]), decode_json(content))
    diff_path = directory / "diff.json"
    diff = read_json(diff_path) if diff_path.is_file() else None
    return Release(directory, manifest, tables, diff, schema, large, digests)
