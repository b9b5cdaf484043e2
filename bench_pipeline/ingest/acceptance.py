"""An operator's acceptance of a source run the sanity check rejected (`bench accept`).

A genuine shrink (a provider delisting many models) would otherwise leave a source rejected
for ever, since every later run is compared with the larger run before it. Accepting records
who and why, never edits the run: the rejected run's counts become the baseline the next
sanity check of that source compares with (its rows are not published; the next run's are).
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from bench_pipeline.core.warehouse import transaction


def accept_run(
    conn: duckdb.DuckDBPyConnection,
    run_id: str,
    accepted_by: str,
    reason: str,
    now: datetime | None = None,
) -> str:
    """Record the acceptance; returns the run's source.

    Raises:
        ValueError: An empty name or reason, an unknown run, a run that was not rejected, one
            rejected before it was validated (nothing to compare with), or one already accepted.
    """
    if not accepted_by.strip() or not reason.strip():
        raise ValueError("--by and --reason: a name and a reason are both required")
    row = conn.execute(
        "SELECT source, status, reason FROM source_runs WHERE run_id = ?", [run_id]
    ).fetchone()
    if row is None:
        raise ValueError(f"{run_id}: no such source run")
    source, status, why = row
    if status != "rejected":
        raise ValueError(f"{run_id}: only a rejected run can be accepted; it was {status}")
    measured = conn.execute(
        "SELECT count(*) FROM source_run_groups WHERE run_id = ?", [run_id]
    ).fetchall()[0][0]
    if not measured:
        raise ValueError(
            f"{run_id}: rejected before its records were checked ({why}); there is nothing "
            "to compare the next run with"
        )
    if conn.execute("SELECT 1 FROM source_run_acceptances WHERE run_id = ?", [run_id]).fetchall():
        raise ValueError(f"{run_id}: already accepted")
    stamp = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    with transaction(conn):
        conn.execute(
            "INSERT INTO source_run_acceptances VALUES (?, ?, ?, ?, ?)",
            [run_id, source, accepted_by.strip(), reason.strip(), stamp],
        )
    return source
