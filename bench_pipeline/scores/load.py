"""The three run-based boards from the warehouse, as of any date.

Scores are always computed from stored grades, reviews and runs, never from stored scores.
`as_of` rebuilds a board from what existed then: runs recorded, grades made, reviews
submitted and clearances recorded by that moment (runs are never edited, so nothing later
can leak in). Only the current version of each case counts (a changed case is a new task
version, and old results stay with the old version).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import cast

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import replace_tables
from bench_pipeline.grading.outcomes import OUTCOME_CREDIT, Outcome
from bench_pipeline.grading.split_decisions import Decisions, is_split
from bench_pipeline.grading.split_decisions import decisions as split_decisions
from bench_pipeline.runs.submissions import content_key
from bench_pipeline.scores.navigator import (
    NavigatorBoard,
    NavigatorRun,
    navigator_board,
    task_scores,
)
from bench_pipeline.scores.navigator_power import navigator_resolution, resolution_frame
from bench_pipeline.scores.navigator_v1_tables import v1_frames
from bench_pipeline.scores.pm import (
    PmRun,
    PmSetupScore,
    drop_ready,
    drop_verdict,
    pm_tables,
)
from bench_pipeline.scores.usecase import Clearance, UseCaseRun, usecase_board
from bench_pipeline.taskbank import TaskBank
from bench_pipeline.taskbank.v1_library import load_library


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


@dataclass(frozen=True)
class _Run:
    run_id: str
    setup_id: str
    label: str
    company: str
    suite: str
    case_id: str
    input_id: str
    repeat: int
    output: str
    finish_reason: str | None
    max_tokens: int | None
    completion_tokens: int | None
    cost_usd: Decimal | None
    recorded_at: datetime


def _runs(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, suite: str, as_of: datetime
) -> list[_Run]:
    rows = conn.execute(
        """
        SELECT r.run_id, r.setup_id, s.label, s.company, r.suite, r.case_id, r.input_id,
               r.repeat, r.output, r.finish_reason, r.max_tokens, r.completion_tokens,
               r.cost_usd, r.recorded_at, r.case_version
        FROM model_runs r JOIN setups s USING (setup_id)
        WHERE r.suite = ? AND r.recorded_at <= ?
        ORDER BY r.run_id
        """,
        [suite, _naive(as_of)],
    ).fetchall()
    current = {c.id: c.version for c in bank.suite(suite)}
    return [_Run(*row[:-1]) for row in rows if current.get(row[5]) == row[-1]]


def _grades(conn: duckdb.DuckDBPyConnection, suite: str, as_of: datetime) -> dict[str, list[tuple]]:
    """Unheld grades of real runs by run: (input, question, grader kind, grader, outcome, score)."""
    rows = conn.execute(
        "SELECT run_id, input_id, question, grader_kind, grader, outcome, score FROM grades "
        "WHERE suite = ? AND NOT sentinel AND NOT held AND graded_at <= ? ORDER BY grade_id",
        [suite, _naive(as_of)],
    ).fetchall()
    by_run: dict[str, list[tuple]] = defaultdict(list)
    for run_id, *rest in rows:
        by_run[run_id].append(tuple(rest))
    return by_run


# --- PM suite ---------------------------------------------------------------------------------


def pm_inputs(conn: duckdb.DuckDBPyConnection, bank: TaskBank, as_of: datetime) -> list[PmRun]:
    """One `PmRun` per current PM run: its judge criteria, blind score and first review.

    A run is `pending` until every criterion has a readable grade, the judge's blind score
    exists (written tasks), the browser check is decided (prototypes) and someone reviewed
    it. The review is the first person's; the simulated reviewer counts only for a run no
    person reviewed (and only simulated runs have one)."""
    grades = _grades(conn, "pm", as_of)
    reviews: dict[str, tuple[int, bool]] = {}
    for run_id, score, critical, _simulated in conn.execute(
        "SELECT run_id, score, critical_failure IS NOT NULL, simulated FROM reviews "
        "WHERE submitted_at <= ? ORDER BY simulated, submitted_at, review_id",
        [_naive(as_of)],
    ).fetchall():
        reviews.setdefault(run_id, (score, critical))
    cases = {c.id: c for c in bank.suite("pm")}
    runs = []
    for run in _runs(conn, bank, "pm", as_of):
        case = cases[run.case_id]
        criteria: dict[str, str] = {}
        judge = None
        pending = False
        for _input, question, kind, _grader, outcome, score in grades.get(run.run_id, []):
            if kind == "judge" and question == "blind_score":
                judge = None if score is None else int(score)
            elif kind == "judge":
                pending |= outcome == "ungraded"
                criteria[question] = outcome
            elif kind == "browser":
                pending |= outcome == "inconclusive"
        review, critical = reviews.get(run.run_id, (None, False))
        expected = {c.id for c in case.rubric}
        pending |= set(criteria) != expected or review is None
        pending |= judge is None and not case.prototype
        runs.append(
            PmRun(
                run_id=run.run_id,
                setup_id=run.setup_id,
                task=case.task,
                case_id=case.id,
                category=case.category,
                core=case.core,
                prototype=case.prototype,
                repeat=run.repeat,
                criteria={} if pending else cast("dict[str, Outcome]", criteria),  # PmRun checks
                judge=None if pending or case.prototype else judge,
                review=None if pending else review,
                reviewer_critical_failure=critical and not pending,
                status="pending" if pending else "complete",
            )
        )
    return runs


def pm_frames(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, as_of: datetime
) -> dict[str, pl.DataFrame]:
    """`pm_runs`, `pm_tasks`, `pm_categories`, `pm_setups` and `pm_drops`."""
    runs = pm_inputs(conn, bank, as_of)
    by_setup: dict[str, list[PmRun]] = defaultdict(list)
    for run in runs:
        by_setup[run.setup_id].append(run)
    held = {s for s, rs in by_setup.items() if not drop_ready(rs).ready}
    core = {c.task for c in bank.suite("pm") if c.core}
    tables = pm_tables(runs, core_tasks=core, held_setups=held)
    labels = dict(conn.execute("SELECT setup_id, label FROM setups").fetchall())
    setups = tables.pm_setups.with_columns(
        pl.col("setup_id").replace_strict(labels, default=None).alias("setup")
    )
    frames = {
        "pm_runs": tables.pm_runs,
        "pm_tasks": tables.pm_tasks,
        "pm_categories": tables.pm_categories,
        "pm_setups": setups,
        "pm_drops": _drops(conn, list(tables.setups), as_of),
    }
    label_simulated(conn, frames)
    return frames


def _drops(
    conn: duckdb.DuckDBPyConnection, setups: list[PmSetupScore], as_of: datetime
) -> pl.DataFrame:
    """A drop per setup whose runs are all live: its date (its last grade or review), and
    verdicts against the same company's previous drop and against the leader of the day."""
    dates = dict(conn.execute(
        "SELECT r.setup_id, greatest(max(g.graded_at), max(v.submitted_at)) FROM model_runs r "
        "JOIN grades g USING (run_id) LEFT JOIN reviews v USING (run_id) "
        "WHERE r.suite = 'pm' AND g.graded_at <= ? GROUP BY 1", [_naive(as_of)],
    ).fetchall())  # fmt: skip
    companies = dict(conn.execute("SELECT setup_id, company FROM setups").fetchall())
    scores = {s.setup_id: s for s in setups}
    ordered = sorted(scores, key=lambda s: (dates.get(s) or datetime.min, s))
    rows = []
    for position, setup_id in enumerate(ordered):
        new = scores[setup_id]
        if new.status != "ranked":
            continue
        earlier = [s for s in ordered[:position] if companies.get(s) == companies.get(setup_id)]
        previous = scores[earlier[-1]] if earlier else None
        others = [s for s in scores.values() if s.setup_id != setup_id and s.rank is not None]
        leader = min(others, key=lambda s: s.rank or 0) if others else None  # all ranked
        vs_previous, vs_leader = drop_verdict(new, previous, leader)
        rows.append({
            "setup_id": setup_id, "drop_date": dates.get(setup_id),
            "previous_setup_id": previous.setup_id if previous else None,
            "verdict_vs_previous": vs_previous,
            "leader_setup_id": leader.setup_id if leader else None,
            "verdict_vs_leader": vs_leader,
        })  # fmt: skip
    schema = {"setup_id": pl.String, "drop_date": pl.Datetime, "previous_setup_id": pl.String,
              "verdict_vs_previous": pl.String, "leader_setup_id": pl.String,
              "verdict_vs_leader": pl.String}  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row")


