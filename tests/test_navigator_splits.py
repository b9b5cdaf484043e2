"""Navigator judge splits: a person's decision enters the run's score as a recorded row; until
then the run is pending, counts nowhere, and the board says how many wait."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from bench_pipeline.cli.status import activity_lines
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.grading.split_decisions import decide_split, open_splits
from bench_pipeline.scores.load import navigator_frames
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store

T0 = datetime(2026, 11, 1, 12, tzinfo=UTC)
BANK = load_bank()


def _judged_case():
    """The first Navigator case whose first input is judge-checked, with that input's rubric."""
    for case in BANK.suite("navigator"):
        first = case.inputs[0]
        if first.check.kind == "judge":
            return case, first.id, [c.id for c in first.check.rubric]
    raise AssertionError("the demo bank has no judge-checked Navigator input")


CASE, INPUT, CRITERIA = _judged_case()
JUDGES = ("judge/a", "judge/b")


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(connection, settings.migrations_dir())
    yield connection
    connection.close()


def _setup(conn: duckdb.DuckDBPyConnection, label: str) -> None:
    insert_rows(
        conn, "setups",
        ("setup_id", "label", "model_record", "api_id", "company", "context_limit", "local",
         "harness", "environment", "executable", "current", "first_loaded"),
        [[label, label, label, f"lab/{label}", "Lab", 1000, False, "api-bare", "none", True,
          True, T0.replace(tzinfo=None)]],
    )  # fmt: skip


def _run(conn: duckdb.DuckDBPyConnection, run_id: str, label: str, outcomes: dict) -> None:
    """A Navigator run on CASE's judged input and both judges' grade of every criterion."""
    insert_rows(
        conn, "model_runs",
        ("run_id", "partition_key", "setup_id", "suite", "case_id", "case_version", "input_id",
         "repeat", "run_date", "request_hash", "output", "finish_reason", "cost_usd",
         "cost_warnings", "wall_seconds", "retries", "provider", "simulated",
         "evidence_sha256", "recorded_at"),
        [[run_id, "p", label, "navigator", CASE.id, CASE.version, INPUT, 1, T0.date(),
          "h" + run_id, "an answer", "stop", Decimal("0.01"), "", 1.0, 0, "test", False, "e",
          T0.replace(tzinfo=None)]],
    )  # fmt: skip
    rows = []
    for criterion in CRITERIA:
        for judge, outcome in zip(JUDGES, outcomes.get(criterion, ("pass", "pass")), strict=True):
            rows.append([f"g-{run_id}-{criterion}-{judge}", "c1", run_id, False, "navigator",
                         CASE.id, INPUT, criterion, 2, "judge", judge, outcome, False, False,
                         T0.replace(tzinfo=None)])  # fmt: skip
    insert_rows(
        conn, "grades",
        ("grade_id", "cycle_id", "run_id", "sentinel", "suite", "case_id", "input_id",
         "question", "tier", "grader_kind", "grader", "outcome", "held", "simulated",
         "graded_at"),
        rows,
    )  # fmt: skip


def _board(conn, as_of=None):
    frame = navigator_frames(conn, BANK, as_of or T0 + timedelta(days=30))["navigator_models"]
    return {row["model"]: row for row in frame.to_dicts()}


def test_a_split_waits_for_a_person_and_counts_nowhere(conn) -> None:
    _setup(conn, "m1")
    _run(conn, "agree", "m1", {})
    _run(conn, "split", "m1", {CRITERIA[0]: ("pass", "fail")})
    row = _board(conn)["m1"]
    assert row["runs"] == 1  # only the run both judges agreed on
    assert row["pending_runs"] == 1
    assert [s.run_id for s in open_splits(conn)] == ["split"]
    assert open_splits(conn)[0].judges == {"judge/a": "pass", "judge/b": "fail"}
    status = "\n".join(activity_lines(conn))
    assert "Judge splits waiting for a person: 1 in 1 runs" in status and "bench decide" in status


def test_a_decision_enters_the_score_as_a_row_never_an_edit(conn) -> None:
    _setup(conn, "m1")
    _run(conn, "split", "m1", {CRITERIA[0]: ("pass", "fail")})
    grades_before = conn.execute("SELECT * FROM grades ORDER BY grade_id").fetchall()
    decided_at = T0 + timedelta(days=2)
    decide_split(conn, "split", CRITERIA[0], "fail", "Ada", "misses the flood-zone clause",
                 now=decided_at)  # fmt: skip
    assert conn.execute("SELECT * FROM grades ORDER BY grade_id").fetchall() == grades_before
    stored = conn.execute(
        "SELECT run_id, input_id, criterion, outcome, decided_by, judges FROM split_decisions"
    ).fetchall()
    assert stored[0][:5] == ("split", INPUT, CRITERIA[0], "fail", "Ada")
    assert json.loads(stored[0][5]) == {"judge/a": "pass", "judge/b": "fail"}
    row = _board(conn)["m1"]
    assert (row["runs"], row["pending_runs"]) == (1, 0)
    # The person's fail replaces the split pair; every other criterion both judges passed.
    expected = 100 * (len(CRITERIA) - 1) / len(CRITERIA)
    assert row[CASE.category] == pytest.approx(expected)
    assert open_splits(conn) == []
    assert "Judge splits waiting for a person: 0 in 0 runs" in "\n".join(activity_lines(conn))
    # As of a day before the decision the run was still pending.
    before = _board(conn, decided_at - timedelta(days=1))["m1"]
    # Its only run was pending: listed with the count, nothing of it scored.
    assert (before["runs"], before["tasks"], before["pending_runs"]) == (0, 0, 1)
    assert before["index"] is None and before["rank_best"] is None


