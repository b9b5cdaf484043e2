"""The review queue and the immutable review store.

A PM-suite run waits for a blind review until a person has reviewed it; a run on the
second-look list waits until someone reviews it after it was put there. The queue is ordered
by a hash of run and reviewer, so two reviewers see runs in different orders and nobody can
infer a setup from the order. Reviews are only inserted: a second review of the same run by
the same person is refused, and nothing here updates or deletes a review.

Simulated runs (the offline demo) are reviewed by a simulated reviewer, labelled so in every
row, so the demo publishes every number; a real model's run is only ever reviewed by a
person.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from pydantic import ValidationError

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.grading.blinding import blind_copy
from bench_pipeline.grading.review_model import Review
from bench_pipeline.providers.simulated import simulated_quality
from bench_pipeline.runs.intake import MAX_INBOX_BYTES, unseen_files
from bench_pipeline.taskbank import Case, TaskBank
from bench_pipeline.taskbank.errors import validation_problems

SIMULATED_REVIEWER = "simulated reviewer (not a person)"
REVIEW_COLUMNS = (
    "review_id", "run_id", "reviewer", "score", "understood", "missed", "decisive_reason",
    "critical_failure", "simulated", "origin", "submitted_at",
)  # fmt: skip


class ReviewRefused(ValueError):
    """The review cannot be stored; `field` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class QueueItem:
    """One output waiting for a blind review: what the reviewer may see, and nothing else."""

    run_id: str
    case: Case
    output: str
    """The output with anything naming its model, company or setup redacted."""
    why: str
    """`pm review` or the second-look reason."""


_QUEUE_SQL = """
WITH looks AS (SELECT run_id, min(reason) AS reason FROM second_look GROUP BY run_id)
SELECT r.run_id, r.suite, r.case_id, r.case_version, r.output,
       coalesce(l.reason, 'pm review') AS why,
       s.api_id, s.company, s.model_record, s.harness, s.label
FROM model_runs r
JOIN setups s USING (setup_id)
LEFT JOIN looks l ON l.run_id = r.run_id
WHERE (r.suite = 'pm' OR l.run_id IS NOT NULL)
  AND (? OR NOT r.simulated)
  AND NOT EXISTS (SELECT 1 FROM reviews v WHERE v.run_id = r.run_id AND v.reviewer = ?)
  AND (l.run_id IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM reviews v WHERE v.run_id = r.run_id AND NOT v.simulated))
ORDER BY md5(r.run_id || ?)
"""


def review_queue(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, reviewer: str, *, include_simulated: bool
) -> list[QueueItem]:
    """The runs `reviewer` may review now, in their blind order. Runs of a case version no
    longer in the bank are left out (their brief cannot be shown)."""
    rows = conn.execute(_QUEUE_SQL, [include_simulated, reviewer, reviewer])
    items = []
    for run_id, suite, case_id, version, output, why, *identity in rows.fetchall():
        try:
            case = bank.get(suite, case_id)
        except KeyError:
            continue
        if case.version == version:
            items.append(QueueItem(run_id, case, blind_copy(output, *identity), why))
    return items


def check_review(conn: duckdb.DuckDBPyConnection, review: Review, bank: TaskBank) -> None:
    """Refuse a review of an unknown run, with a critical-failure id its case does not
    have, or by a person who already reviewed that run.

    Raises:
        ReviewRefused: Naming the field.
    """
    found = conn.execute(
        "SELECT suite, case_id FROM model_runs WHERE run_id = ?", [review.run_id]
    ).fetchall()
    if not found:
        raise ReviewRefused("run_id", f"no run {review.run_id}")
    if review.critical_failure is not None:
        suite, case_id = found[0]
        ids = {f.id for f in bank.get(suite, case_id).critical_failures}
        if review.critical_failure not in ids:
            allowed = ", ".join(sorted(ids)) or "none"
            raise ReviewRefused(
                "critical_failure", f"not a critical failure of {case_id} (it has: {allowed})"
            )
    done = conn.execute(
        "SELECT submitted_at FROM reviews WHERE review_id = ?", [review.review_id]
    ).fetchall()
    if done:
        raise ReviewRefused(
            "run_id",
            f"{review.reviewer} already reviewed {review.run_id} on {done[0][0]:%Y-%m-%d}; "
            "a submitted review is never changed",
        )


