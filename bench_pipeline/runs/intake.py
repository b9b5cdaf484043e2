"""Submitted runs: read the inbox, keep every valid run (costed from our own dated rates),
record every rejection with its file, field and reason. Nothing is moved or deleted.

Files are known by content (SHA-256): a file already recorded, accepted or rejected, is not
recorded again, so the sensor and the asset can look at the whole inbox every time. A
rejected file fixed and dropped in again is a new file. Every file is read and checked before
the warehouse is opened (`read_submissions`), and the warehouse is then held only to learn
which hashes are recorded and to store the rest, each file in a transaction of its own
(`store_submissions`): whatever one file holds, it is rejected alone with the field and the
reason, and the others are taken (`core.isolation`).

A run's id is `sub-` + 16 hex digits of its file's hash, which is what `reproduces` and
`rerun_of` in other submissions refer to.

Only registered submitters are taken: each file must name one and carry their signature
(`runs.submitters`; the registry is `settings.submitters_path()`). Every stored run is then
`submitter_verified`. While the submitters file cannot be used, files that pass every other
check wait unrecorded (`IntakeReport.waiting`) and are taken on the first run after it can.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from bench_pipeline.core import settings
from bench_pipeline.core.inbox import read_inbox, unseen
from bench_pipeline.core.isolation import (
    MAX_STORED_REASON,
    RECORD_ERRORS,
    error_column,
    error_reason,
    storable,
    take_each,
)
from bench_pipeline.core.money import MAX_STORED_USD
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.providers.base import Usage
from bench_pipeline.runs.batch import Connect
from bench_pipeline.runs.costing import Rates, cost_of_all, rate_in_effect
from bench_pipeline.runs.rates import rates_by_api_id
from bench_pipeline.runs.submissions import Rejection, Submission, check_submission
from bench_pipeline.runs.submitters import Submitters, load_submitters
from bench_pipeline.taskbank import TaskBank

SUBMITTED_COLUMNS = (
    "run_id", "file_name", "use_case", "use_case_version", "model_name", "model_settings",
    "run_group", "harness", "harness_version", "started_at", "run_date", "prompt_tokens",
    "completion_tokens", "cached_tokens", "cache_write_tokens", "reasoning_tokens",
    "requests_known", "claimed_cost_usd", "cost_usd", "cost_warnings", "wall_time_seconds",
    "step_ins", "turns", "retries", "first_try", "autonomy", "outcome", "criteria",
    "evidence_log", "evidence_sha256", "evidence_matches", "output", "reproduces",
    "rerun_of", "submitter", "received_at", "submitter_verified", "claimed_cost_as_written",
)  # fmt: skip


FILE_COLUMNS = ("sha256", "file_name", "status", "field", "reason", "run_id", "received_at")


def submission_run_id(sha256: str) -> str:
    return f"sub-{sha256[:16]}"


class ReadSubmission(NamedTuple):
    """One inbox file, read and checked: its hash and the submission or why not."""

    path: Path
    sha256: str
    result: Submission | Rejection


def read_submissions(
    inbox: Path, bank: TaskBank, now: datetime, submitters: Submitters
) -> list[ReadSubmission]:
    """Every file of the inbox read (`core.inbox`) and checked, with no warehouse open; a
    check that raises on a file's values rejects that file (`core.isolation`)."""
    read = []
    for entry in read_inbox(inbox):
        try:
            result: Submission | Rejection = check_submission(
                entry, bank=bank, now=now, submitters=submitters
            )
        except RECORD_ERRORS as error:
            result = _refused(entry.path, entry.sha256, error)
        read.append(ReadSubmission(entry.path, entry.sha256, result))
    return read


@dataclass
class IntakeReport:
    accepted: list[str] = field(default_factory=list)
    """Run ids."""
    rejected: list[Rejection] = field(default_factory=list)
    seen_before: int = 0
    waiting: list[Rejection] = field(default_factory=list)
    """Files not judged now (the submitters file cannot be used): left unrecorded."""


