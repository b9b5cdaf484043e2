"""A person's decision on a Navigator judge split, recorded and never edited.

Two judges grade every criterion of a judge-checked Navigator input; when one says pass and
the other fail (`judge_flows.CriterionPair.disagree`), neither is averaged in. The run is
pending (it counts in no task, category, Index or cost) until a person decides that
criterion: their pass, partial or fail then stands for the pair, as a row of
`split_decisions` beside the grades, which stay as the judges gave them. A decision is one per
run, input and criterion; a second is refused, so a decided score cannot drift.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import duckdb

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.grading.outcomes import OUTCOME_CREDIT

DECISION_COLUMNS = (
    "decision_id", "run_id", "input_id", "criterion", "outcome", "decided_by", "reason",
    "judges", "decided_at",
)  # fmt: skip
SPLIT = frozenset({"pass", "fail"})
"""The two judges' outcomes that make a split a person must decide."""

Decisions = dict[tuple[str, str], str]
"""(input id, criterion) → the person's outcome, for one run."""


def is_split(outcomes: Iterable[str]) -> bool:
    """True when the judges' outcomes on one criterion are exactly pass against fail."""
    return set(outcomes) == SPLIT


def decision_id(run_id: str, input_id: str, criterion: str) -> str:
    """`sd` + 16 hex digits over run, input and criterion: one decision per split."""
    key = "\0".join((run_id, input_id, criterion)).encode()
    return "sd" + hashlib.sha256(key).hexdigest()[:16]


@dataclass(frozen=True)
class OpenSplit:
    """A criterion the two judges split on that no person has decided yet."""

    run_id: str
    setup: str
    case_id: str
    input_id: str
    criterion: str
    judges: dict[str, str]
    """Judge api id → its outcome."""
    answer: str = ""
    """The run's output, the answer the judges split on."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Judge api id → the reason it gave (absent when it gave none)."""


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def decisions(
    conn: duckdb.DuckDBPyConnection, as_of: datetime | None = None
) -> dict[str, Decisions]:
    """Every decision recorded by `as_of` (default: all), by run."""
    rows = conn.execute(
        "SELECT run_id, input_id, criterion, outcome FROM split_decisions "
        "WHERE decided_at <= coalesce(?, decided_at) ORDER BY decided_at, decision_id",
        [None if as_of is None else _naive(as_of)],
    ).fetchall()
    by_run: dict[str, Decisions] = defaultdict(dict)
    for run_id, input_id, criterion, outcome in rows:
        by_run[run_id].setdefault((input_id, criterion), outcome)
    return dict(by_run)


def _judge_grades(
    conn: duckdb.DuckDBPyConnection, run_id: str | None = None
) -> dict[tuple[str, str, str], dict[str, str]]:
    """(run, input, criterion) → {judge: outcome} over unheld Navigator judge grades."""
    rows = conn.execute(
        "SELECT run_id, input_id, question, grader, outcome FROM grades "
        "WHERE suite = 'navigator' AND grader_kind = 'judge' AND NOT sentinel AND NOT held "
        "AND run_id = coalesce(?, run_id) ORDER BY grade_id",
        [run_id],
    ).fetchall()
    found: dict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)
    for run, input_id, criterion, judge, outcome in rows:
        found[(run, input_id, criterion)][judge] = outcome
    return found


def open_splits(conn: duckdb.DuckDBPyConnection) -> list[OpenSplit]:
    """Every judge split no person has decided, oldest run first."""
    decided = decisions(conn)
    labels = dict(conn.execute(
        "SELECT r.run_id, s.label || '|' || r.case_id FROM model_runs r "
        "JOIN setups s USING (setup_id)"
    ).fetchall())  # fmt: skip
    splits = []
    for (run_id, input_id, criterion), judges in sorted(_judge_grades(conn).items()):
        if is_split(judges.values()) and (input_id, criterion) not in decided.get(run_id, {}):
            setup, _, case_id = labels.get(run_id, "|").partition("|")
            splits.append(OpenSplit(run_id, setup, case_id, input_id, criterion, judges))
    return _with_evidence(conn, splits)


