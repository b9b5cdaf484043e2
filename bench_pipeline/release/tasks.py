"""The published task list: every public case of the task bank with what it measures.

One row per public case (a private case is held out and never listed). `measures` is seed
000's mark, "Measures the model" or "Measures the system" (`Case.measured`), so every page
that shows a task, a board or a receipt can say which kind its score reflects.
"""

from __future__ import annotations

import duckdb
import polars as pl

from bench_pipeline.release.schema import Column, PublishedTable
from bench_pipeline.taskbank import load_bank

TASK_COLUMNS = (
    Column("suite", "string", "pm, navigator or usecase."),
    Column("case_id", "string", "The case."),
    Column("task", "string", "The task it belongs to."),
    Column("version", "string", "The case's current version (a content hash)."),
    Column("title", "string", "Its title."),
    Column("category", "string", "Its category."),
    Column("provenance", "string", "synthetic, anonymised or public."),
    Column("core", "boolean", "PM: a core task (a setup is ranked once it has done all)."),
    Column("prototype", "boolean", "PM: a prototype, checked in a browser."),
    Column("noisy", "boolean", "Run three times per setup."),
    Column("inputs", "integer", "Inputs (Navigator), else 1."),
    Column("measures", "string", "model (Measures the model) or system (Measures the system)."),
)


def tasks_frame(_conn: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The `tasks` table, from the task bank (`BENCH_TASKS`)."""
    rows = [
        [case.suite, case.id, case.task, case.version, case.title, case.category,
         case.provenance, case.core, case.prototype, case.noisy, max(len(case.inputs), 1),
         case.measured]
        for case in sorted(load_bank(), key=lambda c: (c.suite, c.task, c.id))
        if not case.private
    ]  # fmt: skip
    types = {"string": pl.String, "boolean": pl.Boolean, "integer": pl.Int64}
    schema = {c.name: types[c.type] for c in TASK_COLUMNS}
    return pl.DataFrame(rows, schema=schema, orient="row")


TASKS_TABLE = PublishedTable(
    "tasks", "Task list: every public case and what it measures", None, ("suite", "case_id"),
    "receipts", TASK_COLUMNS, build=tasks_frame,
)  # fmt: skip
