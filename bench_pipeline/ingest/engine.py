"""The transactional ingestion path, stage by stage, as plain functions over the warehouse.

fetch+store raw → stage (check the source's contract, parse into a staged frame) → validate
(typed rows into a validated frame, failures into a pending quarantine) → publish (sanity check
against the last accepted run, then one transaction that swaps every live table of the source,
or a rejection that leaves them untouched). Every run, accepted or rejected, ends as one row of
`source_runs`: no input makes a stage raise (an unexpected error rejects the run with its
reason), and a run whose process died is closed by the next run of its source.

The working frames a stage hands the next are files of their run (`ingest.work`), so two
runs of one source never read each other's rows; each run's id is claimed in
`source_run_claims` before it is used, so two runs of the same payload never share one.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

import duckdb
import polars as pl

from bench_pipeline.core.allocation import collector_paused
from bench_pipeline.core.clock import now_utc
from bench_pipeline.core.files import write_bytes
from bench_pipeline.core.http import FetchError
from bench_pipeline.core.processes import pid_alive
from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows, registered
from bench_pipeline.ingest import contract as contracts
from bench_pipeline.ingest import contract_screen
from bench_pipeline.ingest.catalog import SourceDefinition
from bench_pipeline.ingest.dating import accepted_date, stated_dates, stated_frame
from bench_pipeline.ingest.parsers.dates import DataDate
from bench_pipeline.ingest.payload import (
    PayloadError,
    RawFile,
    content_sha256,
    load_json,
    read_csv,
)
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.ingest.validation import (
    FILE_COLUMN,
    PROBLEM_COLUMN,
    PROBLEM_FIELD_COLUMN,
    QUARANTINE_SCHEMA,
    RECORD_COLUMN,
    SchemaDriftError,
    count_records,
    validate_records,
)
from bench_pipeline.ingest.work import (
    STATED_DATES,
    read_work,
    remove_run,
    run_folder,
    staged_file,
    work_file,
    write_work,
    write_work_freeing,
)

Parser = Callable[[Sequence[RawFile]], dict[str, pl.DataFrame]]
Status = Literal["pending", "accepted", "rejected", "unchanged"]
TABLE_GROUP = "table"
ABANDONED_AFTER = timedelta(hours=6)
RUN_FAULTS = (Exception, pl.exceptions.PanicException)
"""What a step catches to record its run as rejected: a polars panic is a BaseException, and
must not leave the run unrecorded any more than a Python bug may."""
"""A claimed run older than this without a `source_runs` row is dead even if its pid lives."""


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
    fields: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Contract field → (records, nulls), as measured in staging."""
    groups: dict[tuple[str, str], int] = field(default_factory=dict)
    """(group kind, group) → valid rows: per table, and per value of each `group_by` column."""
    scales: dict[str, tuple[float | None, int]] = field(default_factory=dict)
    """`table.column` → (median, values) over the valid rows, for each contract `scales`."""
    data_as_of: datetime | None = None
    """The newest date the payload states (`ingest.dating`), never the fetch time."""
    data_as_of_basis: str | None = None
    """How `data_as_of` was derived, or why there is none."""

    def rejected(self, reason: str) -> SourceRun:
        return replace(self, status="rejected", reason=reason)

    @property
    def unchanged(self) -> bool:
        """The payload is the one the live tables came from: nothing to stage or publish."""
        return self.status == "unchanged"


def fetch_and_store(
    conn: duckdb.DuckDBPyConnection,
    definition: SourceDefinition,
    fetch: Callable[[], list[RawFile]],
    raw_root: Path,
    mode: str,
) -> SourceRun:
    """Fetch the payload and keep every file by content hash; a failed fetch is a rejected run.

    First closes this source's runs whose process died before recording them."""
    close_abandoned(conn, definition.name)
    started = now_utc()
    try:
        files = fetch()
    except FetchError as error:
        return _new_run(conn, definition.name, None, mode, started).rejected(
            f"fetch failed: {error}"
        )
    except RUN_FAULTS as error:  # any failure must end as a recorded run
        return _new_run(conn, definition.name, None, mode, started).rejected(
            f"fetch failed: {type(error).__name__}: {error}"
        )
    if not files:
        run = _new_run(conn, definition.name, None, mode, started)
        return run.rejected("the source returned no files")
    digest = content_sha256(files)
    live_run = live_run_with_payload(conn, definition.name, digest)
    if live_run is not None:
        return record_unchanged(conn, definition.name, digest, live_run, mode, started)
    run = _new_run(conn, definition.name, digest, mode, started)
    run_id = run.run_id
    rows = []
    for raw in files:
        stored = raw_root / definition.name / raw.sha256[:2] / raw.sha256
        if not stored.exists():
            try:
                write_bytes(stored, raw.content)
            except OSError:  # a second writer of the same content took the partial name
                if not stored.exists():
                    raise
        rows.append((run_id, definition.name, raw.name, raw.sha256, len(raw.content), str(stored)))
    insert_rows(conn, "raw_files", None, rows)
    return run