def _with_evidence(conn: duckdb.DuckDBPyConnection, splits: list[OpenSplit]) -> list[OpenSplit]:
    """The splits with the run's answer and each judge's reason, for a person to decide from
    (the grades read as `_judge_grades` reads them: the last of each judge counts)."""
    if not splits:
        return splits
    runs = sorted({s.run_id for s in splits})
    answers = dict(
        conn.execute("SELECT run_id, output FROM model_runs WHERE list_contains(?, run_id)",
                     [runs]).fetchall()
    )  # fmt: skip
    reasons: dict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)
    for run, input_id, criterion, judge, reason in conn.execute(
        "SELECT run_id, input_id, question, grader, reason FROM grades "
        "WHERE suite = 'navigator' AND grader_kind = 'judge' AND NOT sentinel AND NOT held "
        "AND list_contains(?, run_id) ORDER BY grade_id",
        [runs],
    ).fetchall():
        if reason and reason.strip():
            reasons[(run, input_id, criterion)][judge] = reason.strip()
        else:
            reasons[(run, input_id, criterion)].pop(judge, None)
    return [
        replace(
            split,
            answer=answers.get(split.run_id) or "",
            reasons=reasons.get((split.run_id, split.input_id, split.criterion), {}),
        )
        for split in splits
    ]


def decide_split(
    conn: duckdb.DuckDBPyConnection,
    run_id: str,
    criterion: str,
    outcome: str,
    decided_by: str,
    reason: str,
    *,
    input_id: str | None = None,
    now: datetime | None = None,
) -> str:
    """Record a person's decision on one judge split; return its id. Nothing is edited: the
    judges' grades stay, and the next scoring counts the run with this outcome.

    Args:
        conn: The warehouse.
        run_id: The Navigator run.
        criterion: The criterion the judges split on.
        outcome: `pass`, `partial` or `fail`.
        decided_by: Who decides (recorded).
        reason: Why (recorded).
        input_id: The input, needed only when the run's splits are on several inputs.
        now: The decision's time (default: now).

    Raises:
        ValueError: Naming the field: an unknown outcome, an empty name or reason, a run or
            criterion with no split, an ambiguous input, or a split already decided.
    """
    if outcome not in OUTCOME_CREDIT:
        raise ValueError(f"outcome: {outcome!r} is not one of {', '.join(OUTCOME_CREDIT)}")
    if not decided_by.strip() or not reason.strip():
        raise ValueError("decided_by and reason: a name and a reason are both required")
    if not conn.execute("SELECT 1 FROM model_runs WHERE run_id = ? AND suite = 'navigator'",
                        [run_id]).fetchall():  # fmt: skip
        raise ValueError(f"run_id: no Navigator run {run_id}")
    splits = {
        (input_, question): judges
        for (_run, input_, question), judges in _judge_grades(conn, run_id).items()
        if question == criterion
        and (input_id is None or input_ == input_id)
        and is_split(judges.values())
    }
    if not splits:
        raise ValueError(
            f"criterion: the judges did not split pass/fail on {criterion!r} of {run_id}"
        )
    if len(splits) > 1:
        inputs = ", ".join(sorted(i for i, _ in splits))
        raise ValueError(f"input_id: {criterion!r} split on several inputs ({inputs}); name one")
    (((input_, _), judges),) = splits.items()
    key = decision_id(run_id, input_, criterion)
    with transaction(conn):
        done = conn.execute(
            "SELECT decided_by, decided_at FROM split_decisions WHERE decision_id = ?", [key]
        ).fetchall()
        if done:
            by, at = done[0]
            raise ValueError(
                f"{run_id}: {criterion} was decided by {by} on {at:%Y-%m-%d}; a decision is "
                "never changed"
            )
        stamp = _naive(now or datetime.now(UTC))
        row = [key, run_id, input_, criterion, outcome, decided_by.strip(), reason.strip(),
               json.dumps(judges, sort_keys=True), stamp]  # fmt: skip
        insert_rows(conn, "split_decisions", DECISION_COLUMNS, [row])
    return key
