"""`datapackage.json`: a release described as a Frictionless Data Package.

Every file of the release is a resource: each table's CSV, JSON and Parquet renderings with
the table's columns, their Table Schema types and descriptions from the publication schema
(`published.py`), and the key; `bench.duckdb`, `schema.json` and `diff.json` as plain files.
The explicit types are what a reader should use: a tool that guesses a column's type from its
first rows guesses wrong where those rows are empty (`read_csv(..., columns=…)` in DuckDB,
`schema_overrides` in polars). `manifest.json` is listed without a digest (it is written
after this file and lists this file's).

`frictionless validate datapackage.json` checks the whole package: each CSV as a table
against its schema (types, key, missing values), and the JSON and Parquet renderings, the
DuckDB file and the JSON documents as files (`"type": "file"`: their size and SHA-256; the
JSON and Parquet renderings hold the CSV's columns, named by `schema_of`). Every resource
names its licence (`licenses`): those of the sources its rows come from (`TABLE_SOURCES`,
each source's `licence` in its definition), or `OWN_DATA_LICENCE` for the pipeline's own
measurements; the package lists every licence of its resources.

Each table resource, and the package, carries `data_as_of`: per source, the date of the data
this release holds (the newest date its accepted payload states, never the fetch time; null
where the payload states none), as in the `sources` table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.release.database import VIEWS
from bench_pipeline.release.ledger import Ledger
from bench_pipeline.release.schema import Column, PublishedTable

DATAPACKAGE = "datapackage.json"
# Table Schema's type for each published type (exact decimals are Table Schema numbers,
# which are decimal, not binary, in the standard).
FIELD_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "decimal": "number",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "datetime",
}
# DuckDB's type for each published type, for `read_csv(columns=…)`.
DUCKDB_TYPES = {
    "string": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "decimal": "DECIMAL(38, 12)",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMPTZ",
}
# The sources each published table's rows come from; a table not listed holds the pipeline's
# own measurements and bookkeeping (`OWN_DATA_LICENCE`). A test checks every name is a
# published table or a source.
REGISTRY_SOURCES = ("arena", "epoch", "models_dev", "openrouter_models")
TABLE_SOURCES: dict[str, tuple[str, ...]] = {
    "known_good_index": ("epoch",),
    "capability_indices": ("epoch",),
    "index_lineage": ("epoch",),
    "epoch_scores": ("epoch",),
    "market": ("openrouter_models", "openrouter_endpoints", "models_dev", "epoch", "arena"),
    "provider_prices": ("openrouter_endpoints",),
    "openness_evidence": ("arena", "epoch", "models_dev", "openrouter_models"),
    "arena_elo": ("arena",),
    "models": REGISTRY_SOURCES,
    "model_aliases": REGISTRY_SOURCES,
    "price_history": ("openrouter_models",),
    "item_boards": ("swebench", "inspect_popularity"),
    "item_board_pairs": ("swebench", "inspect_popularity"),
    "item_board_cards": ("swebench", "inspect_popularity"),
    "item_board_rank_sets": ("swebench", "inspect_popularity"),
}
# Open Definition / SPDX identifiers of the licences the source definitions name; any other
# licence text is a closed licence, named by its own words.
LICENCE_IDS = {
    "CC BY 4.0": ("CC-BY-4.0", "https://creativecommons.org/licenses/by/4.0/"),
    "CC BY-NC 4.0": ("CC-BY-NC-4.0", "https://creativecommons.org/licenses/by-nc/4.0/"),
    "MIT": ("MIT", "https://opensource.org/license/mit"),
}
OWN_DATA_LICENCE = {
    "name": "notspecified",
    "title": "bench-pipeline's own measurements; the project states no licence for them",
}
FORMATS = {
    "csv": "text/csv",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}


def field(column: Column) -> dict[str, Any]:
    """A column as a Table Schema field."""
    described = {"name": column.name, "type": FIELD_TYPES[column.type]}
    if column.title:
        described["title"] = column.title
    described["description"] = column.description
    if column.type == "timestamp":
        described["format"] = "any"  # ISO 8601 with its offset, e.g. 2026-08-14T09:30:00+00:00
    return described


def table_schema(table: PublishedTable) -> dict[str, Any]:
    """A published table's Table Schema: its fields, key and how a missing value looks."""
    return {
        "fields": [field(column) for column in table.columns],
        "primaryKey": list(table.key),
        "missingValues": [""],
    }


def duckdb_columns(table: PublishedTable) -> dict[str, str]:
    """The `columns` argument of DuckDB's `read_csv` for a table's CSV."""
    return {column.name: DUCKDB_TYPES[column.type] for column in table.columns}


