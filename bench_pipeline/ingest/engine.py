"""The transactional ingestion path, stage by stage, as plain functions over the warehouse.

fetch+store raw → stage (parse into `staging.*`) → validate (typed rows into `validated.*`,
failures into a pending quarantine) → publish (sanity check against the last accepted run,
then one transaction that swaps every live table of the source, or a rejection that leaves
them untouched). Every run, accepted or rejected, ends as one row of `source_runs`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

import duckdb
import polars as pl

from bench_pipeline.core.clock import now_utc
from bench_pipeline.core.files import write_bytes
from bench_pipeline.core.http import FetchError
from bench_pipeline.core.warehouse import fetch_frame, transaction
from bench_pipeline.core.writer import insert_rows, write_frame
from bench_pipeline.ingest.catalog import SourceDefinition
from bench_pipeline.ingest.payload import PayloadError, RawFile, content_sha256
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.ingest.validation import (
    QUARANTINE_SCHEMA,
    SchemaDriftError,
    count_records,
    validate_records,
)

Parser = Callable[[Sequence[RawFile]], dict[str, pl.DataFrame]]
Status = Literal["pending", "accepted", "rejected"]


@dataclass(frozen=True)
class SourceRun:
    """A source run as it moves through the stages; small enough to pass between assets."""

    source: str
    run_id: str
    mode: str
    started_at: datetime
    status: Status = "pending"
    reason: str | None = None
    content_sha256: str | None = None
    rows_staged: dict[str, int] = field(default_factory=dict)
    rows_valid: dict[str, int] = field(default_factory=dict)
    rows_quarantined: int = 0
    previous_rows: int | None = None

    def rejected(self, reason: str) -> SourceRun:
        return replace(self, status="rejected", reason=reason)


def staging_table(source: str, table: str) -> str:
    return f"staging.{source}__{table}"


def validated_table(source: str, table: str) -> str:
    return f"validated.{source}__{table}"


def pending_quarantine(source: str) -> str:
    return f"validated.{source}__quarantine"


def _ensure_work_schemas(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute("CREATE SCHEMA IF NOT EXISTS staging")
    conn.execute("CREATE SCHEMA IF NOT EXISTS validated")


def fetch_and_store(
    conn: duckdb.DuckDBPyConnection,
    definition: SourceDefinition,
    fetch: Callable[[], list[RawFile]],
    raw_root: Path,
    mode: str,
) -> SourceRun:
    """Fetch the payload and keep every file by content hash; a failed fetch is a rejected run."""
    started = now_utc()
    try:
        files = fetch()
    except FetchError as error:
        return _new_run(conn, definition.name, None, mode, started).rejected(
            f"fetch failed: {error}"
        )
    if not files:
        run = _new_run(conn, definition.name, None, mode, started)
        return run.rejected("the source returned no files")
    digest = content_sha256(files)
    run = _new_run(conn, definition.name, digest, mode, started)
    run_id = run.run_id
    rows = []
    for raw in files:
        stored = raw_root / definition.name / raw.sha256[:2] / raw.sha256
        if not stored.exists():
            write_bytes(stored, raw.content)
        rows.append((run_id, definition.name, raw.name, raw.sha256, len(raw.content), str(stored)))
    insert_rows(conn, "raw_files", None, rows)
    return run


def _new_run(
    conn: duckdb.DuckDBPyConnection, source: str, digest: str | None, mode: str, started: datetime
) -> SourceRun:
    """A run id named after the payload's content: `<source>-<sha256[:12]>-<n>`, n counting
    earlier runs of the same content. The same inputs give the same ids on any machine, so
    the published tables that cite them are reproducible byte for byte."""
    prefix = f"{source}-{digest[:12] if digest else 'nopayload'}-"
    earlier = conn.execute(
        "SELECT count(DISTINCT run_id) FROM (SELECT run_id FROM raw_files UNION ALL "
        "SELECT run_id FROM source_runs) WHERE starts_with(run_id, ?)",
        [prefix],
    ).fetchall()[0][0]
    return SourceRun(
        source=source,
        run_id=f"{prefix}{earlier + 1}",
        mode=mode,
        started_at=started,
        content_sha256=digest,
    )


def load_raw_files(conn: duckdb.DuckDBPyConnection, run_id: str) -> list[RawFile]:
    rows = conn.execute(
        "SELECT file_name, stored_path FROM raw_files WHERE run_id = ? ORDER BY file_name", [run_id]
    ).fetchall()
    return [RawFile(name=name, content=Path(path).read_bytes()) for name, path in rows]


def stage(
    conn: duckdb.DuckDBPyConnection, run: SourceRun, definition: SourceDefinition, parse: Parser
) -> SourceRun:
    """Parse the stored payload into one staging table per live table."""
    if run.status == "rejected":
        return run
    try:
        frames = parse(load_raw_files(conn, run.run_id))
    except PayloadError as error:
        return run.rejected(f"unreadable payload: {error}")
    unexpected = set(frames) - set(definition.tables)
    if unexpected:
        raise ValueError(f"{definition.name}: parser produced undeclared tables {unexpected}")
    _ensure_work_schemas(conn)
    for table, frame in frames.items():
        write_frame(conn, staging_table(run.source, table), frame, mode="create")
    return replace(run, rows_staged={table: frame.height for table, frame in frames.items()})


def validate(
    conn: duckdb.DuckDBPyConnection, run: SourceRun, definition: SourceDefinition
) -> SourceRun:
    """Validate staged records; keep typed valid rows and a pending quarantine for publish."""
    if run.status == "rejected":
        return run
    valid_counts: dict[str, int] = {}
    quarantined = []
    for table in definition.tables:
        staged = fetch_frame(conn, f"SELECT * FROM {staging_table(run.source, table)}")
        try:
            result = validate_records(TABLES[table], staged)
        except SchemaDriftError as error:
            return run.rejected(f"schema drift: {error}")
        write_frame(conn, validated_table(run.source, table), result.valid, mode="create")
        valid_counts[table] = result.valid.height
        quarantined.append(result.quarantined)
    pending = pl.concat(quarantined) if quarantined else pl.DataFrame(schema=QUARANTINE_SCHEMA)
    write_frame(conn, pending_quarantine(run.source), pending, mode="create")
    return replace(run, rows_valid=valid_counts, rows_quarantined=count_records(pending))


def last_accepted(
    conn: duckdb.DuckDBPyConnection, source: str
) -> tuple[int, dict[str, int]] | None:
    """Total and per-table valid rows of the source's last accepted run."""
    row = conn.execute(
        "SELECT run_id, rows_valid FROM source_runs WHERE source = ? AND status = 'accepted' "
        "ORDER BY finished_at DESC, run_id DESC LIMIT 1",
        [source],
    ).fetchone()
    if row is None:
        return None
    tables = conn.execute(
        "SELECT table_name, rows_valid FROM source_run_tables WHERE run_id = ?", [row[0]]
    ).fetchall()
    return int(row[1]), dict(tables)