def live_run_with_payload(conn: duckdb.DuckDBPyConnection, source: str, digest: str) -> str | None:
    """The source's last accepted run (the one its live tables hold) when its payload had this
    SHA-256, else None: staging the same bytes again could only give the same rows."""
    row = conn.execute(
        "SELECT run_id, content_sha256 FROM source_runs WHERE source = ? AND status = 'accepted' "
        "ORDER BY finished_at DESC, run_id DESC LIMIT 1",
        [source],
    ).fetchone()
    return row[0] if row is not None and row[1] == digest else None


def live_run_id(conn: duckdb.DuckDBPyConnection, source: str) -> str:
    """The accepted run the source's live tables hold (`none` before the first)."""
    row = conn.execute(
        "SELECT run_id FROM source_runs WHERE source = ? AND status = 'accepted' "
        "ORDER BY finished_at DESC, run_id DESC LIMIT 1",
        [source],
    ).fetchone()
    return row[0] if row else "none"


def record_unchanged(
    conn: duckdb.DuckDBPyConnection,
    source: str,
    digest: str,
    live_run: str,
    mode: str,
    started: datetime,
) -> SourceRun:
    """One `source_checks` row for a fetch of the live payload; no run id, raw file or
    `source_runs` row, so a rerun that changes nothing leaves the warehouse as it was."""
    conn.execute(
        "INSERT INTO source_checks VALUES (?, ?, ?, ?, ?)",
        [source, now_utc(), mode, digest, live_run],
    )
    return SourceRun(
        source=source,
        run_id=live_run,
        mode=mode,
        started_at=started,
        status="unchanged",
        reason=f"payload unchanged since {live_run}",
        content_sha256=digest,
    )


def _new_run(
    conn: duckdb.DuckDBPyConnection, source: str, digest: str | None, mode: str, started: datetime
) -> SourceRun:
    """A run id named after the payload's content: `<source>-<sha256[:12]>-<n>`, n counting
    earlier runs of the same content. The same inputs give the same ids on any machine, so
    the published tables that cite them are reproducible byte for byte. The id is claimed
    (a primary key), so a second writer of the same payload at the same moment takes n + 1."""
    prefix = f"{source}-{digest[:12] if digest else 'nopayload'}-"
    earlier = conn.execute(
        "SELECT count(DISTINCT run_id) FROM (SELECT run_id FROM raw_files UNION ALL "
        "SELECT run_id FROM source_runs UNION ALL SELECT run_id FROM source_run_claims) "
        "WHERE starts_with(run_id, ?)",
        [prefix],
    ).fetchall()[0][0]
    number = earlier + 1
    while True:
        try:
            conn.execute(
                "INSERT INTO source_run_claims VALUES (?, ?, ?, ?, ?)",
                [f"{prefix}{number}", source, socket.gethostname(), os.getpid(), now_utc()],
            )
            break
        except duckdb.ConstraintException:
            number += 1
    return SourceRun(
        source=source,
        run_id=f"{prefix}{number}",
        mode=mode,
        started_at=started,
        content_sha256=digest,
    )


def close_abandoned(conn: duckdb.DuckDBPyConnection, source: str) -> list[str]:
    """Record a rejected `source_runs` row for every claimed run of `source` whose process died
    (on this host) or that is older than `ABANDONED_AFTER`; returns their ids."""
    claims = conn.execute(
        "SELECT c.run_id, c.host, c.pid, c.claimed_at FROM source_run_claims c "
        "LEFT JOIN source_runs r USING (run_id) WHERE c.source = ? AND r.run_id IS NULL",
        [source],
    ).fetchall()
    host, now, closed = socket.gethostname(), now_utc(), []
    for run_id, claimed_on, pid, claimed_at in claims:
        dead = claimed_on == host and pid != os.getpid() and not pid_alive(pid)
        if not dead and now - claimed_at < ABANDONED_AFTER:
            continue
        digest = conn.execute(
            "SELECT any_value(sha256) FROM raw_files WHERE run_id = ?", [run_id]
        ).fetchall()[0][0]
        run = SourceRun(source, run_id, "unknown", claimed_at, content_sha256=digest).rejected(
            f"abandoned: the process that ran it (pid {pid} on {claimed_on}) stopped before "
            "the run finished"
        )
        _record_run(conn, run)
        remove_run(conn, source, run_id)
        closed.append(run_id)
    return closed


