"""A release as the site reads it: its manifest, its tables and its `schema.json`.

The columns, titles, rank columns and methodology figures the pages show all come from the
release's `schema.json` (written from `release/published.py`); nothing is declared again
here. A release written before `schema.json` existed is read with today's declaration.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from bench_pipeline.release.published import schema_document
from bench_pipeline.release.schema import SCHEMA, RankRule, rules_from_document

Row = dict[str, Any]


def read_json(path: Path) -> Any:
    """A JSON file's content."""
    return decode_json(path.read_bytes())


def decode_json(content: bytes) -> Any:
    """`json.loads(content)`, read by msgspec when it can (about twice as fast on a release's
    tables, and the same objects: see `ingest/payload.py:_parse_json`); whatever msgspec
    refuses (a NaN literal, a byte order mark, malformed text) gets Python's own reading,
    or its own error."""
    try:
        return msgspec.json.decode(content)
    except msgspec.DecodeError:
        return json.loads(content.decode("utf-8"))


@dataclass(frozen=True)
class Schema:
    """The release's `schema.json`: every table's declaration and the evaluations."""

    document: Mapping[str, Any]

    @property
    def tables(self) -> dict[str, Mapping[str, Any]]:
        """Each table's entry, by name."""
        return {t["name"]: t for t in self.document.get("tables", [])}

    @property
    def evaluations(self) -> dict[str, str]:
        """Each evaluation's title, by id."""
        return {e["id"]: e["title"] for e in self.document.get("evaluations", [])}

    def columns(self, table: str) -> list[Mapping[str, Any]]:
        """The table's declared columns, in file order (none for an unknown table)."""
        return list(self.tables.get(table, {}).get("columns", []))

    def title(self, table: str, column: str) -> str:
        """A column's display title (else its name)."""
        for entry in self.columns(table):
            if entry["name"] == column:
                return str(entry.get("title") or column)
        return column

    def parameters(self, table: str) -> Mapping[str, Any]:
        """The methodology figures published with the table."""
        return self.tables.get(table, {}).get("parameters", {})

    def rank_rules(self, table: str) -> tuple[RankRule, ...]:
        """The table's rank rules as the release states them (what is ranked, within
        which columns, which rows take part)."""
        return rules_from_document(self.tables.get(table, {}))

    def rank_column(self, table: str, by: str) -> str | None:
        """The rank column of the board ranked by `by`, if the table has one."""
        for rule in self.tables.get(table, {}).get("ranks", []):
            if rule["by"] == by:
                return str(rule["column"])
        return None


def load_schema(directory: Path) -> Schema:
    """`schema.json` of the release in `directory`, or today's declaration without one.

    Raises:
        ValueError: When the file is there but is not a JSON object of tables.
    """
    path = directory / SCHEMA
    if not path.is_file():
        return Schema(schema_document())
    try:
        document = read_json(path)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(document, dict) or not isinstance(document.get("tables"), list):
        raise ValueError(f"{path}: field 'tables' is missing or not a list")
    return Schema(document)


def complete(columns: list[Mapping[str, Any]], rows: list[Row]) -> list[Row]:
    """Rows with every declared column present (an absent one is null), declared ones
    first. A row that has exactly the declared columns in order (every row a release
    writes) is kept as it is: building it again cost a second a site at 50x the data."""
    names = [c["name"] for c in columns]
    if not names:
        return rows
    declared = tuple(names)
    return [row if tuple(row) == declared else dict.fromkeys(names) | row for row in rows]
