"""Materialisation metadata every table-writing asset reports: row count and a preview."""

from __future__ import annotations

import dagster as dg
import duckdb
import polars as pl

from bench_pipeline.warehouse import fetch_frame


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
    count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    preview = fetch_frame(conn, f"SELECT * FROM {table} LIMIT {preview_rows}")
    return {
        f"{table} rows": dg.MetadataValue.int(int(count)),
        f"{table} preview": dg.MetadataValue.md(markdown_table(preview))
        if preview.height
        else dg.MetadataValue.text("(empty)"),
    }