def raw_file_paths(conn: duckdb.DuckDBPyConnection, run_id: str) -> list[tuple[str, Path]]:
    """Each raw file of the run: its name in the payload and where it is stored."""
    rows = conn.execute(
        "SELECT file_name, stored_path FROM raw_files WHERE run_id = ? ORDER BY file_name", [run_id]
    ).fetchall()
    return [(name, Path(path)) for name, path in rows]


def read_raw_files(paths: Sequence[tuple[str, Path]]) -> list[RawFile]:
    return [RawFile(name=name, content=path.read_bytes()) for name, path in paths]


def load_raw_files(conn: duckdb.DuckDBPyConnection, run_id: str) -> list[RawFile]:
    return read_raw_files(raw_file_paths(conn, run_id))


@dataclass(frozen=True)
class Staged:
    """What staging a payload came to, without its run: a rejection's reason, or the rows
    staged per table and the contract's field counts (the frames are in the run's files)."""

    rejection: str | None = None
    rows_staged: dict[str, int] = field(default_factory=dict)
    fields: dict[str, tuple[int, int]] = field(default_factory=dict)
    data_date: DataDate | None = None

    def applied(self, run: SourceRun) -> SourceRun:
        """The run as this staging leaves it."""
        if self.rejection is not None:
            return run.rejected(self.rejection)
        dated = self.data_date
        return replace(
            run,
            rows_staged=dict(self.rows_staged),
            fields=dict(self.fields),
            data_as_of=dated.as_of if dated else None,
            data_as_of_basis=dated.basis if dated else None,
        )


def stage(
    conn: duckdb.DuckDBPyConnection,
    run: SourceRun,
    definition: SourceDefinition,
    parse: Parser,
    ahead: Staged | None = None,
) -> SourceRun:
    """Check the payload against the source's contract, then parse it into one staging table
    per live table; records the contract finds wrong carry their problem (see validation).

    `ahead` is this run staged already by `stage_payload` in another process (`ingest.prestage`),
    its frames in the run's files: it is taken as it is."""
    if run.status == "rejected" or run.unchanged:
        return run
    _touch_claim(conn, run)
    if ahead is not None:
        return ahead.applied(run)
    folder = run_folder(conn, run.source, run.run_id)
    files = load_raw_files(conn, run.run_id)
    return stage_payload(
        definition, parse, files, lambda table: staged_file(folder, table)
    ).applied(run)


def stage_payload(
    definition: SourceDefinition,
    parse: Parser,
    files: list[RawFile],
    target: Callable[[str], Path],
) -> Staged:
    """The contract check and the parse of a run's raw `files`, each staged frame stored in
    `target(table)`; touches no database, so another process can do it (`ingest.prestage`).
    `files` is emptied while the frames are stored.

    Every parsed document is freed by reference counting before the cycle collector is back
    on: alive, its first pass would walk every object of the documents (about a second on a
    150 MB payload)."""
    with collector_paused():
        try:
            return _staged(definition, parse, files, target)
        finally:
            files.clear()


