"""PM suite scores: expectations worked out by hand in the comments."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.grading.outcomes import dm_score
from bench_pipeline.scores.pm import (
    DONT_SWITCH,
    NO_CLEAR_DIFFERENCE,
    SWITCH,
    PmRun,
    PmSetupScore,
    drop_ready,
    drop_verdict,
    leader_excluding,
    pm_tables,
    score_run,
)
from bench_pipeline.taskbank import CRITICAL_FAILURES_CRITERION, STANDARD_CRITERIA

CRITERIA = [c.id for c in STANDARD_CRITERIA]  # seven, the critical-failures one last
ALL_PASS = dict.fromkeys(CRITERIA, "pass")
T_975_4 = 2.7764451051977987  # Student t, 97.5th percentile, 4 degrees of freedom


def run(
    run_id: str,
    *,
    setup: str = "s1",
    task: str = "t1",
    case: str | None = None,
    category: str = "discovery",
    core: bool = True,
    prototype: bool = False,
    repeat: int = 0,
    criteria: dict[str, str] | None = None,
    judge: int | None = 3,
    review: int | None = 3,
    marked: bool = False,
    status: str = "complete",
) -> PmRun:
    return PmRun(
        run_id=run_id,
        setup_id=setup,
        task=task,
        case_id=case or task,
        category=category,
        core=core,
        prototype=prototype,
        repeat=repeat,
        criteria=ALL_PASS if criteria is None else criteria,  # type: ignore[arg-type]
        judge=None if prototype else judge,
        review=review,
        reviewer_critical_failure=marked,
        status=status,  # type: ignore[arg-type]
    )


def graded(run_id: str, grade: int, **kwargs: object) -> PmRun:
    """A written run with DM 100 and judge = review = `grade`.

    PM = 0.30 × 100 + 0.70 × (grade − 1) × 25: grade 1 → 30, 2 → 47.5, 3 → 65, 4 → 82.5,
    5 → 100.
    """
    return run(run_id, judge=grade, review=grade, **kwargs)  # type: ignore[arg-type]


# Run scores ---------------------------------------------------------------------------------


def test_decision_model_score_counts_partial_as_half() -> None:
    # 5 pass + 1 partial + 1 fail: (5 + 0.5 + 0) / 7 × 100 = 78.5714…
    outcomes = dict(zip(CRITERIA, ["pass"] * 5 + ["partial", "fail"], strict=True))
    assert dm_score(outcomes) == pytest.approx(550 / 7)  # type: ignore[arg-type]


def test_written_run_weights_30_35_35() -> None:
    # DM 100, judge 4 → 75, review 3 → 50: 0.30×100 + 0.35×75 + 0.35×50 = 30 + 26.25 + 17.5
    row = score_run(run("r", judge=4, review=3))
    assert (row.dm_score, row.judge_score, row.review_score) == (100.0, 75.0, 50.0)
    assert row.pm_score == pytest.approx(73.75)
    assert not row.critical_failure and not row.capped


def test_prototype_splits_the_judge_share_30_65_and_35_65() -> None:
    # DM: 5 pass + 2 fail = 5/7 → 71.428571…; review 5 → 100.
    # PM = 30/65 × 500/7 + 35/65 × 100 = (15000/7 + 3500) / 65 = 39500 / 455 = 86.813186…
    outcomes = {**ALL_PASS, CRITERIA[0]: "fail", CRITERIA[1]: "fail"}
    row = score_run(run("p", prototype=True, criteria=outcomes, review=5))
    assert row.judge_score is None
    assert row.dm_score == pytest.approx(500 / 7)
    assert row.pm_score == pytest.approx(39500 / 455)
    # about 46 % and 54 %, as the seed words it
    assert 30 / 65 == pytest.approx(0.4615, abs=1e-4)


def test_decision_model_critical_failure_caps_at_40() -> None:
    # Six passes and a fail on the critical-failures criterion: DM = 6/7 × 100 = 85.714…;
    # judge 5 and review 5 → 100 each: raw = 0.30 × 600/7 + 70 = 95.714… → capped to 40.
    outcomes = {**ALL_PASS, CRITICAL_FAILURES_CRITERION: "fail"}
    row = score_run(run("c", criteria=outcomes, judge=5, review=5))
    assert row.dm_score == pytest.approx(600 / 7)
    assert row.pm_score == 40.0
    assert row.critical_failure and row.capped


def test_reviewer_marked_critical_failure_caps_at_40() -> None:
    row = score_run(graded("m", 5, marked=True))  # raw 100 → 40
    assert (row.pm_score, row.capped) == (40.0, True)


def test_cap_leaves_a_lower_score_alone_and_partial_does_not_cap() -> None:
    # Every criterion fails, judge 1, review 1: 0 + 0 + 0 = 0, under the cap: unchanged.
    low = score_run(run("l", criteria=dict.fromkeys(CRITERIA, "fail"), judge=1, review=1))
    assert (low.pm_score, low.critical_failure, low.capped) == (0.0, True, False)
    # A partial on the critical-failures criterion is not a critical failure:
    # DM = 6.5/7 × 100 = 92.857…; judge = review = 5: 0.30 × 650/7 + 70 = 97.857…
    outcomes = {**ALL_PASS, CRITICAL_FAILURES_CRITERION: "partial"}
    row = score_run(run("p", criteria=outcomes, judge=5, review=5))
    assert row.pm_score == pytest.approx(0.3 * 650 / 7 + 70)
    assert not row.critical_failure


@settings(max_examples=200, deadline=None)
@given(
    outcomes=st.lists(st.sampled_from(["pass", "partial", "fail"]), min_size=7, max_size=7),
    judge=st.integers(1, 5),
    review=st.integers(1, 5),
    prototype=st.booleans(),
    marked=st.booleans(),
)
def test_pm_score_stays_in_0_100_and_respects_the_cap(
    outcomes: list[str], judge: int, review: int, prototype: bool, marked: bool
) -> None:
    criteria = dict(zip(CRITERIA, outcomes, strict=True))
    row = score_run(
        run("h", criteria=criteria, judge=judge, review=review, prototype=prototype, marked=marked)
    )
    assert row.pm_score is not None
    assert 0.0 <= row.pm_score <= 100.0
    if row.critical_failure:
        assert row.pm_score <= 40.0


def test_run_records_refuse_incomplete_grades() -> None:
    with pytest.raises(ValueError, match="PM review"):
        run("x", review=None)
    with pytest.raises(ValueError, match="judge"):
        run("x", judge=None)
    with pytest.raises(ValueError, match="1 to 5"):
        run("x", review=6)
    with pytest.raises(ValueError, match="prototype"):
        PmRun("x", "s", "t", "t", "c", True, True, 0, ALL_PASS, 3, 3)  # type: ignore[arg-type]
    # Pending runs may lack grades.
    assert run("x", review=None, judge=None, status="pending").status == "pending"


# Tables --------------------------------------------------------------------------------------


def test_task_score_is_the_mean_of_runs_and_overall_the_mean_of_tasks() -> None:
    # Task a: three repeats of one noisy case at 30, 65, 100 → task score 65,
    # repeat spread = sqrt(((−35)² + 0² + 35²) / 2) = 35.
    # Task b: one run at 100. Overall = (65 + 100) / 2 = 82.5, not the run mean 73.75.
    runs = [
        graded("a0", 1, task="a", repeat=0),
        graded("a1", 3, task="a", repeat=1),
        graded("a2", 5, task="a", repeat=2),
        graded("b0", 5, task="b", category="strategy"),
    ]
    tables = pm_tables(runs)
    tasks = {r["task"]: r for r in tables.pm_tasks.to_dicts()}
    assert tasks["a"]["score"] == pytest.approx(65.0)
    assert tasks["a"]["repeat_spread"] == pytest.approx(35.0)
    assert tasks["b"]["repeat_spread"] is None
    setup = tables.pm_setups.row(0, named=True)
    assert setup["overall"] == pytest.approx(82.5)
    categories = {r["category"]: r["score"] for r in tables.pm_categories.to_dicts()}
    assert categories == pytest.approx({"discovery": 65.0, "strategy": 100.0})


def test_repeat_spread_pools_two_repeated_cases() -> None:
    # Case x: 30, 65 → s² = 35²/2 = 612.5 (1 df); case y: 47.5, 82.5, 100 → mean 76.666…,
    # deviations −29.1667, 5.8333, 23.3333 → Σ = 850.694 + 34.028 + 544.444 = 1429.1667,
    # s² = 714.583 (2 df). Pooled = sqrt((612.5 + 1429.1667) / 3) = sqrt(680.5556) = 26.0875.
    runs = [
        graded("x0", 1, case="x", repeat=0),
        graded("x1", 3, case="x", repeat=1),
        graded("y0", 2, case="y", repeat=0),
        graded("y1", 4, case="y", repeat=1),
        graded("y2", 5, case="y", repeat=2),
    ]
    spread = pm_tables(runs).pm_tasks["repeat_spread"][0]
    assert spread == pytest.approx(math.sqrt((612.5 + 1429.1666666666667) / 3))


def test_margin95_only_from_five_runs() -> None:
    # Five runs at 30, 47.5, 65, 82.5, 100: mean 65, Σ dev² = 2 × (35² + 17.5²) = 3062.5,
    # s = sqrt(3062.5 / 4) = 27.6699; margin = t(0.975, 4) × s / sqrt(5) = 34.357.
    five = [graded(f"r{g}", g, task=f"t{g}") for g in range(1, 6)]
    margin = pm_tables(five).pm_setups["margin95"][0]
    assert margin == pytest.approx(T_975_4 * math.sqrt(3062.5 / 4) / math.sqrt(5))
    assert margin == pytest.approx(34.357, abs=1e-3)
    # Four runs: no margin.
    assert pm_tables(five[:4]).pm_setups["margin95"][0] is None


def test_provisional_when_a_core_task_is_missing() -> None:
    runs = [
        graded("s1a", 3, setup="s1", task="a"),
        graded("s1b", 3, setup="s1", task="b"),
        graded("s1x", 3, setup="s1", task="extra", core=False),
        graded("s2a", 5, setup="s2", task="a"),  # s2 never ran core task b
        graded("s3a", 4, setup="s3", task="a"),
        graded("s3b", 4, setup="s3", task="b"),  # s3 skipped the non-core task: still ranked
    ]
    setups = {r["setup_id"]: r for r in pm_tables(runs).pm_setups.to_dicts()}
    assert (setups["s2"]["status"], setups["s2"]["rank"]) == ("provisional", None)
    assert setups["s2"]["missing_core_tasks"] == "b"
    # s3: 82.5 beats s1: 65 although s2's 100 is the highest overall (provisional, unranked)
    assert (setups["s3"]["status"], setups["s3"]["rank"]) == ("ranked", 1)
    assert (setups["s1"]["status"], setups["s1"]["rank"]) == ("ranked", 2)
    # a core task only the bank knows about makes everyone provisional
    bank = pm_tables(runs, core_tasks={"a", "b", "c"}).pm_setups
    assert set(bank["status"]) == {"provisional"}


def test_equal_overalls_share_a_rank() -> None:
    runs = [graded("p", 4, setup="p"), graded("q", 4, setup="q"), graded("r", 2, setup="r")]
    ranks = dict(pm_tables(runs).pm_setups.select("setup_id", "rank").iter_rows())
    assert ranks == {"p": 1, "q": 1, "r": 3}


def test_pending_and_failed_runs_are_reported_but_never_published() -> None:
    runs = [
        graded("done", 5, task="a"),
        run("waiting", task="a", review=None, status="pending"),
        run("broken", task="b", status="failed"),
    ]
    tables = pm_tables(runs)
    rows = {r["run_id"]: r for r in tables.pm_runs.to_dicts()}
    assert rows["waiting"]["status"] == "pending" and not rows["waiting"]["published"]
    assert rows["waiting"]["pm_score"] is None
    assert rows["broken"]["status"] == "failed" and rows["broken"]["pm_score"] is None
    # task a counts only the complete run; task b has no published run: b is missing
    assert tables.pm_tasks.select("task", "runs", "score").rows() == [("a", 1, 100.0)]
    setup = tables.pm_setups.row(0, named=True)
    assert (setup["runs"], setup["status"], setup["missing_core_tasks"]) == (
        1,
        "provisional",
        "b",
    )


def test_held_setup_is_reported_but_not_published() -> None:
    runs = [graded("old", 3, setup="old"), graded("new", 5, setup="new")]
    tables = pm_tables(runs, held_setups={"new"})
    assert tables.pm_setups["setup_id"].to_list() == ["old"]
    new = tables.pm_runs.filter(run_id="new").row(0, named=True)
    assert (new["pm_score"], new["published"]) == (100.0, False)


def test_tables_have_the_public_columns() -> None:
    tables = pm_tables([graded("r", 3)])
    assert {"dm_score", "judge_score", "review_score", "pm_score", "capped", "status"} <= set(
        tables.pm_runs.columns
    )
    assert {"task", "score", "repeat_spread"} <= set(tables.pm_tasks.columns)
    assert {"overall", "margin95", "status", "rank"} <= set(tables.pm_setups.columns)
    with pytest.raises(ValueError, match="twice"):
        pm_tables([graded("r", 3), graded("r", 4)])


# Drops ---------------------------------------------------------------------------------------


def setup(
    setup_id: str, overall: float, margin: float | None, status: str = "ranked"
) -> PmSetupScore:
    return PmSetupScore(
        setup_id=setup_id,
        overall=overall,
        margin95=margin,
        runs=5,
        tasks=5,
        missing_core_tasks=(),
        status=status,  # type: ignore[arg-type]
        rank=1 if status == "ranked" else None,
    )


def test_drop_verdicts_from_the_margins() -> None:
    new = setup("new", 80.0, 5.0)
    # vs previous 70 ± 4: 80 − 70 = 10 > 5 + 4 = 9 → switch
    # vs leader 90 ± 6: |80 − 90| = 10 ≤ 5 + 6 = 11 → no clear difference
    assert drop_verdict(new, setup("prev", 70.0, 4.0), setup("lead", 90.0, 6.0)) == (
        SWITCH,
        NO_CLEAR_DIFFERENCE,
    )
    # vs leader 90 ± 4: 10 > 9, new is below → don't switch
    assert drop_verdict(new, None, setup("lead", 90.0, 4.0)) == (None, DONT_SWITCH)
    # exactly the combined margins: 79 − 70 = 9 = 5 + 4 → no clear difference
    assert drop_verdict(setup("new", 79.0, 5.0), setup("prev", 70.0, 4.0), None) == (
        NO_CLEAR_DIFFERENCE,
        None,
    )


def test_drop_verdict_without_margin_or_comparable_coverage() -> None:
    new = setup("new", 95.0, 1.0)
    assert drop_verdict(new, setup("prev", 10.0, None), None)[0] == NO_CLEAR_DIFFERENCE
    assert drop_verdict(setup("new", 95.0, None), setup("p", 10.0, 1.0), None)[0] == (
        NO_CLEAR_DIFFERENCE
    )
    provisional = setup("prev", 10.0, 1.0, status="provisional")
    assert drop_verdict(new, provisional, None)[0] == NO_CLEAR_DIFFERENCE
    with pytest.raises(ValueError, match="itself"):
        drop_verdict(new, None, new)


def test_leader_excludes_the_new_setup() -> None:
    runs = [graded("a", 5, setup="new"), graded("b", 4, setup="x"), graded("c", 2, setup="y")]
    setups = [
        setup(row["setup_id"], row["overall"], None) for row in pm_tables(runs).pm_setups.to_dicts()
    ]
    setups = [
        PmSetupScore(**{**s.__dict__, "rank": rank}) for rank, s in enumerate(setups, start=1)
    ]
    leader = leader_excluding(setups, "new")
    assert leader is not None and leader.setup_id == "x"


def test_drop_ready_only_when_every_run_is_graded_and_reviewed() -> None:
    done = [graded("a", 4, task="a"), graded("b", 4, task="b")]
    assert drop_ready(done)
    assert drop_ready(done, required_tasks={"a", "b"})
    missing = drop_ready(done, required_tasks={"a", "b", "c"})
    assert not missing and missing.missing_tasks == ("c",)
    waiting = drop_ready([*done, run("w", judge=None, review=None, status="pending")])
    assert not waiting and waiting.waiting == ("w",)
    assert not drop_ready([*done, run("f", status="failed")])
    assert not drop_ready([])
