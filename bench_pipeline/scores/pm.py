"""PM suite scores: runs, tasks, categories and setups, and the verdicts of a drop.

The rules (site/methodology/pm-suite.md) in the order they are applied:

1. A run's decision-model score is 100 × the mean credit of its criteria (pass 1, partial
   0.5, fail 0), the critical-failures criterion included. The judge's and the PM
   reviewer's 1–5 answers map to 0–100 as (x − 1) × 25.
2. PM score = 0.30 DM + 0.35 judge + 0.35 review. The judge does not grade prototype tasks,
   so there its share is split in proportion between the other two: 30/65 DM + 35/65
   review.
3. A critical failure, marked by the reviewer or a `fail` of the decision model on the
   critical-failures criterion, caps the run at 40 (a `partial` there does not cap).
4. Only runs whose evaluations are complete are published. Pending and failed evaluations
   stay in `pm_runs` with their status and no scores, and count nowhere else.
5. Task score = mean of the setup's published runs on the task; category and overall = mean
   of task scores, so a task with more cases or repeats does not weigh more.
6. `margin95` is taken over all of a setup's published runs, only from 5 runs up. A setup
   is ranked only once it has a published run on every core task; otherwise it is
   provisional and gets no rank.

A new model's runs are held back until its drop is ready (`drop_ready`): every run graded
and reviewed. `drop_verdict` then says whether switching to it is worth it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

import polars as pl

from bench_pipeline.core.stats import margin95, repeat_spread
from bench_pipeline.grading.outcomes import (
    OUTCOME_CREDIT,
    Outcome,
    check_grade,
    dm_score,
    grade_to_100,
)
from bench_pipeline.scores.ranking import Eligible, RankRule
from bench_pipeline.taskbank import CRITICAL_FAILURES_CRITERION

EvaluationStatus = Literal["complete", "pending", "failed"]
SetupStatus = Literal["ranked", "provisional"]
Verdict = Literal["switch", "no clear difference", "don't switch"]

DM_WEIGHT = 0.30
JUDGE_WEIGHT = 0.35
REVIEW_WEIGHT = 0.35
CRITICAL_FAILURE_CAP = 40.0
"""The most a run with a critical failure can score, however good the rest is."""
MIN_RUNS_FOR_MARGIN = 5
SETUP_RANK = RankRule(
    "rank", "overall", eligible=Eligible("status", "ranked"), computed_by_release=False
)
"""How the board ranks setups: by overall, ranked (not provisional) ones only. The release
checks the published ranks with this rule."""

SWITCH: Verdict = "switch"
NO_CLEAR_DIFFERENCE: Verdict = "no clear difference"
DONT_SWITCH: Verdict = "don't switch"

_STATUSES = frozenset(get_args(EvaluationStatus))


@dataclass(frozen=True)
class PmRun:
    """One run of a setup on one PM case, with the grades it has so far.

    Attributes:
        run_id: Unique run id.
        setup_id: The model · harness setup that produced the run.
        task: The task the case belongs to (scores average runs per task first).
        case_id: The case (a task may have several).
        category: The task's category.
        core: Whether the task is core (a setup is ranked only once it has done every one).
        prototype: Whether the deliverable is a prototype (no LLM judge).
        repeat: Repeat index of the case for this setup (noisy cases run several times).
        criteria: Decision-model outcome per criterion id, including
            `CRITICAL_FAILURES_CRITERION`.
        judge: The LLM judge's 1–5 answer; None on prototype tasks or before judging.
        review: The blind PM review's 1–5 score; None before review.
        reviewer_critical_failure: Whether the reviewer marked a critical failure.
        status: `complete` once every evaluation is in; `pending` or `failed` otherwise.
    """

    run_id: str
    setup_id: str
    task: str
    case_id: str
    category: str
    core: bool
    prototype: bool
    repeat: int
    criteria: Mapping[str, Outcome]
    judge: int | None
    review: int | None
    reviewer_critical_failure: bool = False
    status: EvaluationStatus = "complete"

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"run {self.run_id}: unknown evaluation status {self.status!r}")
        bad = {k: v for k, v in self.criteria.items() if v not in OUTCOME_CREDIT}
        if bad:
            raise ValueError(f"run {self.run_id}: outcomes must be pass/partial/fail, got {bad}")
        check_grade("judge", self.judge)
        check_grade("review", self.review)
        if self.status != "complete":
            return
        # A complete run must carry every grade its score needs: no silent zeros.
        if not self.criteria:
            raise ValueError(f"run {self.run_id}: complete without decision-model outcomes")
        if self.review is None:
            raise ValueError(f"run {self.run_id}: complete without a PM review")
        if self.prototype and self.judge is not None:
            raise ValueError(f"run {self.run_id}: the LLM judge does not grade prototype tasks")
        if not self.prototype and self.judge is None:
            raise ValueError(f"run {self.run_id}: complete written run without a judge score")


@dataclass(frozen=True)
class PmRunScore:
    """One row of `pm_runs`: a run's component scores (None unless the run is complete)."""

    run_id: str
    setup_id: str
    task: str
    case_id: str
    category: str
    core: bool
    prototype: bool
    repeat: int
    status: EvaluationStatus
    published: bool
    """Complete and not held back for a drop that is not ready."""
    dm_score: float | None
    judge_score: float | None
    review_score: float | None
    pm_score: float | None
    critical_failure: bool
    capped: bool
    """The cap lowered the score (a critical failure on a run that would score above 40)."""