def stored_claim(claimed: Decimal | None) -> tuple[Decimal | None, str | None]:
    """A claimed cost as `submitted_runs` stores it: the value, or, when its column cannot
    hold it (above `MAX_STORED_USD`), that largest amount with the claim as written beside it
    (`claimed_cost_as_written`, which scoring reads: the run is flagged `implausible_cost`)."""
    if claimed is None or claimed <= MAX_STORED_USD:
        return claimed, None
    return MAX_STORED_USD, str(claimed)


def submitted_row(
    submission: Submission,
    path: Path,
    sha256: str,
    rates: Mapping[str, Sequence[Rates]],
    now: datetime,
    *,
    submitter_verified: bool,
) -> dict[str, Any]:
    """The `submitted_runs` row: our cost at the rate in effect on the run's date;
    `submitter_verified` when the file proved a registered submitter."""
    usages = submission.usages()
    total = Usage.total(usages)
    in_effect = rate_in_effect(rates.get(submission.model.name, ()), submission.run_date)
    cost = cost_of_all(usages, in_effect)
    claimed, as_written = stored_claim(submission.claimed_cost_usd)
    return {
        "run_id": submission_run_id(sha256),
        "file_name": storable(path.name),
        "use_case": submission.use_case,
        "use_case_version": submission.use_case_version,
        "model_name": submission.model.name,
        "model_settings": json.dumps(submission.model.settings, sort_keys=True),
        "run_group": submission.group,
        "harness": submission.harness.name,
        "harness_version": submission.harness.version,
        "started_at": submission.started_at.astimezone(UTC).replace(tzinfo=None),
        "run_date": submission.run_date,
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "cached_tokens": total.cached_tokens,
        "cache_write_tokens": total.cache_write_tokens,
        "reasoning_tokens": total.reasoning_tokens,
        "requests_known": submission.tokens.per_request is not None,
        "claimed_cost_usd": claimed,
        "claimed_cost_as_written": as_written,
        "cost_usd": cost.cost_usd,
        "cost_warnings": ",".join(cost.warnings),
        "wall_time_seconds": submission.wall_time_seconds,
        "step_ins": submission.step_ins,
        "turns": submission.turns,
        "retries": submission.retries,
        "first_try": submission.first_try,
        "autonomy": submission.autonomy,
        "outcome": submission.outcome,
        "criteria": json.dumps(submission.criteria, sort_keys=True),
        "evidence_log": submission.evidence_log,
        "evidence_sha256": submission.evidence_sha256,
        "evidence_matches": submission.evidence_hash_matches,
        "output": submission.output,
        "reproduces": submission.reproduces,
        "rerun_of": submission.rerun_of,
        "submitter": submission.submitter,
        "received_at": now.replace(tzinfo=None),
        "submitter_verified": submitter_verified,
    }


COLUMN_FIELDS = {
    "file_name": None, "model_name": "model.name", "model_settings": "model.settings",
    "run_group": "model", "harness": "harness.name", "harness_version": "harness.version",
    "run_date": "started_at", "prompt_tokens": "tokens", "completion_tokens": "tokens",
    "cached_tokens": "tokens", "cache_write_tokens": "tokens", "reasoning_tokens": "tokens",
    "requests_known": "tokens", "cost_usd": "tokens", "cost_warnings": "tokens",
    "outcome": "criteria", "evidence_matches": "evidence_sha256", "received_at": None,
    "claimed_cost_as_written": "claimed_cost_usd",
}  # fmt: skip
"""The submission field a `submitted_runs` column comes from, where the names differ."""


def _refused(path: Path, sha256: str, error: BaseException) -> Rejection:
    """The rejection of a file whose values raised while it was checked or stored."""
    column = error_column(error, "submitted_runs", SUBMITTED_COLUMNS)
    field = COLUMN_FIELDS.get(column, column) if column else None
    reason = f"cannot be stored: {error_reason(error)}"
    return Rejection(
        reason=f"{field}: {reason}" if field else reason,
        field=field,
        problems=((field, reason),),
        source=str(path),
        sha256=sha256,
    )


