"""The PM suite's checks from the warehouse: contamination per setup, admission per task.

Read from what the PM board stored (`pm_runs`, `pm_tasks`) and from `task_cases`, which
says which case is private (its text never leaves the task bank files, and neither its id
nor its score leaves here: the tables hold counts, gaps and p-values only).
"""

from __future__ import annotations

import duckdb
import polars as pl

from bench_pipeline.scores.admission import TaskScore, admission_frame, admission_rows
from bench_pipeline.scores.contamination import (
    CaseScore,
    contamination_frame,
    contamination_rows,
)

PM_CHECK_TABLES = ("pm_contamination", "pm_task_admission")


def _simulated(frame: pl.DataFrame, key: str, flags: dict[str, bool]) -> pl.DataFrame:
    return frame.with_columns(
        pl.col(key).replace_strict(flags, default=False, return_dtype=pl.Boolean).alias("simulated")
    )


def pm_check_frames(conn: duckdb.DuckDBPyConnection) -> dict[str, pl.DataFrame]:
    """`pm_contamination` and `pm_task_admission` from the stored PM board.

    Only published runs count (complete and not held back for a drop), and only the current
    version of each case (the board's `pm_runs` already holds no other).
    """
    runs = conn.execute(
        """
        SELECT r.setup_id, r.case_id, r.task, r.category, c.private, r.pm_score, r.simulated
        FROM pm_runs r
        JOIN task_cases c ON c.suite = 'pm' AND c.case_id = r.case_id AND c.current
        WHERE r.published AND r.pm_score IS NOT NULL
        ORDER BY r.setup_id, r.case_id, r.run_id
        """
    ).fetchall()
    scores = [CaseScore(*row[:6]) for row in runs]
    by_setup: dict[str, bool] = {}
    for row in runs:
        by_setup[row[0]] = by_setup.get(row[0], False) or bool(row[6])
    tasks = conn.execute(
        "SELECT setup_id, task, score, simulated FROM pm_tasks ORDER BY setup_id, task"
    ).fetchall()
    by_task: dict[str, bool] = {}
    for _setup, task, _score, simulated in tasks:
        by_task[task] = by_task.get(task, False) or bool(simulated)
    admission = admission_rows(TaskScore(s, t, v) for s, t, v, _ in tasks)
    return {
        "pm_contamination": _simulated(
            contamination_frame(contamination_rows(scores)), "setup_id", by_setup
        ),
        "pm_task_admission": _simulated(admission_frame(admission), "task", by_task),
    }


__all__ = ["PM_CHECK_TABLES", "pm_check_frames"]
