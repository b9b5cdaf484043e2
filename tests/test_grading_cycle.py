"""A grading cycle over stored runs in a real warehouse: every run graded by the graders its
task names, grades only ever added, a lenient judge caught by sentinels with its grades held,
and the calibration gate deciding from people's reviews."""

import asyncio
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from stages import simulated_runs

from bench_pipeline.core.warehouse import connect
from bench_pipeline.grading.browser_offline import RecordedInspector
from bench_pipeline.grading.cycle import grade_runs
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.review_model import Review
from bench_pipeline.grading.review_store import simulated_reviews, submit_review
from bench_pipeline.grading.sandbox import OfflineSandbox
from bench_pipeline.grading.store import (
    GradingConflict,
    calibration_pairs,
    runs_to_grade,
    store_calibration,
    store_cycle,
)
from bench_pipeline.providers import ChatRequest
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.store

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


class PassesEverything(SimulatedJudgeProvider):
    """A lenient judge: every decision is a confident pass."""

    async def complete(self, request: ChatRequest):
        response = await super().complete(request)
        try:
            answer = json.loads(response.content)
        except ValueError:
            return response
        if "outcome" in answer:
            answer |= {"outcome": "pass", "confidence": 0.9,
                       "probabilities": {"pass": 0.9, "partial": 0.05, "fail": 0.05}}  # fmt: skip
        return response.model_copy(update={"content": json.dumps(answer)})


def _grade(runs, provider, cycle_id: str, tmp_path: Path, inspector=None):
    companies = sorted({s.model.company for s in load_setups().setups})
    inspector = inspector or RecordedInspector(tmp_path / "no-recordings")
    return asyncio.run(
        grade_runs(
            runs, provider, SIMULATED_JUDGE_POOL, companies, cycle_id,
            rates={}, now=NOW, screenshots=tmp_path / "shots", inspector=inspector,
            sandbox=OfflineSandbox({}),
        )
    )  # fmt: skip


def _cycle(conn, provider, cycle_id: str, tmp_path: Path):
    runs = runs_to_grade(conn, load_bank())
    result = _grade(runs, provider, cycle_id, tmp_path)
    store_cycle(conn, cycle_id, result, NOW)
    return runs, result


@pytest.fixture(scope="module")
def _stored_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs") / "bench.duckdb"
    simulated_runs(path)
    return path


@pytest.fixture
def database(_stored_runs: Path, tmp_path: Path) -> Path:
    """A private copy of a warehouse holding every setup's simulated runs."""
    path = tmp_path / "bench.duckdb"
    shutil.copy(_stored_runs, path)
    return path


def test_every_run_is_graded_once_by_the_graders_its_task_names(database, tmp_path):
    with connect(database) as conn:
        runs, result = _cycle(conn, SimulatedJudgeProvider(), "c-one", tmp_path)
        total = conn.execute("SELECT count(*) FROM model_runs").fetchall()[0][0]
        assert len(runs) == total
        kinds = dict(conn.execute(
            "SELECT r.suite || ':' || g.grader_kind, count(DISTINCT r.run_id) FROM model_runs r "
            "JOIN grades g USING (run_id) GROUP BY 1").fetchall())  # fmt: skip
        ungraded = conn.execute(
            "SELECT count(*) FROM model_runs r WHERE NOT EXISTS "
            "(SELECT 1 FROM grades g WHERE g.run_id = r.run_id)"
        ).fetchall()[0][0]
        navigator_judged = conn.execute(
            "SELECT min(n), max(n) FROM (SELECT run_id, question, count(DISTINCT grader) AS n "
            "FROM grades WHERE suite = 'navigator' AND grader_kind = 'judge' AND NOT sentinel "
            "GROUP BY ALL)"
        ).fetchall()[0]
        before = conn.execute("SELECT count(*), sum(hash(grade_id)) FROM grades").fetchall()
        # A second cycle finds nothing to grade and changes nothing.
        assert runs_to_grade(conn, load_bank()) == []
        after = conn.execute("SELECT count(*), sum(hash(grade_id)) FROM grades").fetchall()
    assert ungraded == 0
    assert set(kinds) == {"navigator:script", "navigator:judge", "pm:judge", "pm:browser"}
    assert navigator_judged == (2, 2)  # two judges on every judged Navigator criterion
    assert before == after
    assert result.flags == []  # the offline judge grades every sentinel as expected


