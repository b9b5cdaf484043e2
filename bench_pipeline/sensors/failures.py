"""A run-failure sensor: every failed Dagster run is recorded in the warehouse table
`run_failure_log`, which the release publishes and the site's about page shows."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import duckdb

from bench_pipeline.core.writer import insert_rows
from bench_pipeline.resources.warehouse import WarehouseResource

MESSAGE_CHARS = 500


def record_failure(
    conn: duckdb.DuckDBPyConnection, run_id: str, job: str, message: str, when: datetime
) -> bool:
    """Record one failed run once (a sensor restarted mid-tick may report it again);
    returns whether it was new."""
    if conn.execute("SELECT 1 FROM run_failure_log WHERE dagster_run_id = ?", [run_id]).fetchall():
        return False
    stamp = when.astimezone(UTC).replace(tzinfo=None)
    insert_rows(
        conn, "run_failure_log", ("dagster_run_id", "job_name", "failed_at", "message"),
        [[run_id, job, stamp, " ".join(message.split())[:MESSAGE_CHARS]]],
    )  # fmt: skip
    return True


@dg.run_failure_sensor(
    name="record_run_failures",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Records every failed run in `run_failure_log` (shown on the about page).",
)
def record_run_failures(context: dg.RunFailureSensorContext, warehouse: WarehouseResource) -> None:
    message = context.failure_event.message or "failed"
    with warehouse.connection() as conn:
        record_failure(
            conn, context.dagster_run.run_id, context.dagster_run.job_name, message,
            datetime.now(UTC),
        )  # fmt: skip
