"""Submitted runs: read the inbox, keep every valid run (costed from our own dated rates),
record every rejection with its file, field and reason. Nothing is moved or deleted.

Files are known by content (SHA-256): a file already recorded, accepted or rejected, is not
recorded again, so the sensor and the asset can look at the whole inbox every time. A
rejected file fixed and dropped in again is a new file. Every file is read and checked before
the warehouse is opened (`read_submissions`), and the warehouse is then held only to learn
which hashes are recorded and to store the rest in one transaction (`store_submissions`).

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
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from bench_pipeline.core import settings
from bench_pipeline.core.inbox import read_inbox, unseen
from bench_pipeline.core.warehouse import transaction
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
    "rerun_of", "submitter", "received_at", "submitter_verified",
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
    """Every file of the inbox read (`core.inbox`) and checked, with no warehouse open."""
    return [
        ReadSubmission(
            entry.path,
            entry.sha256,
            check_submission(entry, bank=bank, now=now, submitters=submitters),
        )
        for entry in read_inbox(inbox)
    ]


@dataclass
class IntakeReport:
    accepted: list[str] = field(default_factory=list)
    """Run ids."""
    rejected: list[Rejection] = field(default_factory=list)
    seen_before: int = 0
    waiting: list[Rejection] = field(default_factory=list)
    """Files not judged now (the submitters file cannot be used): left unrecorded."""


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
    return {
        "run_id": submission_run_id(sha256),
        "file_name": path.name,
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
        "claimed_cost_usd": submission.claimed_cost_usd,
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


def store_submissions(
    conn: duckdb.DuckDBPyConnection,
    read: Sequence[ReadSubmission],
    rates: Mapping[str, Sequence[Rates]],
    now: datetime,
) -> IntakeReport:
    """Record the files read whose hash `submission_files` does not hold yet: valid runs into
    `submitted_runs`, every file's fate into `submission_files`, in one transaction."""
    report = IntakeReport()
    files: list[list[Any]] = []
    runs: list[dict[str, Any]] = []
    stamp = now.replace(tzinfo=None)
    with transaction(conn):
        recorded = {s for (s,) in conn.execute("SELECT sha256 FROM submission_files").fetchall()}
        new, report.seen_before = unseen(read, recorded)
        for path, sha256, result in new:
            if isinstance(result, Rejection) and not result.final:
                report.waiting.append(result)
                continue
            if isinstance(result, Rejection):
                report.rejected.append(result)
                files.append(
                    [sha256, path.name, "rejected", result.field, result.reason, None, stamp]
                )
                continue
            # Read with a usable submitters file: the signature was checked.
            row = submitted_row(result, path, sha256, rates, now, submitter_verified=True)
            runs.append(row)
            report.accepted.append(row["run_id"])
            files.append([sha256, path.name, "accepted", None, None, row["run_id"], stamp])
        insert_rows(conn, "submission_files", FILE_COLUMNS, files)
        insert_rows(
            conn, "submitted_runs", SUBMITTED_COLUMNS,
            [[row[c] for c in SUBMITTED_COLUMNS] for row in runs],
        )  # fmt: skip
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
