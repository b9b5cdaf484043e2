"""The review queue and the immutable review store.

A PM-suite run waits for a blind review until a person has reviewed it; a run on the
second-look list waits until someone reviews it after it was put there, and its receipt is
held from every release until then, so the second look stays blind. No run whose receipt is
public is offered at all. The queue is ordered
by a hash of run and reviewer, so two reviewers see runs in different orders and nobody can
infer a setup from the order. Reviews are only inserted: a second review of the same run by
the same person is refused, and nothing here updates or deletes a review.

Simulated runs (the offline demo) are reviewed by a simulated reviewer, labelled so in every
row, so the demo publishes every number; a real model's run is only ever reviewed by a
person. A person's review of a simulated run is practice (`bench review --include-simulated`):
it is stored in `practice_reviews`, apart, so it never reaches a board, a second look or the
judge-person calibration of the release gate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
from pydantic import ValidationError

from bench_pipeline.core.inbox import InboxFile, read_inbox, unseen
from bench_pipeline.core.isolation import (
    MAX_STORED_REASON,
    RECORD_ERRORS,
    error_column,
    error_reason,
    storable,
    take_each,
)
from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.grading.blind_names import load_blind_names
from bench_pipeline.grading.blinding import blind_copy
from bench_pipeline.grading.review_model import Review
from bench_pipeline.providers.simulated import simulated_quality
from bench_pipeline.runs.batch import Connect
from bench_pipeline.taskbank import Case, TaskBank
from bench_pipeline.taskbank.errors import validation_problems

SIMULATED_REVIEWER = "simulated reviewer (not a person)"
REVIEW_COLUMNS = (
    "review_id", "run_id", "reviewer", "score", "understood", "missed", "decisive_reason",
    "critical_failure", "simulated", "origin", "submitted_at",
)  # fmt: skip
PRACTICE_COLUMNS = tuple(c for c in REVIEW_COLUMNS if c != "simulated")
REVIEW_FILE_COLUMNS = (
    "sha256", "file_name", "status", "field", "reason", "review_id", "received_at",
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
    practice: bool = False
    """The run is simulated: a review of it is practice, stored apart."""


AWAITING_SECOND_LOOK_SQL = """
SELECT l.run_id, min(l.reason) AS reason
FROM second_look l
WHERE NOT EXISTS (SELECT 1 FROM reviews v WHERE v.run_id = l.run_id AND NOT v.simulated
                  AND v.submitted_at >= l.found_at)
  AND NOT EXISTS (SELECT 1 FROM practice_reviews v WHERE v.run_id = l.run_id
                  AND v.submitted_at >= l.found_at)