@dataclass(frozen=True)
class PmTaskScore:
    """One row of `pm_tasks`: a setup's score on one task."""

    setup_id: str
    task: str
    category: str
    core: bool
    runs: int
    score: float
    repeat_spread: float | None
    """Spread between repeats of one case (sample SD, ddof 1); pooled over the task's
    repeated cases when there are several; None when no case was repeated."""


@dataclass(frozen=True)
class PmSetupScore:
    """One row of `pm_setups` (its categories also make rows of `pm_categories`)."""

    setup_id: str
    overall: float
    margin95: float | None
    runs: int
    tasks: int
    missing_core_tasks: tuple[str, ...]
    status: SetupStatus
    rank: int | None
    categories: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PmTables:
    """The PM suite's output tables."""

    pm_runs: pl.DataFrame
    pm_tasks: pl.DataFrame
    pm_categories: pl.DataFrame
    pm_setups: pl.DataFrame
    setups: tuple[PmSetupScore, ...] = ()
    """The setup scores behind `pm_setups`, for what compares setups (drop verdicts)."""


def pm_score(dm: float, judge: float | None, review: float, *, prototype: bool) -> float:
    """Uncapped PM score from 0–100 components (the judge is ignored on prototype tasks)."""
    if prototype:
        dm_share = DM_WEIGHT / (DM_WEIGHT + REVIEW_WEIGHT)  # 30/65
        return dm_share * dm + (1.0 - dm_share) * review
    if judge is None:
        raise ValueError("a written task's PM score needs the judge score")
    return DM_WEIGHT * dm + JUDGE_WEIGHT * judge + REVIEW_WEIGHT * review


