"""Materialisation metadata every asset reports: its row counts (and a preview of each table
it writes) and, through `timed`, how long it took."""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from typing import Any

import dagster as dg
import duckdb
import polars as pl

from bench_pipeline.core.warehouse import fetch_frame

MARKUP = "\\`*_[]<>&|!#~"
"""The characters that start Markdown or HTML: links and images (`[`, `!`), raw HTML and
autolinks (`<`), entities (`&`), emphasis, code, table cells, headings, strike-through and the
backslash itself. Each is escaped with a backslash, which CommonMark reads as that character;
the rest (digits, `.`, `-`, `:`) stays as it is, so numbers, dates and ids read plainly."""
_ESCAPED = str.maketrans({c: "\\" + c for c in MARKUP} | {c: " " for c in "\r\n\t\v\f"})


def escape_markup(value: object) -> str:
    """Text from outside data (a model name, a source's reason, a payload's first bytes) as
    Dagster metadata may carry it: no Markdown or HTML of its own, on one line. The Dagster
    UI renders Markdown values (table previews) as Markdown, which fetched the image of a
    model named `![x](http://…)`; every metadata value built from outside data goes through
    here (`outside_text`, `markdown_table`)."""
    return str(value).translate(_ESCAPED)


def outside_text(value: object) -> dg.TextMetadataValue:
    """A text metadata value holding outside data (see `escape_markup`)."""
    return dg.MetadataValue.text(escape_markup(value))


def markdown_table(frame: pl.DataFrame, max_width: int = 40) -> str:
    """A small frame as a Markdown table for the Dagster UI (cells cut to `max_width`, then
    escaped: their values come from outside)."""

    def cell(value: object) -> str:
        shown = "—" if value is None else str(value)
        shown = shown if len(shown) <= max_width else shown[: max_width - 1] + "…"
        return escape_markup(shown)

    header = "| " + " | ".join(escape_markup(name) for name in frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *body])


def table_metadata(conn: duckdb.DuckDBPyConnection, table: str, preview_rows: int = 10) -> dict:
    count = conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    preview = fetch_frame(conn, f"SELECT * FROM {table} LIMIT {preview_rows}")
    return {
        f"{table} rows": dg.MetadataValue.int(int(count)),
        f"{table} preview": dg.MetadataValue.md(markdown_table(preview))
        if preview.height
        else dg.MetadataValue.text("(empty)"),
    }


def where_to_fix(error: BaseException) -> dict[str, str] | None:
    """`file`, `record` and `field` of an error that names where its input is wrong (the task
    bank's and the setups' errors carry the first problem's `path` and `field`), for the
    step failure's metadata: `bench run`'s summary leads with them. None for other errors."""
    path, field = getattr(error, "path", None), getattr(error, "field", None)
    if path is None or not isinstance(field, str):
        return None
    record = getattr(error, "record", "")
    located = {"file": str(path), "field": field or "(the whole file)"}
    return located | ({"record": record} if isinstance(record, str) and record else {})


def timed(compute: Callable[..., Any]) -> Callable[..., Any]:
    """`compute`, adding `seconds` (its wall time) to the metadata of the `MaterializeResult`
    or `Output` it returns; an error naming a file and field fails the step with them in its
    metadata (`where_to_fix`). Put it under `@dg.asset`: the wrapper keeps the signature Dagster
    reads resources and inputs from."""

    @functools.wraps(compute)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            result = compute(*args, **kwargs)
        except Exception as error:
            located = where_to_fix(error)
            if located is None:
                raise
            raise dg.Failure(description=str(error), metadata=located) from error
        seconds = {"seconds": dg.MetadataValue.float(round(time.perf_counter() - started, 3))}
        if isinstance(result, dg.MaterializeResult):
            return result._replace(metadata={**(result.metadata or {}), **seconds})
        if isinstance(result, dg.Output):
            with warnings.catch_warnings():  # data_version is a beta parameter
                warnings.simplefilter("ignore", dg.BetaWarning)
                return dg.Output(
                    result.value,
                    output_name=result.output_name,
                    metadata={**result.metadata, **seconds},
                    data_version=result.data_version,
                    tags=result.tags,
                )
        return result

    return wrapper


def column_schema(conn: duckdb.DuckDBPyConnection, table: str) -> dg.TableSchema:
    """The table's columns for Dagster's catalogue: the publication schema's names, types and
    descriptions (`release/published.py`) for a published table, else the warehouse's own
    column types, described by the live table's rules (`ingest/tables.py`) for a source's
    live table."""
    from bench_pipeline.ingest.tables import TABLES
    from bench_pipeline.release.published import PUBLISHED_BY_NAME

    published = PUBLISHED_BY_NAME.get(table)
    if published is not None:
        return dg.TableSchema(
            columns=[
                dg.TableColumn(name=c.name, type=c.type, description=c.description)
                for c in published.columns
            ]
        )
    rows = conn.execute(
        "SELECT column_name, data_type, comment FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ? "
        "ORDER BY column_index",
        [table],
    ).fetchall()
    spec = TABLES.get(table)
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=n,
                type=t,
                description=c or (spec.describe(n) if spec and n in spec.columns else None),
            )
            for n, t, c in rows
        ]
    )


def table_asset_metadata(
    conn: duckdb.DuckDBPyConnection, table: str, rows: int | None = None
) -> dict[str, Any]:
    """Dagster's standard table metadata for the asset's main table (`dagster/row_count`,
    `dagster/column_schema`, `dagster/table_name`), so the catalogue shows them. `rows`
    overrides the count for a table published from a query rather than stored."""
    if rows is None:
        rows = conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    return {
        "dagster/row_count": dg.MetadataValue.int(int(rows)),
        "dagster/column_schema": dg.MetadataValue.table_schema(column_schema(conn, table)),
        "dagster/table_name": f"warehouse.main.{table}",
    }