def _file_row(
    entry: ReadSubmission, stamp: datetime, rejection: Rejection | None, run_id: str | None
) -> list[Any]:
    """The `submission_files` row of a file: accepted as `run_id`, or rejected."""
    status, field, reason = "accepted", None, None
    if rejection is not None:
        status, field, reason = "rejected", rejection.field, rejection.reason
    return [
        entry.sha256, storable(entry.path.name), status, field and storable(field),
        reason and storable(reason, MAX_STORED_REASON), run_id, stamp,
    ]  # fmt: skip


def store_submissions(
    conn: duckdb.DuckDBPyConnection,
    read: Sequence[ReadSubmission],
    rates: Mapping[str, Sequence[Rates]],
    now: datetime,
) -> IntakeReport:
    """Record the files read whose hash `submission_files` does not hold yet: a valid run
    into `submitted_runs` and each file's fate into `submission_files`, each file in a
    transaction of its own (`core.isolation.take_each`): a value that cannot be stored
    rejects its own file, with the field and the reason, and never the others."""
    report = IntakeReport()
    stamp = now.replace(tzinfo=None)
    recorded = {s for (s,) in conn.execute("SELECT sha256 FROM submission_files").fetchall()}
    new, report.seen_before = unseen(read, recorded)
    # A file waiting for a usable submitters file is not recorded: the next run reads it again.
    report.waiting = [
        e.result for e in new if isinstance(e.result, Rejection) and not e.result.final
    ]
    new = [e for e in new if not (isinstance(e.result, Rejection) and not e.result.final)]

    def take(conn: duckdb.DuckDBPyConnection, entry: ReadSubmission) -> None:
        if isinstance(entry.result, Rejection):
            insert_rows(
                conn,
                "submission_files",
                FILE_COLUMNS,
                [_file_row(entry, stamp, entry.result, None)],
            )
            report.rejected.append(entry.result)
            return
        # Read with a usable submitters file: the signature was checked.
        row = submitted_row(
            entry.result, entry.path, entry.sha256, rates, now, submitter_verified=True
        )
        insert_rows(
            conn, "submitted_runs", SUBMITTED_COLUMNS, [[row[c] for c in SUBMITTED_COLUMNS]]
        )
        insert_rows(
            conn, "submission_files", FILE_COLUMNS, [_file_row(entry, stamp, None, row["run_id"])]
        )
        report.accepted.append(row["run_id"])

    def refuse(conn: duckdb.DuckDBPyConnection, entry: ReadSubmission, error: BaseException):
        rejection = _refused(entry.path, entry.sha256, error)
        insert_rows(
            conn, "submission_files", FILE_COLUMNS, [_file_row(entry, stamp, rejection, None)]
        )
        report.rejected.append(rejection)

    take_each(conn, new, take, refuse)
    return report


def ingest_inbox(
    connect: Connect,
    inbox: Path,
    bank: TaskBank,
    rates: Mapping[str, Sequence[Rates]] | None = None,
    now: datetime | None = None,
    submitters: Submitters | None = None,
) -> IntakeReport:
    """Take every file of the inbox not seen before. Every file is read and checked first;
    only then is the warehouse opened, to learn which are recorded and store the rest.

    Args:
        connect: Opens a warehouse connection (held only after every file is read).
        inbox: The folder of `*.json` submissions.
        bank: The task bank submissions are checked against.
        rates: Dated rates by API id; None: the warehouse's (`rates_by_api_id`).
        now: The intake's time (default: now).
        submitters: The registered submitters; None: `settings.submitters_path()`'s.
    """
    now = now or datetime.now(UTC)
    if submitters is None:
        submitters = load_submitters(settings.submitters_path())
    read = read_submissions(inbox, bank, now, submitters)
    with connect() as conn:
        if rates is None:
            named = (r.result.model.name for r in read if isinstance(r.result, Submission))
            rates = rates_by_api_id(conn, named)
        return store_submissions(conn, read, rates, now)