def _staged(
    definition: SourceDefinition,
    parse: Parser,
    files: list[RawFile],
    target: Callable[[str], Path],
) -> Staged:
    """`stage_payload` with the collector paused."""
    try:
        report = check_contract(definition.contract, files)
        if report.missing:
            return Staged(f"contract: {'; '.join(report.missing)}")
        cap = definition.caps.max_records
        if report.records > cap:
            return Staged(
                f"the payload holds {report.records:,} records, past the cap of {cap:,} "
                f"(limits.max_records of sources/definitions/{definition.name}.toml)"
            )
        frames = parse(files)
    except PayloadError as error:
        return Staged(f"unreadable payload: {error}")
    except RUN_FAULTS as error:  # a parser bug must not leave the run unrecorded
        return Staged(f"staging failed: {type(error).__name__}: {error}")
    unexpected = set(frames) - set(definition.tables)
    if unexpected:
        return Staged(f"parser produced undeclared tables {sorted(unexpected)}")
    found = stated_dates(definition.name, files)
    problems = _problem_frame(report, definition)
    staged = {
        target(table): _with_problems(frame, problems.get(table)) for table, frame in frames.items()
    }
    if not isinstance(found, DataDate):  # dated by validation, from the records it accepts
        staged[target(STATED_DATES)] = stated_frame(found)
    write_work_freeing(staged, files)
    return Staged(
        rows_staged={table: frame.height for table, frame in frames.items()},
        fields=report.fields,
        data_date=found if isinstance(found, DataDate) else None,
    )


def check_contract(
    contract: contracts.Contract, files: Sequence[RawFile]
) -> contracts.ContractReport:
    """The payload against its contract (see `bench_pipeline.ingest.contract`)."""
    report = contracts.ContractReport()
    report.missing = contracts.missing_files(
        contract, [f.name for f in files], {f.name: len(f.content) for f in files}
    )
    if report.missing:
        return report
    for raw in files:
        spec = contract.spec_for(raw.name)
        if spec is None:
            continue
        csv = spec.records == "csv"
        document = read_csv(raw, ()) if csv else load_json(raw)
        finite = not csv and raw.numbers_finite
        repeats = not csv and raw.repeats_keys
        contract_screen.check_document(
            contract,
            raw.name,
            document,
            raw.content if csv else raw.readable,  # the bytes the document was read from
            report,
            finite=finite,
            repeats=repeats,
            nesting=None if csv else raw.nesting,
        )
    return report


def _problem_frame(
    report: contracts.ContractReport, definition: SourceDefinition
) -> dict[str, pl.DataFrame]:
    """Per table, the contract's record problems on that table's rows: a problem goes only to
    the tables the file's record spec names (the first spec matching the file, as the check
    reads it), since another table from the same file numbers its rows its own way."""
    first: dict[tuple[str, int], contracts.RecordProblem] = {}
    for problem in report.problems:  # one reason per record: the first found
        first.setdefault((problem.file_name, problem.record_number), problem)
    by_table: dict[str, list[contracts.RecordProblem]] = {}
    for problem in first.values():
        spec = definition.contract.spec_for(problem.file_name)
        for table in definition.record_tables(spec) if spec else ():
            by_table.setdefault(table, []).append(problem)
    return {
        table: pl.DataFrame(
            {
                FILE_COLUMN: [p.file_name for p in listed],
                RECORD_COLUMN: [p.record_number for p in listed],
                "_contract_field": [p.field for p in listed],
                "_contract_reason": [f"contract: {p.reason}" for p in listed],
            },
            schema={
                FILE_COLUMN: pl.Utf8,
                RECORD_COLUMN: pl.Int64,
                "_contract_field": pl.Utf8,
                "_contract_reason": pl.Utf8,
            },
        )
        for table, listed in by_table.items()
    }


def _with_problems(frame: pl.DataFrame, problems: pl.DataFrame | None) -> pl.DataFrame:
    """The staged frame with each contract problem on the row made from the same record."""
    for name in (PROBLEM_COLUMN, PROBLEM_FIELD_COLUMN):
        if name not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Utf8).alias(name))
    if problems is None or problems.is_empty() or FILE_COLUMN not in frame.columns:
        return frame
    if RECORD_COLUMN not in frame.columns:
        return frame
    joined = frame.join(problems, on=[FILE_COLUMN, RECORD_COLUMN], how="left")
    return joined.with_columns(
        pl.coalesce(PROBLEM_FIELD_COLUMN, "_contract_field").alias(PROBLEM_FIELD_COLUMN),
        pl.coalesce(PROBLEM_COLUMN, "_contract_reason").alias(PROBLEM_COLUMN),
    ).drop("_contract_field", "_contract_reason")


def validate(
    conn: duckdb.DuckDBPyConnection, run: SourceRun, definition: SourceDefinition
) -> SourceRun:
    """Validate staged records; keep typed valid rows and a pending quarantine for publish."""
    if run.status == "rejected" or run.unchanged:
        return run
    _touch_claim(conn, run)
    try:
        return _validate(conn, run, definition)
    except SchemaDriftError as error:
        return run.rejected(f"schema drift: {error}")
    except RUN_FAULTS as error:  # a bug must not leave the run unrecorded
        return run.rejected(f"validation failed: {type(error).__name__}: {error}")