# --- Navigator --------------------------------------------------------------------------------


def _input_score(grades: Iterable[tuple], decided: Decisions | None = None) -> float | None:
    """0–1 for one Navigator run: the scripted check's credit, or the mean over criteria of
    both judges' credit, where a person's decision (`grading.split_decisions`) stands for a
    pass/fail split; None while undecided (an ungraded answer, a split nobody decided)."""
    grades = list(grades)
    decided = decided or {}
    script = [outcome for _i, _q, kind, _g, outcome, _s in grades if kind == "script"]
    if script:
        return OUTCOME_CREDIT.get(script[0])
    by_question: dict[tuple[str, str], list[str]] = defaultdict(list)
    for input_id, question, _kind, _grader, outcome, _s in grades:
        by_question[(input_id, question)].append(outcome)
    if not by_question:
        return None
    values = []
    for key, outcomes in by_question.items():
        if len(outcomes) == 2 and is_split(outcomes) and key in decided:
            values.append(OUTCOME_CREDIT[decided[key]])
            continue
        if len(outcomes) != 2 or "ungraded" in outcomes or is_split(outcomes):
            return None
        values.append(sum(OUTCOME_CREDIT[o] for o in outcomes) / 2)
    return sum(values) / len(values)


def _waits_for_a_person(grades: Iterable[tuple], decided: Decisions) -> bool:
    """True when a judge split of the run has no person's decision yet."""
    by_question: dict[tuple[str, str], list[str]] = defaultdict(list)
    for input_id, question, kind, _grader, outcome, _s in grades:
        if kind == "judge":
            by_question[(input_id, question)].append(outcome)
    return any(is_split(o) and key not in decided for key, o in by_question.items())