def test_two_cycles_over_the_same_runs_store_one_and_refuse_the_other(database, tmp_path):
    """Cycles run without holding the warehouse: the one that stores second is refused whole."""
    with connect(database) as conn:
        runs = runs_to_grade(conn, load_bank())
    provider = SimulatedJudgeProvider()
    results = [_grade(runs, provider, cycle_id, tmp_path) for cycle_id in ("c-first", "c-second")]
    with connect(database) as conn:
        store_cycle(conn, "c-first", results[0], NOW)
        before = conn.execute("SELECT count(*), sum(hash(grade_id)) FROM grades").fetchall()
        with pytest.raises(GradingConflict, match=f"cycle c-second not stored: {len(runs)} of"):
            store_cycle(conn, "c-second", results[1], NOW)
        after = conn.execute("SELECT count(*), sum(hash(grade_id)) FROM grades").fetchall()
        cycles = conn.execute("SELECT cycle_id FROM grading_cycles").fetchall()
    assert before == after and before[0][0] > 0
    assert cycles == [("c-first",)]


def test_a_lenient_judge_is_caught_by_sentinels_and_its_grades_held(database, tmp_path):
    with connect(database) as conn:
        _runs, result = _cycle(conn, PassesEverything(), "c-lenient", tmp_path)
        held = conn.execute(
            "SELECT grader, bool_and(held), count(*) FROM grades WHERE grader_kind = 'judge' "
            "GROUP BY 1"
        ).fetchall()
        flags = conn.execute("SELECT DISTINCT judge, expected, got FROM sentinel_flags").fetchall()
    assert result.flags
    assert {judge for judge, _, _ in flags} == {judge for judge, _, _ in held}
    assert all(all_held for _, all_held, _ in held)
    assert {(expected, got) for _, expected, got in flags} == {("fail", "pass")}


def test_the_calibration_gate_uses_people_only(database, tmp_path):
    bank = load_bank()
    with connect(database) as conn:
        _cycle(conn, SimulatedJudgeProvider(), "c-cal", tmp_path)
        simulated_reviews(conn, NOW)
        assert calibration_pairs(conn, bank) == []  # the simulated reviewer calibrates nothing
        blind = conn.execute(
            "SELECT run_id, score FROM grades WHERE question = 'blind_score' AND score IS NOT NULL "
            "ORDER BY run_id LIMIT 12"
        ).fetchall()
        # As if real runs (a review of a simulated run is practice, never calibrated).
        conn.execute(
            "UPDATE model_runs SET simulated = false WHERE run_id IN (SELECT unnest(?))",
            [[run_id for run_id, _ in blind]],
        )
        # A person agrees with the judge on 10 of 12 runs: 10/12 = 0.8333 < 0.85.
        for number, (run_id, score) in enumerate(blind):
            mine = int(score) if number < 10 else (1 if score >= 4 else 5)
            review = Review(run_id=run_id, reviewer="Grace", score=mine, understood="u",
                            missed="m", decisive_reason="d")  # fmt: skip
            submit_review(conn, review, bank, now=NOW)
        pairs = calibration_pairs(conn, bank)
        agreement = store_calibration(conn, pairs, NOW)
        scopes = dict(conn.execute("SELECT scope, pairs FROM calibration").fetchall())
    assert len(pairs) == 12
    assert agreement == pytest.approx(10 / 12)
    assert scopes["overall"] == 12
    assert any(scope.startswith("family:simulated") for scope in scopes)


def test_the_gate_fails_when_real_runs_have_no_person_review(database, tmp_path):
    import dagster as dg

    from bench_pipeline.assets.grading import calibration_gate
    from bench_pipeline.resources.warehouse import WarehouseResource

    with connect(database) as conn:
        conn.execute("UPDATE model_runs SET simulated = false")  # as if real runs
        _cycle(conn, SimulatedJudgeProvider(), "c-gate", tmp_path)
        store_calibration(conn, calibration_pairs(conn, load_bank()), NOW)
    warehouse = WarehouseResource(path=str(database))
    result = calibration_gate(dg.build_asset_check_context(), warehouse)
    assert not result.passed  # real runs graded, no person has reviewed: blocked
    with duckdb.connect(str(database), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM calibration").fetchall()[0][0] == 0
