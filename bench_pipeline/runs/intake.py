"""Submitted runs: read the inbox, keep every valid run (costed from our own dated rates),
record every rejection with its file, field and reason. Nothing is moved or deleted.

Files are known by content (SHA-256): a file already seen, accepted or rejected, is not read
again, so the sensor and the asset can look at the whole inbox every time. A rejected file
fixed and dropped in again is a new file. A run's id is `sub-` + 16 hex digits of its file's
hash, which is what `reproduces` and `rerun_of` in other submissions refer to.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.providers.base import Usage
from bench_pipeline.runs.costing import Rates, cost_of_all, rate_in_effect
from bench_pipeline.runs.submissions import (
    MAX_SUBMISSION_BYTES,
    Rejection,
    Submission,
    load_submission,
)
from bench_pipeline.taskbank import TaskBank

SUBMITTED_COLUMNS = (
    "run_id", "file_name", "use_case", "use_case_version", "model_name", "model_settings",
    "run_group", "harness", "harness_version", "started_at", "run_date", "prompt_tokens",
    "completion_tokens", "cached_tokens", "cache_write_tokens", "reasoning_tokens",
    "requests_known", "claimed_cost_usd", "cost_usd", "cost_warnings", "wall_time_seconds",
    "step_ins", "turns", "retries", "first_try", "autonomy", "outcome", "criteria",
    "evidence_log", "evidence_sha256", "evidence_matches", "output", "reproduces",
    "rerun_of", "submitter", "received_at",
)  # fmt: skip


FILE_COLUMNS = ("sha256", "file_name", "status", "field", "reason", "run_id", "received_at")


def submission_run_id(sha256: str) -> str:
    return f"sub-{sha256[:16]}"


MAX_INBOX_BYTES = MAX_SUBMISSION_BYTES
"""The largest inbox file read (8 MiB; a real submission or review is a few KiB). A larger
file is recorded as rejected without being read."""

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class InboxFile(NamedTuple):
    """One inbox entry: its content hash, or (when it must not be read) why not, with a
    stand-in hash naming the entry so it is recorded once."""

    path: Path
    sha256: str
    refusal: str | None = None


def inbox_files(inbox: Path) -> list[Path]:
    """The `*.json` entries of the inbox, by name (other names are ignored)."""
    if not inbox.is_dir():
        return []
    return sorted(p for p in inbox.iterdir() if p.suffix == ".json" and not p.name.startswith("."))


def _stand_in(path: Path, what: str) -> str:
    return hashlib.sha256(f"refused\0{path.name}\0{what}".encode()).hexdigest()


def inbox_entry(path: Path, max_bytes: int = MAX_INBOX_BYTES) -> InboxFile | None:
    """Hash one inbox entry, never opening anything but a regular file within `max_bytes`
    (a FIFO would block the reader for ever, a link to /dev/zero never ends). None when it
    vanished or cannot be read now (left for a later look)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    for test, kind in _KINDS:
        if test(info.st_mode):
            return InboxFile(
                path, _stand_in(path, kind), f"{kind}, not a regular file; never opened"
            )
    if not stat.S_ISREG(info.st_mode):
        return InboxFile(path, _stand_in(path, "special"), "not a regular file; never opened")
    if info.st_size > max_bytes:
        what = f"{info.st_size}:{info.st_mtime_ns}"
        return InboxFile(
            path,
            _stand_in(path, what),
            f"{info.st_size} bytes, over the inbox limit of {max_bytes} bytes; not read",
        )
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between lstat and open
            return InboxFile(path, _stand_in(path, "swapped"), "not a regular file; never read")
        read = 0
        while chunk := handle.read(1 << 20):
            read += len(chunk)
            if read > max_bytes:  # grew after the size check
                return InboxFile(
                    path,
                    _stand_in(path, f"grew:{info.st_mtime_ns}"),
                    f"over the inbox limit of {max_bytes} bytes; not read",
                )
            digest.update(chunk)
    return InboxFile(path, digest.hexdigest())


def file_sha256(path: Path) -> str | None:
    """The entry's hash as `inbox_entry` gives it (a stand-in for one it must not read)."""
    entry = inbox_entry(path)
    return entry.sha256 if entry else None


def unseen_files(
    conn: duckdb.DuckDBPyConnection, inbox: Path, table: str
) -> tuple[list[InboxFile], int]:
    """The inbox entries whose hash `table` (with a `sha256` column) has not recorded, and how
    many were seen before. An entry unreadable now is left for later; a refused one (not a
    regular file, too large) comes with its refusal, for the caller to record as rejected."""
    seen = {s for (s,) in conn.execute(f"SELECT sha256 FROM {table}").fetchall()}
    unseen: list[InboxFile] = []
    seen_before = 0
    for path in inbox_files(inbox):
        entry = inbox_entry(path)
        if entry is None:
            continue
        if entry.sha256 in seen:
            seen_before += 1
            continue
        seen.add(entry.sha256)
        unseen.append(entry)
    return unseen, seen_before


@dataclass
class IntakeReport:
    accepted: list[str] = field(default_factory=list)
    """Run ids."""
    rejected: list[Rejection] = field(default_factory=list)
    seen_before: int = 0


def submitted_row(
    submission: Submission,
    path: Path,
    sha256: str,
    rates: Mapping[str, Sequence[Rates]],
    now: datetime,
) -> dict[str, Any]:
    """The `submitted_runs` row: our cost at the rate in effect on the run's date."""
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
    }


def ingest_inbox(
    conn: duckdb.DuckDBPyConnection,
    inbox: Path,
    bank: TaskBank,
    rates: Mapping[str, Sequence[Rates]],
    now: datetime | None = None,
) -> IntakeReport:
    """Take every file of the inbox not seen before: valid runs into `submitted_runs`, every
    file's fate into `submission_files`, all in one transaction."""
    now = now or datetime.now(UTC)
    report = IntakeReport()
    unseen, report.seen_before = unseen_files(conn, inbox, "submission_files")
    files: list[list[Any]] = []
    runs: list[dict[str, Any]] = []
    stamp = now.replace(tzinfo=None)
    for path, sha256, refusal in unseen:
        result: Submission | Rejection
        if refusal is not None:
            result = Rejection(
                reason=refusal, field=None, problems=((None, refusal),), source=str(path)
            )
        else:
            result = load_submission(path, bank=bank, now=now)
        if isinstance(result, Rejection):
            report.rejected.append(result)
            files.append([sha256, path.name, "rejected", result.field, result.reason, None, stamp])
            continue
        row = submitted_row(result, path, sha256, rates, now)
        runs.append(row)
        report.accepted.append(row["run_id"])
        files.append([sha256, path.name, "accepted", None, None, row["run_id"], stamp])
    with transaction(conn):
        insert_rows(conn, "submission_files", FILE_COLUMNS, files)
        insert_rows(
            conn, "submitted_runs", SUBMITTED_COLUMNS,
            [[row[c] for c in SUBMITTED_COLUMNS] for row in runs],
        )  # fmt: skip
    return report