def _row(review: Review, origin: str, simulated: bool, now: datetime) -> list[Any]:
    values = review.model_dump() | {
        "review_id": review.review_id,
        "simulated": simulated,
        "origin": origin,
        "submitted_at": now.replace(tzinfo=None),
    }
    return [values[c] for c in REVIEW_COLUMNS]


def submit_review(
    conn: duckdb.DuckDBPyConnection,
    review: Review,
    bank: TaskBank,
    origin: str = "cli",
    now: datetime | None = None,
) -> str:
    """Store a person's review (checked first); return its id.

    Raises:
        ReviewRefused: See `check_review`.
    """
    with transaction(conn):
        check_review(conn, review, bank)
        insert_rows(conn, "reviews", REVIEW_COLUMNS, [_row(review, origin, False, now or _now())])
    return review.review_id


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ReviewIntake:
    accepted: list[str]
    rejected: list[tuple[str, str, str]]
    """(file name, field, reason)."""
    seen_before: int


def parse_review_file(data: bytes) -> Review | ReviewRefused:
    """A review from a JSON file's bytes, or why not (never raises on bad input)."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return ReviewRefused("file", f"not a JSON document: {error}")
    if not isinstance(document, dict):
        return ReviewRefused("file", "a review is one JSON object")
    try:
        return Review.model_validate(document)
    except ValidationError as error:
        field, message = validation_problems(error)[0]
        return ReviewRefused(field or "file", message)


def _read(path: Path) -> bytes:
    """A regular file `inbox_entry` just hashed (within the inbox limit), not following links."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_INBOX_BYTES + 1)


def ingest_review_files(
    conn: duckdb.DuckDBPyConnection, inbox: Path, bank: TaskBank, now: datetime | None = None
) -> ReviewIntake:
    """Take every review file of the inbox not seen before; record each file's fate."""
    now = now or _now()
    stamp = now.replace(tzinfo=None)
    unseen, seen_before = unseen_files(conn, inbox, "review_files")
    report = ReviewIntake([], [], seen_before)
    with transaction(conn):
        for path, sha256, refusal in unseen:
            result = ReviewRefused("file", refusal) if refusal else parse_review_file(_read(path))
            if isinstance(result, Review):
                try:
                    check_review(conn, result, bank)
                except ReviewRefused as refused:
                    result = refused
            if isinstance(result, ReviewRefused):
                reason = str(result)
                report.rejected.append((path.name, result.field, reason))
                row = [sha256, path.name, "rejected", result.field, reason, None, stamp]
            else:
                origin = f"inbox:{path.name}"
                insert_rows(conn, "reviews", REVIEW_COLUMNS, [_row(result, origin, False, now)])
                report.accepted.append(result.review_id)
                row = [sha256, path.name, "accepted", None, None, result.review_id, stamp]
            insert_rows(
                conn, "review_files",
                ("sha256", "file_name", "status", "field", "reason", "review_id", "received_at"),
                [row],
            )  # fmt: skip
    return report


def simulated_reviews(conn: duckdb.DuckDBPyConnection, now: datetime | None = None) -> int:
    """Review every simulated PM run nobody has reviewed, as the labelled simulated reviewer;
    return how many were added. The score (1–5) follows the latent quality the simulated
    answer carries (`providers.simulated`), so better simulated setups review better; an
    output without one gets a deterministic score from the run id."""
    rows = conn.execute(
        "SELECT run_id, output FROM model_runs r WHERE suite = 'pm' AND simulated AND NOT EXISTS "
        "(SELECT 1 FROM reviews v WHERE v.run_id = r.run_id)"
    ).fetchall()
    new = []
    for run_id, output in rows:
        quality = simulated_quality(output or "")
        if quality is None:
            score = 2 + int(hashlib.sha256(run_id.encode()).hexdigest(), 16) % 4
        else:
            score = min(5, 1 + int(5 * quality))
        review = Review(
            run_id=run_id,
            reviewer=SIMULATED_REVIEWER,
            score=score,
            understood="(simulated review of a simulated output)",
            missed="(simulated)",
            decisive_reason="(simulated: no person read this output)",
        )
        new.append(_row(review, "simulated", True, now or _now()))
    with transaction(conn):
        insert_rows(conn, "reviews", REVIEW_COLUMNS, new)
    return len(new)
