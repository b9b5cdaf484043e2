"""Materialisation metadata every asset reports: its row counts (and a preview of each table
it writes) and, through `timed`, how long it took."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import dagster as dg
import duckdb
import polars as pl

from bench_pipeline.core.warehouse import fetch_frame


def markdown_table(frame: pl.DataFrame, max_width: int = 40) -> str:
    """A small frame as a Markdown table for the Dagster UI (cells cut to `max_width`)."""

    def cell(value: object) -> str:
        shown = "—" if value is None else str(value).replace("|", "\\|").replace("\n", " ")
        return shown if len(shown) <= max_width else shown[: max_width - 1] + "…"

    header = "| " + " | ".join(frame.columns) + " |"
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


def timed(compute: Callable[..., Any]) -> Callable[..., Any]:
    """`compute`, adding `seconds` (its wall time) to the metadata of the `MaterializeResult`
    or `Output` it returns. Put it under `@dg.asset`: the wrapper keeps the signature Dagster
    reads resources and inputs from."""

    @functools.wraps(compute)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = compute(*args, **kwargs)
        seconds = {"seconds": dg.MetadataValue.float(round(time.perf_counter() - started, 3))}
        if isinstance(result, dg.MaterializeResult):
            return result._replace(metadata={**(result.metadata or {}), **seconds})
        if isinstance(result, dg.Output):
            return dg.Output(
                result.value,
                output_name=result.output_name,
                metadata={**result.metadata, **seconds},
                data_version=result.data_version,
                tags=result.tags,
            )
        return result

    return wrapper