def score_run(run: PmRun, *, held: bool = False) -> PmRunScore:
    """Score one run (scores stay None unless its evaluations are complete).

    Args:
        run: The run and its grades.
        held: The run's setup awaits its drop, so the run is not published yet.
    """
    critical = run.reviewer_critical_failure or run.criteria.get(CRITICAL_FAILURES_CRITERION) == (
        "fail"
    )
    if run.status != "complete":
        dm = judge = review = total = None
        capped = False
    else:
        assert run.review is not None  # checked by PmRun for complete runs
        dm = dm_score(run.criteria)
        judge = None if run.judge is None else grade_to_100(run.judge)
        review = grade_to_100(run.review)
        raw = pm_score(dm, judge, review, prototype=run.prototype)
        capped = critical and raw > CRITICAL_FAILURE_CAP
        total = min(raw, CRITICAL_FAILURE_CAP) if critical else raw
    return PmRunScore(
        run_id=run.run_id,
        setup_id=run.setup_id,
        task=run.task,
        case_id=run.case_id,
        category=run.category,
        core=run.core,
        prototype=run.prototype,
        repeat=run.repeat,
        status=run.status,
        published=run.status == "complete" and not held,
        dm_score=dm,
        judge_score=judge,
        review_score=review,
        pm_score=total,
        critical_failure=critical,
        capped=capped,
    )


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _pooled_repeat_spread(by_case: Mapping[str, list[float]]) -> float | None:
    """Pool per-case spreads: sqrt(Σ (n_c − 1) s_c² / Σ (n_c − 1)) over repeated cases."""
    weighted = 0.0
    degrees = 0
    for scores in by_case.values():
        spread = repeat_spread(scores)
        if spread is not None:
            weighted += (len(scores) - 1) * spread * spread
            degrees += len(scores) - 1
    return None if degrees == 0 else math.sqrt(weighted / degrees)


def task_scores(scores: Iterable[PmRunScore]) -> list[PmTaskScore]:
    """Per setup and task: mean of the published runs and the repeat spread.

    Rows are sorted by setup and task.
    """
    grouped: dict[tuple[str, str], list[PmRunScore]] = defaultdict(list)
    for row in scores:
        if row.published:
            grouped[(row.setup_id, row.task)].append(row)
    out = []
    for (setup_id, task), rows in sorted(grouped.items()):
        by_case: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            assert row.pm_score is not None
            by_case[row.case_id].append(row.pm_score)
        out.append(
            PmTaskScore(
                setup_id=setup_id,
                task=task,
                category=rows[0].category,
                core=rows[0].core,
                runs=len(rows),
                score=_mean([r.pm_score for r in rows if r.pm_score is not None]),
                repeat_spread=_pooled_repeat_spread(by_case),
            )
        )
    return out


def setup_scores(
    scores: Sequence[PmRunScore],
    tasks: Sequence[PmTaskScore],
    core_tasks: Collection[str],
) -> list[PmSetupScore]:
    """Overall, category scores, margin, ranked or provisional status and rank per setup.

    Args:
        scores: Every run's score (only published ones count).
        tasks: `task_scores(scores)`.
        core_tasks: The tasks a setup must have done (a published run) to be ranked.

    Returns:
        One row per setup with at least one published run, ranked setups first by rank,
        then provisional ones by overall.
    """
    runs_by_setup: dict[str, list[float]] = defaultdict(list)
    for row in scores:
        if row.published and row.pm_score is not None:
            runs_by_setup[row.setup_id].append(row.pm_score)
    tasks_by_setup: dict[str, list[PmTaskScore]] = defaultdict(list)
    for task in tasks:
        tasks_by_setup[task.setup_id].append(task)

    partial: list[PmSetupScore] = []
    for setup_id, rows in tasks_by_setup.items():
        done = {t.task for t in rows}
        missing = tuple(sorted(set(core_tasks) - done))
        by_category: dict[str, list[float]] = defaultdict(list)
        for t in rows:
            by_category[t.category].append(t.score)
        partial.append(
            PmSetupScore(
                setup_id=setup_id,
                overall=_mean([t.score for t in rows]),
                margin95=margin95(runs_by_setup[setup_id]),
                runs=len(runs_by_setup[setup_id]),
                tasks=len(rows),
                missing_core_tasks=missing,
                status="provisional" if missing else "ranked",
                rank=None,
                categories={c: _mean(v) for c, v in sorted(by_category.items())},
            )
        )
    ranks = SETUP_RANK.ranks([s.__dict__ for s in partial])
    with_rank = [replace(s, rank=rank) for s, rank in zip(partial, ranks, strict=True)]
    ranked = [s for s in with_rank if s.rank is not None]
    provisional = [s for s in with_rank if s.rank is None]
    ranked.sort(key=lambda s: (s.rank or 0, s.setup_id))
    provisional.sort(key=lambda s: (-s.overall, s.setup_id))
    return ranked + provisional


