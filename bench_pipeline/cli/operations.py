"""Operator actions and reports that are not assets: clearing a flagged run, a board as of a
past date. Plain functions over a warehouse connection (`bench status` is `cli.status`)."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.scores.load import navigator_frames, pm_frames, usecase_frames
from bench_pipeline.scores.usecase import HARD_FLAGS
from bench_pipeline.taskbank import TaskBank

BOARDS = ("pm", "usecase", "navigator")


def clear_flag(
    conn: duckdb.DuckDBPyConnection,
    run_id: str,
    flag: str,
    cleared_by: str,
    reason: str,
    now: datetime | None = None,
) -> None:
    """Record that a person cleared one hard flag of a submitted run (the run is not edited;
    the next scoring counts it again once no uncleared flag is left).

    Raises:
        ValueError: Unknown flag, unknown run, empty name or reason, or already cleared.
    """
    if flag not in HARD_FLAGS:
        raise ValueError(f"flag: not a hard flag: {flag!r} (one of {', '.join(HARD_FLAGS)})")
    if not cleared_by.strip() or not reason.strip():
        raise ValueError("cleared_by and reason: a name and a reason are both required")
    if not conn.execute("SELECT 1 FROM submitted_runs WHERE run_id = ?", [run_id]).fetchall():
        raise ValueError(f"run_id: no submitted run {run_id}")
    if conn.execute(
        "SELECT 1 FROM clearances WHERE run_id = ? AND flag = ?", [run_id, flag]
    ).fetchall():
        raise ValueError(f"{run_id}: {flag} is already cleared")
    stamp = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    with transaction(conn):
        insert_rows(
            conn, "clearances", ("run_id", "flag", "cleared_by", "reason", "cleared_at"),
            [[run_id, flag, cleared_by.strip(), reason.strip(), stamp]],
        )  # fmt: skip


def board_as_of(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, board: str, as_of: datetime
) -> dict[str, pl.DataFrame]:
    """One board's tables rebuilt from what existed at `as_of`."""
    if board == "pm":
        return pm_frames(conn, bank, as_of)
    if board == "navigator":
        return navigator_frames(conn, bank, as_of)
    if board == "usecase":
        return usecase_frames(conn, as_of)
    raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {board!r}")