def _validate(
    conn: duckdb.DuckDBPyConnection, run: SourceRun, definition: SourceDefinition
) -> SourceRun:
    valid_counts: dict[str, int] = {}
    groups: dict[tuple[str, str], int] = {}
    scales: dict[str, tuple[float | None, int]] = {}
    quarantined = []
    accepted: list[pl.DataFrame] = []
    today = run.started_at.date()
    stated = _stated(conn, run)
    for table in definition.tables:
        staged = read_work(work_file(conn, "staged", run.source, run.run_id, table))
        result = validate_records(TABLES[table], staged, today=today)
        if stated is not None and table in stated.get_column("table"):
            accepted.append(_accepted_records(table, staged, result.quarantined))
        write_work(work_file(conn, "validated", run.source, run.run_id, table), result.valid)
        valid_counts[table] = result.valid.height
        groups[(TABLE_GROUP, table)] = result.valid.height
        groups |= _group_counts(definition, table, staged, result)
        scales |= _medians(definition, table, result.valid)
        quarantined.append(result.quarantined)
    pending = pl.concat(quarantined) if quarantined else pl.DataFrame(schema=QUARANTINE_SCHEMA)
    write_work(work_file(conn, "quarantine", run.source, run.run_id), pending)
    if stated is not None:
        keys = pl.concat(accepted) if accepted else _accepted_records("", pl.DataFrame(), pending)
        dated = accepted_date(run.source, stated, keys, now_utc())
        run = replace(run, data_as_of=dated.as_of, data_as_of_basis=dated.basis)
    return replace(
        run,
        rows_valid=valid_counts,
        rows_quarantined=count_records(pending),
        groups=groups,
        scales=scales,
    )


def _stated(conn: duckdb.DuckDBPyConnection, run: SourceRun) -> pl.DataFrame | None:
    """The dates the run's payload states (`dating.stated_frame`), or None when staging found
    none to store (the run's data date then says why)."""
    try:
        return read_work(work_file(conn, "staged", run.source, run.run_id, STATED_DATES))
    except FileNotFoundError:
        return None


def _accepted_records(table: str, staged: pl.DataFrame, quarantined: pl.DataFrame) -> pl.DataFrame:
    """The (table, file, record) of each staged record of `table` not in `quarantined`."""
    if FILE_COLUMN not in staged.columns or RECORD_COLUMN not in staged.columns:
        return pl.DataFrame(schema={"table": pl.Utf8, "file": pl.Utf8, "record": pl.Int64})
    bad = quarantined.select(
        pl.col("file_name").alias(FILE_COLUMN), pl.col("record_number").alias(RECORD_COLUMN)
    ).unique()
    kept = staged.select(FILE_COLUMN, pl.col(RECORD_COLUMN).cast(pl.Int64)).join(
        bad, on=[FILE_COLUMN, RECORD_COLUMN], how="anti"
    )
    return kept.select(
        pl.lit(table, pl.Utf8).alias("table"),
        pl.col(FILE_COLUMN).cast(pl.Utf8).alias("file"),
        pl.col(RECORD_COLUMN).alias("record"),
    )


def _medians(
    definition: SourceDefinition, table: str, valid: pl.DataFrame
) -> dict[str, tuple[float | None, int]]:
    """The median and count of each of the table's contract `scales` columns (nulls aside)."""
    measured = {}
    for column in definition.contract.scales.get(table, []):
        values = valid.get_column(column).cast(pl.Float64)
        median = values.median()
        measured[f"{table}.{column}"] = (
            None if median is None else float(median),  # type: ignore[arg-type]
            values.count(),
        )
    return measured