def _navigator_resolution(
    runs: list[NavigatorRun], categories: dict[str, str], board: NavigatorBoard
) -> pl.DataFrame:
    """`navigator_resolution`: what gap the board's own data separates (`navigator_power`)."""
    indexed = [m.model for m in board.models if m.index is not None]
    found = navigator_resolution(
        task_scores(runs), categories, indexed, len(board.pairs),
        sum(p.significant for p in board.pairs),
    )  # fmt: skip
    return resolution_frame(found, len(indexed), len(categories))


def navigator_frames(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, as_of: datetime
) -> dict[str, pl.DataFrame]:
    """`navigator_models`, `navigator_pairs` and the classic v1 tables (`v1_frames`)."""
    grades = _grades(conn, "navigator", as_of)
    decided = split_decisions(conn, as_of)
    cases = {c.id: c for c in bank.suite("navigator")}
    runs: list[NavigatorRun] = []
    pending: dict[str, int] = defaultdict(int)
    for run in _runs(conn, bank, "navigator", as_of):
        run_grades = grades.get(run.run_id, [])
        score = _input_score(run_grades, decided.get(run.run_id))
        if score is None:
            pending[run.label] += _waits_for_a_person(run_grades, decided.get(run.run_id, {}))
            continue
        case = cases[run.case_id]
        # A task is scored over all its runs: every input, every case of it, every repeat.
        runs.append(
            NavigatorRun(run.run_id, run.label, case.task, case.category, score, run.cost_usd)
        )
    categories = {c.task: c.category for c in cases.values()}  # the bank checks they agree
    board = navigator_board(runs, task_categories=categories)
    models = board.navigator_models
    # A model whose every run waits for a person stays listed, unscored, with its count.
    listed = set(models["model"].to_list())
    waiting_only = sorted(
        label for label, count in pending.items() if count and label not in listed
    )
    unscored = {"tasks": 0, "runs": 0, "dominated_by": "", "dominates": ""}
    models = pl.concat(
        [
            models,
            pl.DataFrame(
                [{"model": label, **unscored} for label in waiting_only],
                schema=models.schema,
                orient="row",
            ),
        ]
    )
    frames = {
        "navigator_models": models.with_columns(
            pl.col("model")
            .replace_strict(pending, default=0, return_dtype=pl.Int64)
            .alias("pending_runs")
        ),
        "navigator_pairs": board.navigator_pairs,
        "navigator_resolution": _navigator_resolution(runs, categories, board),
    }
    frames |= v1_frames(conn, load_library(), as_of)  # classic v1: its own library and judge
    label_simulated(conn, frames)
    # The resolution comes from every indexed model's runs: simulated when any of them is.
    indexed = frames["navigator_models"].filter(pl.col("index").is_not_null())
    frames["navigator_resolution"] = frames["navigator_resolution"].with_columns(
        simulated=pl.lit(bool(indexed["simulated"].any()), dtype=pl.Boolean)
    )
    return frames


# --- UseCaseRank ------------------------------------------------------------------------------