def test_a_pass_decision_gives_full_credit_where_the_split_averaged_nothing(conn) -> None:
    _setup(conn, "m1")
    _run(conn, "split", "m1", {CRITERIA[0]: ("fail", "pass")})
    decide_split(conn, "split", CRITERIA[0], "pass", "Ada", "keeps every condition", now=T0)
    assert _board(conn)["m1"][CASE.category] == pytest.approx(100.0)


def test_a_second_decision_and_bad_decisions_are_refused_naming_the_field(conn) -> None:
    _setup(conn, "m1")
    _run(conn, "split", "m1", {CRITERIA[0]: ("pass", "fail")})
    with pytest.raises(ValueError, match=r"^outcome:"):
        decide_split(conn, "split", CRITERIA[0], "maybe", "Ada", "r")
    with pytest.raises(ValueError, match=r"decided_by and reason"):
        decide_split(conn, "split", CRITERIA[0], "pass", " ", "r")
    with pytest.raises(ValueError, match=r"^run_id: no Navigator run nope"):
        decide_split(conn, "nope", CRITERIA[0], "pass", "Ada", "r")
    if len(CRITERIA) > 1:
        with pytest.raises(ValueError, match=r"^criterion: the judges did not split"):
            decide_split(conn, "split", CRITERIA[1], "pass", "Ada", "r")
    decide_split(conn, "split", CRITERIA[0], "pass", "Ada", "first call")
    with pytest.raises(ValueError, match=r"decided by Ada .* never changed"):
        decide_split(conn, "split", CRITERIA[0], "fail", "Bob", "second opinion")
    assert conn.execute("SELECT count(*), min(outcome) FROM split_decisions").fetchall() == [
        (1, "pass")
    ]


def test_bench_decide_records_a_decision_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench_pipeline.cli.navigator import decide, splits
    from bench_pipeline.core.warehouse import connect

    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        _setup(conn, "m1")
        _run(conn, "split", "m1", {CRITERIA[0]: ("pass", "fail")})
    listing = io.StringIO()
    assert splits(listing) == 0
    assert "split" in listing.getvalue() and "judge/a says pass" in listing.getvalue()
    out = io.StringIO()
    assert decide("split", CRITERIA[0], "partial", "Ada", "half right", None, out) == 0
    assert "recorded" in out.getvalue()
    again = io.StringIO()
    assert decide("split", CRITERIA[0], "pass", "Ada", "again", None, again) == 2
    assert "never changed" in again.getvalue()
    with connect(settings.warehouse_path()) as conn:
        assert _board(conn, datetime.now(UTC))["m1"]["pending_runs"] == 0


def test_bench_splits_shows_the_answer_and_each_judges_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person decides from the listing alone: the criterion's question, the answer the
    judges split on (whole, wrapped at words) and what each judge said."""
    from bench_pipeline.cli.navigator import splits
    from bench_pipeline.core.warehouse import connect

    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    answer = "The launch moves to March. " * 12 + "Customers A, B and C get the workaround."
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        _setup(conn, "m1")
        _run(conn, "split", "m1", {CRITERIA[0]: ("pass", "fail")})
        conn.execute("UPDATE model_runs SET output = ? WHERE run_id = 'split'", [answer])
        for judge, reason in (("judge/a", "States the new date plainly."), ("judge/b", "")):
            conn.execute(
                "UPDATE grades SET reason = ? WHERE grader = ? AND question = ?",
                [reason, judge, CRITERIA[0]],
            )
    listing = io.StringIO()
    assert splits(listing, width=70) == 0
    text = listing.getvalue()
    question = next(c for c in CASE.inputs[0].check.rubric if c.id == CRITERIA[0]).question
    assert " ".join(question.split()) in " ".join(text.split())
    assert " ".join(answer.split()) in " ".join(text.split())  # whole, every word intact
    assert "judge/a: States the new date plainly." in text
    assert "judge/b: (gave no reason)" in text
    assert all(len(line) <= 70 or len(line.split()) == 1 for line in text.splitlines())
    assert text.index("answer:") < text.index("bench decide split")