def _group_counts(definition: SourceDefinition, table: str, staged: pl.DataFrame, result):
    """Valid rows per value of each `group_by` column of the contract (`_file`: per file)."""
    counts: dict[tuple[str, str], int] = {}
    for column in definition.contract.group_by.get(table, []):
        if column == FILE_COLUMN:
            bad = result.quarantined.select(
                pl.col("file_name").alias(FILE_COLUMN), pl.col("record_number").alias(RECORD_COLUMN)
            ).unique()
            # only the two key columns are joined: the rest of the staged rows is not needed
            kept = staged.select(FILE_COLUMN, RECORD_COLUMN)
            if not bad.is_empty():
                kept = kept.join(bad, on=[FILE_COLUMN, RECORD_COLUMN], how="anti")
            values = kept.get_column(FILE_COLUMN)
            # a file whose every record is quarantined still counts, with 0 rows
            for name in staged.get_column(FILE_COLUMN).unique().to_list():
                counts[(f"{table}.{column}", str(name))] = 0
        else:
            values = result.valid.get_column(column)
        for name, rows in values.value_counts().iter_rows():
            counts[(f"{table}.{column}", str(name))] = rows
    return counts


@dataclass(frozen=True)
class Baseline:
    """What a run is compared with: the source's last accepted run, or a later rejected run a
    person accepted (`bench accept`)."""

    run_id: str
    rows: int
    groups: dict[tuple[str, str], int]
    fields: dict[str, tuple[int, int]]
    accepted_by: str | None = None
    scales: dict[str, tuple[float | None, int]] = field(default_factory=dict)


def last_accepted(conn: duckdb.DuckDBPyConnection, source: str) -> Baseline | None:
    """The baseline of the source's next sanity check (see `Baseline`)."""
    row = conn.execute(
        "SELECT r.run_id, r.rows_valid, a.accepted_by FROM source_runs r "
        "LEFT JOIN source_run_acceptances a USING (run_id) "
        "WHERE r.source = ? AND (r.status = 'accepted' OR a.run_id IS NOT NULL) "
        "ORDER BY r.finished_at DESC, r.run_id DESC LIMIT 1",
        [source],
    ).fetchone()
    if row is None:
        return None
    run_id = row[0]
    groups = {
        (kind, name): rows
        for kind, name, rows in conn.execute(
            "SELECT group_kind, group_name, rows FROM source_run_groups WHERE run_id = ?",
            [run_id],
        ).fetchall()
    }
    if not groups:  # a run recorded before contracts: its per-table counts only
        groups = {
            (TABLE_GROUP, table): rows
            for table, rows in conn.execute(
                "SELECT table_name, rows_valid FROM source_run_tables WHERE run_id = ?", [run_id]
            ).fetchall()
        }
    fields = {
        path: (records, nulls)
        for path, records, nulls in conn.execute(
            "SELECT field_path, records, nulls FROM source_run_fields WHERE run_id = ?", [run_id]
        ).fetchall()
    }
    scales = {
        key: (median, values)
        for key, median, values in conn.execute(
            "SELECT table_column, median, n_values FROM source_run_scales WHERE run_id = ?",
            [run_id],
        ).fetchall()
    }
    return Baseline(run_id, int(row[1]), groups, fields, row[2], scales)


def sanity_check(
    run: SourceRun,
    previous: Baseline | None,
    min_row_ratio: float,
    contract: contracts.Contract | None = None,
) -> str | None:
    """Why this run must not replace the live tables, or None when it may: no valid rows, any
    table or group (file, evaluation, arena table) below `min_row_ratio` × the baseline's rows,
    a contract field null far more often than in the baseline, or a contract `scales` column
    whose median moved as a change of unit would move it."""
    total = sum(run.rows_valid.values())
    if total == 0:
        return "no valid rows"
    if previous is None:
        return None
    against = f"the last accepted run {previous.run_id}" + (
        f" (accepted by {previous.accepted_by})" if previous.accepted_by else ""
    )
    problems = []
    for (kind, name), before in sorted(previous.groups.items()):
        rows = run.groups.get((kind, name), 0)
        if before and rows < min_row_ratio * before:
            where = name if kind == TABLE_GROUP else f"{kind} {name}"
            problems.append(
                f"{where}: {rows} valid rows, fewer than {min_row_ratio:g} × the "
                f"{before} of {against}"
            )
    contract = contract or contracts.Contract()
    problems += contracts.null_share_problems(contract, run.fields, previous.fields)
    problems += contracts.scale_problems(contract, run.scales, previous.scales)
    return "; ".join(problems) or None