def usecase_frames(conn: duckdb.DuckDBPyConnection, as_of: datetime) -> dict[str, pl.DataFrame]:
    """`usecase_runs` and `usecase_groups` as of `as_of` (trend against 7 days before)."""
    rows = conn.execute(
        """
        SELECT run_id, use_case, model_name, model_settings, outcome, first_try, retries,
               step_ins, turns, autonomy, wall_time_seconds, completion_tokens, cost_usd,
               claimed_cost_usd, evidence_log, evidence_sha256, cost_warnings, started_at,
               received_at, rerun_of, reproduces, submitter, use_case_version, prompt_tokens,
               cached_tokens, cache_write_tokens, reasoning_tokens, criteria, simulated,
               submitter_verified, claimed_cost_as_written
        FROM submitted_runs WHERE received_at <= ? ORDER BY run_id
        """,
        [_naive(as_of)],
    ).fetchall()
    runs: list[UseCaseRun] = []
    for (run_id, use_case, model, settings, outcome, first_try, retries, step_ins, turns,
         autonomy, wall, output_tokens, cost, claimed, log, sha, warnings, started, received,
         rerun_of, reproduces, submitter, version, input_tokens, cached, cache_write,
         reasoning, criteria, simulated, verified, as_written) in rows:  # fmt: skip
        if as_written is not None:  # a claim its column could not hold, as the file wrote it
            claimed = Decimal(as_written)
        chosen = json.loads(settings)
        shown = ", ".join(f"{k}={v}" for k, v in sorted(chosen.items()))
        tokens = {"input": input_tokens, "output": output_tokens, "cached": cached,
                  "cache_write": cache_write, "reasoning": reasoning}  # fmt: skip
        key = content_key(
            model=model, settings=chosen, use_case=use_case, use_case_version=version,
            tokens=tokens, criteria=json.loads(criteria), evidence_log=log,
        )  # fmt: skip
        runs.append(UseCaseRun(
            run_id=run_id, use_case=use_case, model=model, settings=shown, outcome=outcome,
            first_try=first_try, retries=retries, step_ins=step_ins, turns=turns,
            claimed_autonomy=autonomy, wall_time_s=wall, output_tokens=output_tokens,
            cost_usd=cost, claimed_cost_usd=claimed, evidence_log=log, evidence_sha256=sha,
            warnings=tuple(w for w in warnings.split(",") if w), run_at=started,
            published_at=received, rerun_of=rerun_of, reproduces=reproduces,
            submitter=submitter, use_case_version=version, content_key=key,
            submitter_verified=bool(verified), token_counts=tuple(tokens.values()),
            simulated=bool(simulated),
        ))  # fmt: skip
    clearances = [
        Clearance(run_id, flag, cleared_at, cleared_by)
        for run_id, flag, cleared_by, cleared_at in conn.execute(
            "SELECT run_id, flag, cleared_by, cleared_at FROM clearances WHERE cleared_at <= ?",
            [_naive(as_of)],
        ).fetchall()
    ]
    # The offline demo's simulated runs are scored and ranked apart from real ones
    # (`scores.usecase.GROUP_RANK`): never a reference for a real run, never in a real group.
    board = usecase_board(runs, clearances, as_of=_naive(as_of))
    return {"usecase_runs": board.usecase_runs, "usecase_groups": board.usecase_groups}


def all_frames(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, as_of: datetime
) -> dict[str, pl.DataFrame]:
    """Every score table of the three boards as of `as_of`."""
    return (
        pm_frames(conn, bank, as_of)
        | navigator_frames(conn, bank, as_of)
        | usecase_frames(conn, as_of)
    )


def label_simulated(conn: duckdb.DuckDBPyConnection, frames: dict[str, pl.DataFrame]) -> None:
    """Add a `simulated` column to every frame keyed by setup (`setup_id` or the setup label
    in `model`, or a pair of labels in `model_a` and `model_b`): true when any of that setup's
    runs (of either setup, for a pair) was made by the simulated provider, so every page and
    download showing it says so."""
    rows = conn.execute(
        "SELECT s.setup_id, s.label, bool_or(r.simulated) FROM model_runs r "
        "JOIN setups s USING (setup_id) GROUP BY ALL"
    ).fetchall()
    by_id = {setup_id: flag for setup_id, _label, flag in rows}
    by_label = {label: flag for _setup_id, label, flag in rows}
    for name, frame in frames.items():
        if {"model_a", "model_b"} <= set(frame.columns) and "simulated" not in frame.columns:
            either = [
                pl.col(c).replace_strict(by_label, default=False, return_dtype=pl.Boolean)
                for c in ("model_a", "model_b")
            ]
            frames[name] = frame.with_columns((either[0] | either[1]).alias("simulated"))
            continue
        for column, lookup in (("setup_id", by_id), ("model", by_label)):
            if column in frame.columns and "simulated" not in frame.columns:
                frames[name] = frame.with_columns(
                    pl.col(column).replace_strict(lookup, default=False, return_dtype=pl.Boolean)
                    .alias("simulated")
                )  # fmt: skip
                break


def store_frames(conn: duckdb.DuckDBPyConnection, frames: dict[str, pl.DataFrame]) -> None:
    """Replace the content of each score table (made by migration 0008) with its frame, all
    in one transaction; a frame with a column the table lacks is refused before any change."""
    replace_tables(conn, frames)
