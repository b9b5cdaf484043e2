"""Reviewing as an operator practises it: a review of a simulated run is practice, stored
apart and never calibrated, so the release gate still passes and explains itself in plain
words; `bench review` holds the warehouse only while it stores a review."""

import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pexpect
import pytest
from stages import bench_env, simulated_runs

from bench_pipeline.assets.grading import calibration_gate
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.grading.browser_offline import RecordedInspector
from bench_pipeline.grading.cycle import grade_runs
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.review_model import Review
from bench_pipeline.grading.review_store import simulated_reviews, submit_review
from bench_pipeline.grading.rounds import review_round
from bench_pipeline.grading.sandbox import OfflineSandbox
from bench_pipeline.grading.store import runs_to_grade, store_cycle
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.integration
BENCH = str(Path(sys.executable).with_name("bench"))
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def graded_home(home: Path) -> Path:
    """Simulated PM runs, graded by the simulated judges and reviewed by the simulated
    reviewer, as the offline demo leaves them."""
    database = home / "warehouse" / "bench.duckdb"
    assert simulated_runs(database, suites=("pm",)) > 0
    companies = sorted({s.model.company for s in load_setups().setups})
    with connect(database) as conn:
        runs = runs_to_grade(conn, load_bank())
        result = asyncio.run(grade_runs(
            runs, SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL, companies, "c1", rates={},
            now=NOW, screenshots=home / "shots", inspector=RecordedInspector(home / "none"),
            sandbox=OfflineSandbox({})))  # fmt: skip
        store_cycle(conn, "c1", result, NOW)
        simulated_reviews(conn, NOW)
    return database


def gate(database: Path) -> dg.AssetCheckResult:
    """The blocking calibration check, after a review round, as `bench run` evaluates it."""
    warehouse = WarehouseResource(path=str(database))
    review_round(warehouse.connection, database.parent / "no-inbox", load_bank(), NOW)
    return calibration_gate(dg.build_asset_check_context(), warehouse)


def blind_scored_runs(database: Path) -> list[tuple[str, float]]:
    with duckdb.connect(str(database), read_only=True) as conn:
        return conn.execute(
            "SELECT run_id, any_value(score) FROM grades WHERE question = 'blind_score' "
            "AND score IS NOT NULL GROUP BY run_id ORDER BY run_id"
        ).fetchall()


def person_review(run_id: str, score: int) -> Review:
    return Review(run_id=run_id, reviewer="Ada Reviewer", score=score, understood="u",
                  missed="m", decisive_reason="d")  # fmt: skip


def test_practice_is_kept_apart_and_the_gate_says_why(tmp_path: Path) -> None:
    database = graded_home(tmp_path)
    run_id, score = blind_scored_runs(database)[0]
    with connect(database) as conn:
        submit_review(conn, person_review(run_id, int(score)), load_bank(), now=NOW)
        people = conn.execute("SELECT count(*) FROM reviews WHERE NOT simulated").fetchall()
        practice = conn.execute("SELECT run_id, reviewer FROM practice_reviews").fetchall()
    assert people == [(0,)] and practice == [(run_id, "Ada Reviewer")]
    verdict = gate(database)
    assert verdict.passed, verdict.description
    assert "every graded run is simulated" in verdict.description
    with duckdb.connect(str(database), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM calibration").fetchall() == [(0,)]

    # Real runs with too few people's reviews: the gate fails and says what it needs.
    real = blind_scored_runs(database)[1:4]
    with connect(database) as conn:
        conn.execute(
            "UPDATE model_runs SET simulated = false WHERE run_id IN (SELECT unnest(?))",
            [[r for r, _ in real]],
        )
        for other, judged in real:
            submit_review(conn, person_review(other, int(judged)), load_bank(), now=NOW)
    verdict = gate(database)
    assert not verdict.passed
    assert verdict.description.startswith(
        f"needs at least 10 judge–person pairs on real runs; has {len(real)}"
    )


def test_a_practice_review_stored_before_the_fix_is_moved_apart(tmp_path: Path) -> None:
    """A home where practice landed in `reviews` (and blocked every release) recovers at its
    next migration: the review moves to `practice_reviews`, unchanged."""
    database = graded_home(tmp_path)
    run_id, score = blind_scored_runs(database)[0]
    with connect(database) as conn:
        conn.execute("DROP TABLE practice_reviews")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0017_practice_reviews.sql'")
        conn.execute(
            "INSERT INTO reviews VALUES ('rv-old', ?, 'Ada Reviewer', ?, 'u', 'm', 'd', NULL, "
            "false, 'cli', ?)",
            [run_id, int(score), NOW.replace(tzinfo=None)],
        )
        migrate(conn, settings.migrations_dir())
        moved = conn.execute("SELECT review_id, run_id, score FROM practice_reviews").fetchall()
        left = conn.execute("SELECT count(*) FROM reviews WHERE NOT simulated").fetchall()
    assert moved == [("rv-old", run_id, int(score))] and left == [(0,)]
    assert gate(database).passed


def _writer_can_open(database: Path) -> bool:
    """A read-write open, as `bench run`, `bench status` and the sensors make."""
    try:
        duckdb.connect(str(database)).close()
    except duckdb.IOException:
        return False
    return True


def test_bench_review_leaves_the_warehouse_free_while_the_reviewer_thinks(
    tmp_path: Path,
) -> None:
    database = graded_home(tmp_path)
    child = pexpect.spawn(
        BENCH,
        ["review", "--reviewer", "Ada Reviewer", "--include-simulated"],
        env=bench_env(tmp_path),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    child.expect("outputs wait for a blind review")
    child.expect("Score 1-5")
    assert _writer_can_open(database), "bench review holds the warehouse while reading"
    assert "Practice: a simulated output" in child.before
    child.sendline("4")
    child.expect("What did it understand")
    child.sendline("The launch slipped.\n.")
    child.expect("What did it miss")
    child.sendline("The workaround.\n.")
    child.expect("decisive reason")
    child.sendline("No workaround.\n.")
    if child.expect(["Critical failure committed", "Submit\\?"]) == 0:
        child.sendline("")
        child.expect("Submit\\?")
    assert _writer_can_open(database), "bench review holds the warehouse before submitting"
    child.sendline("y")
    child.expect("Stored practice review (rv[0-9a-f]{16})")
    review_id = child.match.group(1)
    child.expect("Next output")
    assert _writer_can_open(database), "bench review holds the warehouse after storing"
    child.sendline("n")
    child.expect("Done: 1 reviews stored")
    child.expect(pexpect.EOF)
    with duckdb.connect(str(database), read_only=True) as conn:
        stored = conn.execute(
            "SELECT reviewer, score FROM practice_reviews WHERE review_id = ?", [review_id]
        ).fetchall()
    assert stored == [("Ada Reviewer", 4)]