_RUN_SCHEMA = {
    "run_id": pl.String,
    "setup_id": pl.String,
    "task": pl.String,
    "case_id": pl.String,
    "category": pl.String,
    "core": pl.Boolean,
    "prototype": pl.Boolean,
    "repeat": pl.Int64,
    "status": pl.String,
    "published": pl.Boolean,
    "dm_score": pl.Float64,
    "judge_score": pl.Float64,
    "review_score": pl.Float64,
    "pm_score": pl.Float64,
    "critical_failure": pl.Boolean,
    "capped": pl.Boolean,
}
_TASK_SCHEMA = {
    "setup_id": pl.String,
    "task": pl.String,
    "category": pl.String,
    "core": pl.Boolean,
    "runs": pl.Int64,
    "score": pl.Float64,
    "repeat_spread": pl.Float64,
}
_CATEGORY_SCHEMA = {
    "setup_id": pl.String,
    "category": pl.String,
    "tasks": pl.Int64,
    "score": pl.Float64,
}
_SETUP_SCHEMA = {
    "setup_id": pl.String,
    "overall": pl.Float64,
    "margin95": pl.Float64,
    "runs": pl.Int64,
    "tasks": pl.Int64,
    "missing_core_tasks": pl.String,
    "status": pl.String,
    "rank": pl.Int64,
}


def pm_tables(
    runs: Iterable[PmRun],
    *,
    core_tasks: Collection[str] | None = None,
    held_setups: Collection[str] = (),
) -> PmTables:
    """Every PM output table from the runs and their grades.

    Args:
        runs: All runs, whatever their evaluation status.
        core_tasks: The core tasks of the suite; by default every task some run marks core
            (pass the bank's list so that a core task nobody has run yet still counts).
        held_setups: Setups whose drop is not ready (`drop_ready`): their runs are reported
            but not published.

    Returns:
        `pm_runs` (every run, sorted by setup, task, case, repeat), `pm_tasks`,
        `pm_categories` (setup × category: mean of task scores) and `pm_setups`.
    """
    run_list = list(runs)
    seen: set[str] = set()
    for run in run_list:
        if run.run_id in seen:
            raise ValueError(f"run {run.run_id} appears twice")
        seen.add(run.run_id)
    if core_tasks is None:
        core_tasks = {run.task for run in run_list if run.core}
    held = set(held_setups)
    scores = [score_run(run, held=run.setup_id in held) for run in run_list]
    scores.sort(key=lambda r: (r.setup_id, r.task, r.case_id, r.repeat, r.run_id))
    tasks = task_scores(scores)
    setups = setup_scores(scores, tasks, core_tasks)
    categories = [
        {
            "setup_id": s.setup_id,
            "category": category,
            "tasks": sum(1 for t in tasks if t.setup_id == s.setup_id and t.category == category),
            "score": value,
        }
        for s in setups
        for category, value in s.categories.items()
    ]
    return PmTables(
        pm_runs=pl.DataFrame([r.__dict__ for r in scores], schema=_RUN_SCHEMA, orient="row"),
        pm_tasks=pl.DataFrame([t.__dict__ for t in tasks], schema=_TASK_SCHEMA, orient="row"),
        pm_categories=pl.DataFrame(categories, schema=_CATEGORY_SCHEMA, orient="row"),
        pm_setups=pl.DataFrame(
            [
                {
                    **{k: v for k, v in s.__dict__.items() if k != "categories"},
                    "missing_core_tasks": ",".join(s.missing_core_tasks),
                }
                for s in setups
            ],
            schema=_SETUP_SCHEMA,
            orient="row",
        ),
        setups=tuple(setups),
    )