def publish(
    conn: duckdb.DuckDBPyConnection,
    run: SourceRun,
    definition: SourceDefinition,
    on_stage: Callable[[str], None] | None = None,
) -> SourceRun:
    """Swap the validated rows into the live tables in one transaction, or record a rejection.

    `on_stage` is told "swapping" inside the open transaction and "committed" after it, so a
    caller can report progress (tests use it to kill the process mid-swap). An unchanged run
    is returned as it is: the live tables already hold its rows.
    """
    if run.unchanged:
        return run
    _touch_claim(conn, run)
    previous = last_accepted(conn, run.source)
    if run.status != "rejected":
        problem = sanity_check(run, previous, definition.min_row_ratio, definition.contract)
        run = run.rejected(problem) if problem else replace(run, status="accepted")
    run = replace(run, previous_rows=previous.rows if previous else None)
    with transaction(conn):
        if run.status == "accepted":
            if on_stage:
                on_stage("swapping")
            for table in definition.tables:
                valid = read_work(work_file(conn, "validated", run.source, run.run_id, table))
                scope = TABLES[table].scoped_by if table in TABLES else None
                if scope is None:
                    conn.execute(f"DELETE FROM main.{table}")
                else:  # a table several sources share: only this source's rows
                    conn.execute(f"DELETE FROM main.{table} WHERE {scope} = ?", [run.source])
                with registered(conn, valid) as view:
                    conn.execute(
                        f"INSERT INTO main.{table} BY NAME "
                        f"SELECT *, ? AS source_run_id FROM {view}",
                        [run.run_id],
                    )
            insert_rows(
                conn,
                "source_run_tables",
                None,
                [(run.run_id, table, rows) for table, rows in run.rows_valid.items()],
            )
        _record_quarantine(conn, run)
        _record_measurements(conn, run)
        _record_run(conn, run)
    if on_stage:
        on_stage("committed")
    remove_run(conn, run.source, run.run_id)
    return run


def _record_measurements(conn: duckdb.DuckDBPyConnection, run: SourceRun) -> None:
    """Every validated run's counts, so a later run (or `bench accept`) can compare with it."""
    if not run.rows_valid:
        return
    groups = [(run.run_id, run.source, kind, name, n) for (kind, name), n in run.groups.items()]
    fields = [(run.run_id, run.source, path, n, nulls) for path, (n, nulls) in run.fields.items()]
    scales = [(run.run_id, run.source, key, m, n) for key, (m, n) in run.scales.items()]
    insert_rows(conn, "source_run_groups", None, groups)
    insert_rows(conn, "source_run_fields", None, fields)
    insert_rows(conn, "source_run_scales", None, scales)


def _record_quarantine(conn: duckdb.DuckDBPyConnection, run: SourceRun) -> None:
    if not run.rows_valid:  # rejected before validation: nothing was checked record by record
        return
    pending = read_work(work_file(conn, "quarantine", run.source, run.run_id))
    with registered(conn, pending) as view:
        conn.execute(
            f"INSERT INTO quarantine SELECT ?, ?, table_name, file_name, record_number, "
            f"record_key, field, reason, record, now()::TIMESTAMP FROM {view}",
            [run.run_id, run.source],
        )


def _touch_claim(conn: duckdb.DuckDBPyConnection, run: SourceRun) -> None:
    """Say which process works on the run now: under Dagster's multiprocess executor each
    stage is its own process, and the one that claimed the id has already exited."""
    conn.execute(
        "UPDATE source_run_claims SET host = ?, pid = ?, claimed_at = ? WHERE run_id = ?",
        [socket.gethostname(), os.getpid(), now_utc(), run.run_id],
    )


def _record_run(conn: duckdb.DuckDBPyConnection, run: SourceRun) -> None:
    # A run taken for abandoned (its process seemed gone between two stages) that finishes
    # after all: its real outcome replaces the guess.
    conn.execute(
        "DELETE FROM source_runs WHERE run_id = ? AND starts_with(reason, 'abandoned:')",
        [run.run_id],
    )
    conn.execute(
        "INSERT INTO source_runs (source, run_id, mode, started_at, finished_at, status, "
        "rows_valid, rows_quarantined, previous_rows, reason, content_sha256, data_as_of, "
        "data_as_of_basis) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            run.data_as_of,
            run.data_as_of_basis,
        ],
    )


def describe(run: SourceRun) -> str:
    """One line for logs and the CLI summary."""
    detail = json.dumps(run.rows_valid, sort_keys=True)
    if run.status == "accepted":
        return f"{run.source}: accepted {detail}, {run.rows_quarantined} quarantined"
    if run.unchanged:
        return f"{run.source}: unchanged ({run.reason})"
    return f"{run.source}: {run.status} ({run.reason})"
