"""Grades in the warehouse: which runs wait for grading, storing a cycle (insert only), the
second-look list and judge–person calibration."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import duckdb

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.grading.blind_names import load_blind_names
from bench_pipeline.grading.blinding import blind_copy
from bench_pipeline.grading.calibration import PairedGrade, calibrate, track_criteria
from bench_pipeline.grading.cycle import GRADE_COLUMNS, CycleResult, RunToGrade
from bench_pipeline.grading.outcomes import Outcome
from bench_pipeline.grading.queue import score_gap
from bench_pipeline.taskbank import TaskBank


class GradingConflict(RuntimeError):
    """Two grading cycles graded the same runs at once: the later one is not stored."""


def runs_to_grade(conn: duckdb.DuckDBPyConnection, bank: TaskBank) -> list[RunToGrade]:
    """Stored runs without any grade yet, of case versions still in the bank, blinded (every
    name of `blind_names.load_blind_names` and the run's own redacted); the stored output
    rides along for the scripted checks."""
    rows = conn.execute(
        """
        SELECT r.run_id, r.suite, r.case_id, r.case_version, r.input_id, r.output,
               s.api_id, s.company, s.model_record, s.harness, s.label
        FROM model_runs r JOIN setups s USING (setup_id)
        WHERE NOT EXISTS (SELECT 1 FROM grades g WHERE g.run_id = r.run_id)
        ORDER BY r.run_id
        """
    ).fetchall()
    runs = []
    known = load_blind_names(conn) if rows else None
    for run_id, suite, case_id, version, input_id, output, api_id, company, *names in rows:
        try:
            case = bank.get(suite, case_id)
        except KeyError:
            continue
        if case.version == version:
            blind = blind_copy(output, api_id, company, *names, known=known)
            runs.append(RunToGrade(run_id, case, input_id, blind, company, output=output))
    return runs


def store_cycle(
    conn: duckdb.DuckDBPyConnection, cycle_id: str, result: CycleResult, now: datetime
) -> None:
    """Insert a finished cycle: its grades, sentinel flags, browser reports, second looks.

    Raises:
        GradingConflict: Another cycle stored grades for some of these runs while this one
            was grading (nothing of this cycle is stored; its judge answers are in the
            response cache, so grading again costs nothing).
    """
    stamp = now.replace(tzinfo=None)
    real = {row["run_id"] for row in result.grades if not row["sentinel"]}
    sentinels = {row["run_id"] for row in result.grades if row["sentinel"]}
    with transaction(conn):
        (taken,) = conn.execute(
            "SELECT count(DISTINCT run_id) FROM grades WHERE list_contains(?::VARCHAR[], run_id)",
            [sorted(real)],
        ).fetchall()[0]
        if taken:
            raise GradingConflict(
                f"cycle {cycle_id} not stored: {taken} of its {len(real)} runs were graded by "
                "another cycle meanwhile (a run is graded once); run grading again"
            )
        insert_rows(
            conn, "grading_cycles",
            ("cycle_id", "started_at", "runs", "sentinels", "judges", "simulated"),
            [[cycle_id, stamp, len(real), len(sentinels),
              str(sorted(result.judges)).replace("'", '"'), result.simulated]],
        )  # fmt: skip
        insert_rows(
            conn, "grades", GRADE_COLUMNS, [[r[c] for c in GRADE_COLUMNS] for r in result.grades]
        )
        insert_rows(
            conn, "sentinel_flags",
            ("cycle_id", "judge", "sentinel_id", "expected", "got", "flagged_at"),
            [[f["cycle_id"], f["judge"], f["sentinel_id"], f["expected"], f["got"],
              f["flagged_at"]] for f in result.flags],
        )  # fmt: skip
        insert_rows(
            conn, "browser_reports",
            ("run_id", "outcome", "reason", "measures", "screenshot", "checked_at"),
            [[b["run_id"], b["outcome"], b["reason"],
              str({k: v for k, v in b.items() if k not in ("run_id", "outcome", "reason")}),
              b.get("screenshot"), stamp] for b in result.browser],
        )  # fmt: skip
        insert_rows(
            conn, "second_look", ("run_id", "reason", "detail", "found_at"),
            [[q.run_id, q.reason, q.detail, stamp] for q in result.second_look],
        )  # fmt: skip


def decision_model_scores(conn: duckdb.DuckDBPyConnection) -> dict[str, float]:
    """DM score (0–100) per PM run from its unheld judge criterion grades; a run with an
    ungraded criterion has none."""
    rows = conn.execute(
        """
        SELECT run_id,
               100 * avg(CASE outcome WHEN 'pass' THEN 1 WHEN 'partial' THEN 0.5 ELSE 0 END),
               count(*) FILTER (WHERE outcome = 'ungraded')
        FROM grades
        WHERE suite = 'pm' AND NOT sentinel AND NOT held AND grader_kind = 'judge'
          AND question <> 'blind_score'
        GROUP BY run_id
        """
    ).fetchall()
    return {run_id: score for run_id, score, ungraded in rows if ungraded == 0}


def add_score_gaps(conn: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """Second looks for PM runs whose DM score and a person's review differ by more than 30
    points (each found once); returns how many were added."""
    dm = decision_model_scores(conn)
    reviews = conn.execute(
        "SELECT run_id, score FROM reviews r WHERE NOT EXISTS (SELECT 1 FROM second_look l "
        "WHERE l.run_id = r.run_id AND l.reason = 'score_gap')"
    ).fetchall()
    items = [score_gap(run_id, dm.get(run_id), score) for run_id, score in reviews]
    rows = [[i.run_id, i.reason, i.detail, now.replace(tzinfo=None)] for i in items if i]
    with transaction(conn):
        insert_rows(conn, "second_look", ("run_id", "reason", "detail", "found_at"), rows)
    return len(rows)


def _band(score: int) -> Outcome:
    """A 1–5 score as an outcome, to compare a judge's and a person's: 4–5 pass, 3 partial,
    1–2 fail."""
    return "pass" if score >= 4 else "partial" if score == 3 else "fail"


def calibration_pairs(conn: duckdb.DuckDBPyConnection, bank: TaskBank) -> list[PairedGrade]:
    """A person's review beside the judge's blind 1–5 for the same real run (persons only:
    the simulated reviewer never calibrates anything, nor does a person's practice on a
    simulated run). Tier = core or extra task."""
    rows = conn.execute(
        """
        SELECT g.run_id, g.grader, g.grader_family, g.case_id, g.score, v.score
        FROM grades g JOIN reviews v ON v.run_id = g.run_id
        WHERE g.question = 'blind_score' AND g.score IS NOT NULL AND NOT g.held
          AND NOT v.simulated
          AND NOT EXISTS (SELECT 1 FROM model_runs r WHERE r.run_id = g.run_id AND r.simulated)
        ORDER BY g.run_id, v.reviewer
        """
    ).fetchall()
    pairs = []
    for run_id, judge, family, case_id, judge_score, person_score in rows:
        core = next((c.core for c in bank.suite("pm") if c.id == case_id), True)
        pairs.append(
            PairedGrade(
                item_id=run_id,
                criterion_id="blind_score",
                judge_api_id=judge,
                judge_family=family or judge,
                tier="core" if core else "extra",
                judge=_band(int(judge_score)),
                person=_band(int(person_score)),
            )
        )
    return pairs


def store_calibration(
    conn: duckdb.DuckDBPyConnection, pairs: Sequence[PairedGrade], now: datetime
) -> float | None:
    """Replace the `calibration` table with the current figures (overall, per judge family,
    per tier, per criterion); return the overall agreement (None without pairs)."""
    stamp = now.replace(tzinfo=None)
    rows: list[list[object]] = []
    overall = None
    if pairs:
        report = calibrate(list(pairs))
        overall = report.overall.agreement
        scopes = {"overall": report.overall}
        scopes |= {f"family:{k}": v for k, v in report.by_family.items()}
        scopes |= {f"tier:{k}": v for k, v in report.by_tier.items()}
        for scope, figures in scopes.items():
            rows.append([scope, figures.n, figures.agreement, figures.kappa, None, None, stamp])
        for criterion, tracked in track_criteria(list(pairs)).items():
            rows.append([f"criterion:{criterion}", tracked.n, tracked.agreement, None,
                         tracked.false_passes, tracked.false_failures, stamp])  # fmt: skip
    with transaction(conn):
        conn.execute("DELETE FROM calibration")
        insert_rows(
            conn, "calibration",
            ("scope", "pairs", "agreement", "kappa", "false_passes", "false_fails",
             "computed_at"),
            rows,
        )  # fmt: skip
    return overall