def licence(text: str) -> dict[str, str]:
    """A source definition's licence as a Data Package `licenses` entry."""
    known = LICENCE_IDS.get(text)
    if known:
        return {"name": known[0], "path": known[1], "title": text}
    return {"name": "other-closed", "title": text}


def table_licences(table: str) -> list[dict[str, str]]:
    """The licences of the rows of a published table: its sources', or the pipeline's own."""
    sources = TABLE_SOURCES.get(table)
    if not sources:
        return [dict(OWN_DATA_LICENCE)]
    definitions = source_definitions()
    texts = sorted({definitions[name].licence for name in sources})
    return [licence(text) for text in texts]


def _every_licence(resources: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Each distinct licence the resources name, in the order first named."""
    every: list[dict[str, str]] = []
    for resource in resources:
        every += [entry for entry in resource.get("licenses", ()) if entry not in every]
    return every


def _file(ledger: Ledger, path: str) -> dict[str, Any]:
    written = ledger.file(path)
    return {"bytes": written.size, "hash": f"sha256:{written.sha256}"}


def datapackage(
    folder: Path,
    release_id: str,
    created_at: str,
    tables: Sequence[PublishedTable],
    ledger: Ledger | None = None,
    data_as_of: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The descriptor of the release being written in `folder`.

    Args:
        folder: The release folder, its data files, `bench.duckdb`, `schema.json` and
            `diff.json` written.
        release_id: The release's id.
        created_at: When it was made (ISO 8601 with its offset).
        tables: The published tables, in release order.
        ledger: The digests of the files written so far (default: each file is read).
        data_as_of: Per source, the date of its data in this release (ISO 8601) or None.
    """
    dated = dict(sorted((data_as_of or {}).items()))
    ledger = ledger or Ledger(folder)
    resources: list[dict[str, Any]] = []
    for table in tables:
        licences = table_licences(table.name)
        for fmt, mediatype in FORMATS.items():
            path = f"data/{table.name}.{fmt}"
            tabular = fmt == "csv"
            resources.append(
                {
                    "name": f"{table.name}_{fmt}",
                    "path": path,
                    "profile": "tabular-data-resource" if tabular else "data-resource",
                    **({} if tabular else {"type": "file"}),
                    "title": table.title,
                    "format": fmt,
                    "mediatype": mediatype,
                    **({"encoding": "utf-8"} if fmt != "parquet" else {}),
                    **_file(ledger, path),
                    "licenses": licences,
                    "data_as_of": dated,
                    **(
                        {"schema": table_schema(table)}
                        if tabular
                        else {"schema_of": f"{table.name}_csv"}
                    ),
                }
            )
    every = _every_licence(resources)
    views = "; ".join(f"{view.name}: {view.description}" for view in VIEWS)
    resources += [
        {
            "name": "bench_duckdb",
            "path": "bench.duckdb",
            "profile": "data-resource",
            "type": "file",
            "licenses": every,
            "title": "Every table in one DuckDB file (DuckDB 1.2 or later), with views",
            "description": "One table per table above, every table and column commented "
            f"(duckdb_tables(), duckdb_columns()). Views: {views}",
            "format": "duckdb",
            "mediatype": "application/vnd.duckdb",
            **_file(ledger, "bench.duckdb"),
        },
        {
            "name": "schema",
            "path": "schema.json",
            "profile": "data-resource",
            "type": "file",
            "licenses": [dict(OWN_DATA_LICENCE)],
            "title": "Every table's columns, key, lineage and rank rules",
            "format": "json",
            "mediatype": "application/json",
            **_file(ledger, "schema.json"),
        },
        {
            "name": "diff",
            "path": "diff.json",
            "profile": "data-resource",
            "type": "file",
            "licenses": [dict(OWN_DATA_LICENCE)],
            "title": "What changed since the previous release",
            "format": "json",
            "mediatype": "application/json",
            **_file(ledger, "diff.json"),
        },
        {
            "name": "manifest",
            "path": "manifest.json",
            "profile": "data-resource",
            "type": "file",
            "licenses": [dict(OWN_DATA_LICENCE)],
            "title": "What the release holds, with the SHA-256 of every other file",
            "format": "json",
            "mediatype": "application/json",
        },
    ]
    return {
        "profile": "data-package",
        "name": f"bench-pipeline-{release_id}",
        "id": release_id,
        "title": f"bench-pipeline release {release_id}",
        "description": "LLM benchmark data: indices, market data, Arena ratings and the "
        "pipeline's own boards. Each source's publisher, licence and attribution are in the "
        "`sources` table, with the date of each source's data (`data_as_of`: the newest date "
        "its payload states, not when it was fetched).",
        "created": created_at,
        "licenses": _every_licence(resources),
        "data_as_of": dated,
        "resources": resources,
    }