# Drops -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DropReadiness:
    """Whether a new model's runs may go live together; truthy when they may.

    Attributes:
        ready: Every run graded and reviewed, and every required task covered.
        waiting: Run ids whose evaluations are still pending or failed.
        missing_tasks: Required tasks without any run.
    """

    ready: bool
    waiting: tuple[str, ...] = ()
    missing_tasks: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.ready


def drop_ready(runs: Iterable[PmRun], required_tasks: Collection[str] = ()) -> DropReadiness:
    """Whether a new model's runs are ready to go live together as a drop.

    A drop goes out all at once, so one run still pending (or whose evaluation failed and
    must be redone) holds back every run of the model. No runs at all is never ready.

    Args:
        runs: Every run of the new model's setup(s).
        required_tasks: Tasks the drop must cover (the whole suite); none by default.
    """
    run_list = list(runs)
    waiting = tuple(sorted(r.run_id for r in run_list if r.status != "complete"))
    missing = tuple(sorted(set(required_tasks) - {r.task for r in run_list}))
    ready = bool(run_list) and not waiting and not missing
    return DropReadiness(ready=ready, waiting=waiting, missing_tasks=missing)


def _verdict(new: PmSetupScore, other: PmSetupScore | None) -> Verdict | None:
    if other is None:
        return None
    if new.status != "ranked" or other.status != "ranked":
        return NO_CLEAR_DIFFERENCE  # different task coverage: the overalls do not compare
    if new.margin95 is None or other.margin95 is None:
        return NO_CLEAR_DIFFERENCE
    difference = new.overall - other.overall
    if abs(difference) <= new.margin95 + other.margin95:
        return NO_CLEAR_DIFFERENCE
    return SWITCH if difference > 0 else DONT_SWITCH


def drop_verdict(
    new: PmSetupScore,
    previous_same_family: PmSetupScore | None,
    leader: PmSetupScore | None,
) -> tuple[Verdict | None, Verdict | None]:
    """Verdicts of a drop: is the new setup worth switching to from each of two others?

    Rule, applied to each comparison: with `d = new.overall − other.overall`,

    * `switch` when `d > new.margin95 + other.margin95` (the two 95% intervals do not
      overlap and the new setup is above);
    * `don't switch` when `−d > new.margin95 + other.margin95` (it is below);
    * `no clear difference` otherwise, including when either margin is missing (fewer
      than 5 runs) or either setup is provisional (their overalls cover different tasks).

    Args:
        new: The new model's setup.
        previous_same_family: The previous version of the same family, or None.
        leader: The setup that leads today other than the new one (`leader_excluding`), or
            None.

    Returns:
        (verdict vs previous, verdict vs leader); None where there is nothing to compare.

    Raises:
        ValueError: If either other setup is the new one.
    """
    for other in (previous_same_family, leader):
        if other is not None and other.setup_id == new.setup_id:
            raise ValueError(f"setup {new.setup_id} cannot be compared with itself")
    return _verdict(new, previous_same_family), _verdict(new, leader)


def leader_excluding(setups: Iterable[PmSetupScore], setup_id: str) -> PmSetupScore | None:
    """The best-ranked setup other than `setup_id` (ties: the first by setup id)."""
    ranked = [s for s in setups if s.rank is not None and s.setup_id != setup_id]
    if not ranked:
        return None
    return min(ranked, key=lambda s: (s.rank, s.setup_id))


__all__ = [
    "CRITICAL_FAILURE_CAP",
    "DONT_SWITCH",
    "NO_CLEAR_DIFFERENCE",
    "SWITCH",
    "DropReadiness",
    "EvaluationStatus",
    "PmRun",
    "PmRunScore",
    "PmSetupScore",
    "PmTables",
    "PmTaskScore",
    "Verdict",
    "drop_ready",
    "drop_verdict",
    "leader_excluding",
    "pm_score",
    "pm_tables",
    "score_run",
    "setup_scores",
    "task_scores",
]