def sanity_check(
    run: SourceRun, previous: tuple[int, dict[str, int]] | None, min_row_ratio: float
) -> str | None:
    """Why this run must not replace the live tables, or None when it may."""
    total = sum(run.rows_valid.values())
    if total == 0:
        return "no valid rows"
    if previous is None:
        return None
    for table, rows in run.rows_valid.items():
        before = previous[1].get(table, 0)
        if before and rows < min_row_ratio * before:
            return (
                f"{table}: {rows} valid rows, fewer than {min_row_ratio:g} × the "
                f"{before} of the last accepted run"
            )
    return None


def publish(
    conn: duckdb.DuckDBPyConnection,
    run: SourceRun,
    definition: SourceDefinition,
    on_stage: Callable[[str], None] | None = None,
) -> SourceRun:
    """Swap the validated rows into the live tables in one transaction, or record a rejection.

    `on_stage` is told "swapping" inside the open transaction and "committed" after it, so a
    caller can report progress (tests use it to kill the process mid-swap).
    """
    previous = last_accepted(conn, run.source)
    if run.status != "rejected":
        problem = sanity_check(run, previous, definition.min_row_ratio)
        run = run.rejected(problem) if problem else replace(run, status="accepted")
    run = replace(run, previous_rows=previous[0] if previous else None)
    with transaction(conn):
        if run.status == "accepted":
            if on_stage:
                on_stage("swapping")
            for table in definition.tables:
                conn.execute(f"DELETE FROM main.{table}")
                conn.execute(
                    f"INSERT INTO main.{table} BY NAME "
                    f"SELECT *, ? AS source_run_id FROM {validated_table(run.source, table)}",
                    [run.run_id],
                )
            insert_rows(
                conn,
                "source_run_tables",
                None,
                [(run.run_id, table, rows) for table, rows in run.rows_valid.items()],
            )
        _record_quarantine(conn, run)
        _record_run(conn, run)
    if on_stage:
        on_stage("committed")
    return run


def _record_quarantine(conn: duckdb.DuckDBPyConnection, run: SourceRun) -> None:
    if not run.rows_valid:  # rejected before validation: nothing was checked record by record
        return
    conn.execute(
        f"INSERT INTO quarantine SELECT ?, ?, table_name, file_name, record_number, record_key, "
        f"field, reason, record, now()::TIMESTAMP FROM {pending_quarantine(run.source)}",
        [run.run_id, run.source],
    )


def _record_run(conn: duckdb.DuckDBPyConnection, run: SourceRun) -> None:
    conn.execute(
        "INSERT INTO source_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run.source,
            run.run_id,
            run.mode,
            run.started_at,
            now_utc(),
            run.status,
            sum(run.rows_valid.values()),
            run.rows_quarantined,
            run.previous_rows,
            run.reason,
            run.content_sha256,
        ],
    )


def describe(run: SourceRun) -> str:
    """One line for logs and the CLI summary."""
    detail = json.dumps(run.rows_valid, sort_keys=True)
    if run.status == "accepted":
        return f"{run.source}: accepted {detail}, {run.rows_quarantined} quarantined"
    return f"{run.source}: {run.status} ({run.reason})"