GROUP BY l.run_id
"""
"""Runs on the second-look list that no person has reviewed since they were put there (the
simulated reviewer's reviews resolve nothing), with the first reason."""


def awaiting_second_look(conn: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Run id → reason, for every run whose second look waits for a person's review. Their
    receipts are held from every release until it is stored (`release.receipts`)."""
    return dict(conn.execute(AWAITING_SECOND_LOOK_SQL).fetchall())


_QUEUE_SQL = f"""
WITH looks AS ({AWAITING_SECOND_LOOK_SQL})
SELECT r.run_id, r.suite, r.case_id, r.case_version, r.output,
       coalesce(l.reason, 'pm review') AS why, r.simulated,
       s.api_id, s.company, s.model_record, s.harness, s.label
FROM model_runs r
JOIN setups s USING (setup_id)
LEFT JOIN looks l ON l.run_id = r.run_id
WHERE (r.suite = 'pm' OR l.run_id IS NOT NULL)
  AND (? OR NOT r.simulated)
  AND NOT EXISTS (SELECT 1 FROM reviews v WHERE v.run_id = r.run_id AND v.reviewer = ?)
  AND NOT EXISTS (SELECT 1 FROM practice_reviews v WHERE v.run_id = r.run_id AND v.reviewer = ?)
  AND (l.run_id IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM reviews v WHERE v.run_id = r.run_id AND NOT v.simulated))
  AND NOT list_contains(?::VARCHAR[], r.run_id)
ORDER BY md5(r.run_id || ?)
"""


def review_queue(
    conn: duckdb.DuckDBPyConnection,
    bank: TaskBank,
    reviewer: str,
    *,
    include_simulated: bool,
    public_receipts: Collection[str],
) -> list[QueueItem]:
    """The runs `reviewer` may review now, in their blind order. Runs of a case version no
    longer in the bank are left out (their brief cannot be shown), and so is every run in
    `public_receipts` (`release.receipts.public_receipt_runs`): a review of a run whose
    receipt shows its setup and grades would not be blind. A second look is held from the
    receipts until its review is stored, so this leaves out only one found after its run's
    receipt was published (a score gap raised by a later review)."""
    rows = conn.execute(
        _QUEUE_SQL,
        [include_simulated, reviewer, reviewer, sorted(public_receipts), reviewer],
    ).fetchall()
    known = load_blind_names(conn) if rows else None
    items = []
    for run_id, suite, case_id, version, output, why, simulated, *identity in rows:
        try:
            case = bank.get(suite, case_id)
        except KeyError:
            continue
        if case.version == version:
            blind = blind_copy(output, *identity, known=known)
            items.append(QueueItem(run_id, case, blind, why, bool(simulated)))
    return items


def check_review(conn: duckdb.DuckDBPyConnection, review: Review, bank: TaskBank) -> bool:
    """Refuse a review of an unknown run, with a critical-failure id its case does not
    have, or by a person who already reviewed that run; return whether it is practice (the
    run is simulated).

    Raises:
        ReviewRefused: Naming the field.
    """
    found = conn.execute(
        "SELECT suite, case_id, simulated FROM model_runs WHERE run_id = ?", [review.run_id]
    ).fetchall()
    if not found:
        raise ReviewRefused("run_id", f"no run {review.run_id}")
    suite, case_id, practice = found[0]
    if review.critical_failure is not None:
        ids = {f.id for f in bank.get(suite, case_id).critical_failures}
        if review.critical_failure not in ids:
            allowed = ", ".join(sorted(ids)) or "none"
            raise ReviewRefused(
                "critical_failure", f"not a critical failure of {case_id} (it has: {allowed})"
            )
    done = conn.execute(
        "SELECT submitted_at FROM reviews WHERE review_id = ? UNION ALL "
        "SELECT submitted_at FROM practice_reviews WHERE review_id = ?",
        [review.review_id, review.review_id],
    ).fetchall()
    if done:
        raise ReviewRefused(
            "run_id",
            f"{review.reviewer} already reviewed {review.run_id} on {done[0][0]:%Y-%m-%d}; "
            "a submitted review is never changed",
        )
    return bool(practice)


def _row(review: Review, origin: str, simulated: bool, now: datetime) -> list[Any]:
    values = review.model_dump() | {
        "review_id": review.review_id,
        "simulated": simulated,
        "origin": origin,
        "submitted_at": now.replace(tzinfo=None),
    }
    return [values[c] for c in REVIEW_COLUMNS]


def _store(
    conn: duckdb.DuckDBPyConnection, review: Review, origin: str, practice: bool, now: datetime
) -> None:
    """A person's review into `reviews`, or into `practice_reviews` when it is practice."""
    row = _row(review, origin, False, now)
    if practice:
        kept = [v for c, v in zip(REVIEW_COLUMNS, row, strict=True) if c != "simulated"]
        insert_rows(conn, "practice_reviews", PRACTICE_COLUMNS, [kept])
    else:
        insert_rows(conn, "reviews", REVIEW_COLUMNS, [row])


def submit_review(
    conn: duckdb.DuckDBPyConnection,
    review: Review,
    bank: TaskBank,
    origin: str = "cli",
    now: datetime | None = None,
) -> str:
    """Store a person's review (checked first; a review of a simulated run is stored as
    practice, see the module docstring); return its id.

    Raises:
        ReviewRefused: See `check_review`.
    """
    with transaction(conn):
        practice = check_review(conn, review, bank)
        _store(conn, review, origin, practice, now or _now())
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


class ReadReview(NamedTuple):
    """One review file, read and parsed: its hash and the review or why not."""

    path: Path
    sha256: str
    result: Review | ReviewRefused


def _parsed(entry: InboxFile) -> Review | ReviewRefused:
    if entry.data is None:
        return ReviewRefused("file", entry.refusal or "not read")
    try:
        return parse_review_file(entry.data)
    except RECORD_ERRORS as error:  # the parse never raises on bad input; a value may still
        return ReviewRefused("file", f"cannot be read: {error_reason(error)}")


def read_review_files(inbox: Path) -> list[ReadReview]:
    """Every file of the inbox read (`core.inbox`) and parsed, with no warehouse open."""
    return [ReadReview(entry.path, entry.sha256, _parsed(entry)) for entry in read_inbox(inbox)]


def _file_row(
    entry: ReadReview, stamp: datetime, outcome: ReviewRefused | str, note: str | None = None
) -> list[Any]:
    """The `review_files` row of a file: rejected, or accepted as review id `outcome`."""
    name = storable(entry.path.name)
    if isinstance(outcome, ReviewRefused):
        reason = storable(str(outcome), MAX_STORED_REASON)
        return [entry.sha256, name, "rejected", storable(outcome.field), reason, None, stamp]
    return [entry.sha256, name, "accepted", None, note, outcome, stamp]


def store_review_files(
    conn: duckdb.DuckDBPyConnection,
    read: Sequence[ReadReview],
    bank: TaskBank,
    now: datetime,
) -> ReviewIntake:
    """Record the files read whose hash `review_files` does not hold yet, each review checked
    against the warehouse (`check_review`, which sees the ones stored before it), each file
    in a transaction of its own (`core.isolation.take_each`): a value that cannot be stored
    rejects its own file, with the field and the reason, and never the others."""
    stamp = now.replace(tzinfo=None)
    recorded = {s for (s,) in conn.execute("SELECT sha256 FROM review_files").fetchall()}
    new, seen_before = unseen(read, recorded)
    report = ReviewIntake([], [], seen_before)

    def reject(conn: duckdb.DuckDBPyConnection, entry: ReadReview, refused: ReviewRefused):
        row = _file_row(entry, stamp, refused)
        insert_rows(conn, "review_files", REVIEW_FILE_COLUMNS, [row])
        report.rejected.append((row[1], row[3], row[4]))

    def take(conn: duckdb.DuckDBPyConnection, entry: ReadReview) -> None:
        review = entry.result
        try:
            if isinstance(review, ReviewRefused):
                raise review
            practice = check_review(conn, review, bank)
        except ReviewRefused as refused:
            reject(conn, entry, refused)
            return
        _store(conn, review, f"inbox:{storable(entry.path.name)}", practice, now)
        note = "practice: a review of a simulated run, kept apart" if practice else None
        row = _file_row(entry, stamp, review.review_id, note)
        insert_rows(conn, "review_files", REVIEW_FILE_COLUMNS, [row])
        report.accepted.append(review.review_id)

    def refuse(conn: duckdb.DuckDBPyConnection, entry: ReadReview, error: BaseException):
        column = error_column(error, "reviews", REVIEW_COLUMNS) or error_column(
            error, "practice_reviews", PRACTICE_COLUMNS
        )
        reject(
            conn, entry, ReviewRefused(column or "file", f"cannot be stored: {error_reason(error)}")
        )

    take_each(conn, new, take, refuse)
    return report


def ingest_review_files(
    connect: Connect, inbox: Path, bank: TaskBank, now: datetime | None = None
) -> ReviewIntake:
    """Take every review file of the inbox not seen before; record each file's fate. Every
    file is read and parsed first; only then is the warehouse opened.

    Args:
        connect: Opens a warehouse connection (held only after every file is read).
        inbox: The folder of `*.json` review files.
        bank: The task bank (critical-failure ids are checked against it).
        now: The intake's time (default: now).
    """
    read = read_review_files(inbox)
    with connect() as conn:
        return store_review_files(conn, read, bank, now or _now())


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
