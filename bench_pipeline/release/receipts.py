"""Receipts: for every published run, what it was given, what it answered, how it was graded,
by whom, and what it cost (seed 002), as two published tables.

- `receipts`: one row per published run of a public case: the prompt it was sent, its output,
  its score, who graded it (judge model ids, rubric versions, script versions, reviewer), the
  PM judge's 1–5 answer with its reasoning and the claims it could not find in the brief
  (seed 000), and `candidate_cost_usd`, `judge_cost_usd`, `total_cost_usd` as seed 002
  defines them.
- `receipt_scores`: one row per run, criterion (or check) and grader: the outcome and its
  credit.

A run whose second look waits for a person's review (`review_store.awaiting_second_look`) has
no receipt until that review is stored: the receipt names the setup and shows the grades, and
the person must read the output blind. A receipt a release already published stays published
(`public_receipt_runs`); `bench review` never offers such a run.

A receipt never holds an answer key, a hidden test, a check's details or anything of a
private case: runs of private cases get no receipt; a scripted or browser check shows only
its kind, grader and outcome (its reason quotes expected values); a Navigator judge criterion
shows only its id and outcome (its question and the judge's reason restate the rubric, which
is the answer key there). Before anything is published, every field but the run's own output
is searched for every text of `taskbank.privacy.secret_texts`; a hit refuses the release,
naming the run and field.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.grading.outcomes import OUTCOME_CREDIT
from bench_pipeline.grading.review_store import awaiting_second_look
from bench_pipeline.release.schema import Column, PublishedTable
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.scores.load import _input_score
from bench_pipeline.taskbank import Case, TaskBank, load_bank
from bench_pipeline.taskbank.privacy import secret_texts
from bench_pipeline.taskbank.setups import SetupCatalog, load_setups

Row = dict[str, Any]


class ReceiptLeak(ValueError):
    """A receipt field holds a secret text; nothing is published."""


def _c(name: str, type_: str, description: str) -> Column:
    return Column(name, type_, description)


RECEIPT_COLUMNS = (
    _c("run_id", "string", "The run."),
    _c("suite", "string", "pm, navigator or usecase."),
    _c("setup_id", "string", "The setup (a model in a harness); null for a submitted run."),
    _c("setup", "string", "The setup's label, or the submitted run's group."),
    _c("model_api_id", "string", "The exact API model id the run called (null if submitted)."),
    _c("harness", "string", "The harness the model ran in."),
    _c("task", "string", "The task."),
    _c("case_id", "string", "The task bank case."),
    _c("case_version", "string", "The case version the run answered."),
    _c("case_title", "string", "The case's title."),
    _c("input_id", "string", "Which input of the case (Navigator), else main."),
    _c("repeat", "integer", "Which repeat of a noisy case."),
    _c("measures", "string", "model (Measures the model) or system (Measures the system)."),
    _c("provenance", "string", "synthetic, anonymised or public."),
    _c("run_date", "date", "The day the run was made (or started, if submitted)."),
    _c("score", "number", "The run's score, 0-100 (PM score; 100 x Navigator run score)."),
    _c("dm_score", "number", "PM: decision-model score, 0-100."),
    _c("judge_score", "number", "PM: LLM judge score, 0-100."),
    _c("review_score", "number", "PM: blind human review score, 0-100."),
    _c("capped", "boolean", "PM: capped at 40 by a critical failure."),
    _c("outcome", "string", "Use case: success, partial or fail."),
    _c(
        "system_instructions",
        "string",
        "The harness's system instructions, sent before the prompt (null: none, or unknown).",
    ),
    _c("input", "string", "The prompt the run was sent, verbatim."),
    _c("output", "string", "The run's output, verbatim."),
    _c("judge_models", "string", "Judge model ids that graded it (comma-separated)."),
    _c("rubric_versions", "string", "Rubric versions of its judged criteria (comma-separated)."),
    _c("script_versions", "string", "Scripted and browser graders (comma-separated)."),
    _c("reviewer", "string", "Who reviewed it blind (PM), or who submitted it (use case)."),
    _c("judge_answer", "integer", "PM: the LLM judge's 1-5 answer to the blind-review question."),
    _c("judge_reasoning", "string", "PM: the LLM judge's reason for that answer."),
    _c("claims_checked", "integer", "PM: claims about the situation the judge checked."),
    _c(
        "claims_not_found",
        "string",
        "PM: JSON list of claims the judge could not find in the brief (null: unread).",
    ),
    _c("candidate_cost_usd", "decimal", "The run's measured cost, USD (null if unpriced)."),
    _c("judge_cost_usd", "decimal", "Sum of its judge calls' costs, USD (null: none recorded)."),
    _c(
        "total_cost_usd",
        "decimal",
        "Candidate + judge, only when the candidate cost is known and a judge cost recorded.",
    ),
    _c("simulated", "boolean", "Made or graded by a simulated provider."),
)
SCORE_COLUMNS = (
    _c("run_id", "string", "The run."),
    _c("criterion", "string", "Criterion id; `check:<kind>`, `browser` or `vision:<check>`."),
    _c("question", "string", "The criterion's question, where the rubric is public (PM)."),
    _c("grader_kind", "string", "judge, script, browser, vision or submitter."),
    _c("grader", "string", "The grader: a judge model id, a script version, the submitter."),
    _c("tier", "integer", "1 scripted or browser, 2 judge (null: self-reported)."),
    _c("rubric_version", "string", "The judged criterion's rubric version."),
    _c("outcome", "string", "pass, partial, fail, ungraded or inconclusive."),
    _c("credit", "number", "What the outcome counts for: pass 1, partial 0.5, fail 0."),
    _c("confidence", "number", "The judge's confidence, 0-1."),
)

_RECEIPT_SCHEMA: dict[str, Any] = {
    "string": pl.String,
    "integer": pl.Int64,
    "number": pl.Float64,
    "decimal": pl.String,
    "boolean": pl.Boolean,
    "date": pl.Date,
}
NOT_SEARCHED = ("output",)
"""Fields not searched for secrets: the run's own answer (a correct answer may well contain
what its check expects)."""


def _frame(rows: list[Row], columns: tuple[Column, ...]) -> pl.DataFrame:
    schema = {c.name: _RECEIPT_SCHEMA[c.type] for c in columns}
    return pl.DataFrame([[r.get(n) for n in schema] for r in rows], schema=schema, orient="row")


def _joined(values: Iterable[Any]) -> str | None:
    found = sorted({str(v) for v in values if v})
    return ", ".join(found) if found else None


def _prompt(case: Case, input_id: str) -> str | None:
    return next((p.text for p in case.prompts() if p.input_id == input_id), None)


def _grades(conn: duckdb.DuckDBPyConnection, suite: str) -> dict[str, list[Row]]:
    """Every grade of a real run of `suite` (held ones too: a held judge still cost money,
    and the receipt shows it was held by leaving it out of the score)."""
    cursor = conn.execute(
        "SELECT run_id, input_id, question, tier, grader_kind, grader, rubric_version, outcome, "
        "score, confidence, reason, details, held, judge_cost_usd, simulated FROM grades "
        "WHERE suite = ? AND NOT sentinel ORDER BY run_id, question, grader, grade_id",
        [suite],
    )
    names = [d[0] for d in cursor.description]
    by_run: dict[str, list[Row]] = defaultdict(list)
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        by_run[row["run_id"]].append(row)
    return by_run


def _runs(conn: duckdb.DuckDBPyConnection, suite: str) -> dict[str, Row]:
    cursor = conn.execute(
        "SELECT r.run_id, r.setup_id, s.label AS setup, s.api_id AS model_api_id, s.harness, "
        "r.case_id, r.case_version, r.input_id, r.repeat, r.run_date, r.output, r.cost_usd, "
        "r.simulated FROM model_runs r JOIN setups s USING (setup_id) WHERE r.suite = ?",
        [suite],
    )
    names = [d[0] for d in cursor.description]
    return {v[0]: dict(zip(names, v, strict=True)) for v in cursor.fetchall()}


def _costs(candidate: Decimal | None, grades: list[Row]) -> Row:
    """Seed 002's three costs: the judge cost is the sum of the recorded judge costs (null
    when none was recorded); the total only when both parts are known."""
    recorded = [g["judge_cost_usd"] for g in grades if g["judge_cost_usd"] is not None]
    judge = sum(recorded, Decimal(0)) if recorded else None
    total = candidate + judge if candidate is not None and judge is not None else None
    return {
        "candidate_cost_usd": format_usd(candidate),
        "judge_cost_usd": format_usd(judge),
        "total_cost_usd": format_usd(total),
    }


def _graders(grades: list[Row]) -> Row:
    judged = [g for g in grades if g["grader_kind"] == "judge"]
    return {
        "judge_models": _joined(g["grader"] for g in judged),
        "rubric_versions": _joined(g["rubric_version"] for g in judged),
        "script_versions": _joined(g["grader"] for g in grades if g["grader_kind"] != "judge"),
    }


def _score_rows(run_id: str, case: Case, grades: list[Row]) -> list[Row]:
    """Per criterion and grader; the question only where the rubric is public (PM)."""
    questions = {c.id: c.question for c in case.rubric} if case.suite == "pm" else {}
    rows = []
    for g in grades:
        if g["question"] == "blind_score":
            continue  # the judge's 1–5 answer is on the receipt itself
        if g["grader_kind"] == "judge":
            criterion = g["question"]
        elif g["grader_kind"] == "browser":
            criterion = "browser"
        elif g["grader_kind"] == "vision":
            criterion = g["question"]  # `vision:<check id>`: one answer per browser check
        else:
            kind = next((i.check.kind for i in case.inputs if i.id == g["input_id"]), "check")
            criterion = f"check:{kind}"
        rows.append({
            "run_id": run_id, "criterion": criterion, "question": questions.get(criterion),
            "grader_kind": g["grader_kind"], "grader": g["grader"], "tier": g["tier"],
            "rubric_version": g["rubric_version"], "outcome": g["outcome"],
            "credit": OUTCOME_CREDIT.get(g["outcome"]),
            "confidence": g["confidence"] if g["grader_kind"] == "judge" else None,
        })  # fmt: skip
    return rows


def _judge_work(grades: list[Row]) -> Row:
    """The PM judge's blind-review answer, its reason and the claims it could not find."""
    blind = next((g for g in grades if g["question"] == "blind_score"), None)
    if blind is None:
        return {}
    details = json.loads(blind["details"] or "{}")
    graded = details.get("claims_graded", True)  # grades made before it was stored: read
    not_found = details.get("claims_not_found")
    return {
        "judge_answer": None if blind["score"] is None else int(blind["score"]),
        "judge_reasoning": blind["reason"],
        "claims_checked": details.get("claims_checked"),
        "claims_not_found": json.dumps(not_found, ensure_ascii=False)
        if graded and not_found is not None
        else None,
    }


def _reviewers(conn: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The review that counts for each run: the first person's, else the simulated one's
    (the order `scores.load.pm_inputs` uses)."""
    found: dict[str, str] = {}
    for run_id, reviewer in conn.execute(
        "SELECT run_id, reviewer FROM reviews ORDER BY simulated, submitted_at, review_id"
    ).fetchall():
        found.setdefault(run_id, reviewer)
    return found


def _case_fields(case: Case) -> Row:
    return {
        "task": case.task, "case_title": case.title, "measures": case.measured,
        "provenance": case.provenance,
    }  # fmt: skip


def _pm(conn: duckdb.DuckDBPyConnection, bank: TaskBank) -> tuple[list[Row], list[Row]]:
    cases = {c.id: c for c in bank.suite("pm")}
    runs, grades, reviewers = _runs(conn, "pm"), _grades(conn, "pm"), _reviewers(conn)
    receipts, scores = [], []
    for run_id, dm, judge, review, score, capped, simulated in conn.execute(
        "SELECT run_id, dm_score, judge_score, review_score, pm_score, capped, simulated "
        "FROM pm_runs WHERE published ORDER BY run_id"
    ).fetchall():
        run, case = runs.get(run_id), cases.get(str(runs.get(run_id, {}).get("case_id")))
        if run is None or case is None or case.private:
            continue
        graded = grades.get(run_id, [])
        receipts.append(
            run | _case_fields(case) | _graders(graded) | _judge_work(graded)
            | _costs(run["cost_usd"], graded)
            | {"suite": "pm", "score": score, "dm_score": dm, "judge_score": judge,
               "review_score": review, "capped": capped, "input": _prompt(case, run["input_id"]),
               "reviewer": reviewers.get(run_id), "simulated": bool(simulated or run["simulated"])}
        )  # fmt: skip
        scores += _score_rows(run_id, case, graded)
    return receipts, scores


def _navigator(conn: duckdb.DuckDBPyConnection, bank: TaskBank) -> tuple[list[Row], list[Row]]:
    """Runs that count on the Navigator board: current case version, decided score."""
    cases = {c.id: c for c in bank.suite("navigator")}
    grades = _grades(conn, "navigator")
    receipts, scores = [], []
    for run_id, run in sorted(_runs(conn, "navigator").items()):
        case = cases.get(run["case_id"])
        if case is None or case.private or case.version != run["case_version"]:
            continue
        graded = grades.get(run_id, [])
        counted = [g for g in graded if not g["held"]]
        score = _input_score(
            (g["input_id"], g["question"], g["grader_kind"], g["grader"], g["outcome"], g["score"])
            for g in counted
        )
        if score is None:
            continue
        receipts.append(
            run | _case_fields(case) | _graders(graded) | _costs(run["cost_usd"], graded)
            | {"suite": "navigator", "score": 100 * score, "input": _prompt(case, run["input_id"]),
               "simulated": bool(run["simulated"] or any(g["simulated"] for g in graded))}
        )  # fmt: skip
        scores += _score_rows(run_id, case, graded)
    return receipts, scores


def _usecase(conn: duckdb.DuckDBPyConnection, bank: TaskBank) -> tuple[list[Row], list[Row]]:
    """Submitted runs on the board (under review too: they stay public); their criteria are
    the submitter's own, graded by no one here."""
    cases = {c.id: c for c in bank.suite("usecase")}
    receipts, scores = [], []
    for (run_id, use_case, group, harness, version, started, output, cost, score, outcome,
         criteria, submitter) in conn.execute(
        "SELECT u.run_id, u.use_case, u.\"group\", s.harness, s.use_case_version, s.started_at, "
        "s.output, s.cost_usd, u.score, u.outcome, s.criteria, s.submitter "
        "FROM usecase_runs u JOIN submitted_runs s USING (run_id) ORDER BY u.run_id"
    ).fetchall():  # fmt: skip
        case = cases.get(use_case)
        if case is None or case.private:
            continue
        receipts.append(
            _case_fields(case) | _costs(cost, [])
            | {"run_id": run_id, "suite": "usecase", "setup": group, "harness": harness,
               "case_id": case.id, "case_version": version, "input_id": "main", "repeat": 0,
               "run_date": started.date(), "score": score, "outcome": outcome,
               "input": case.brief if case.version == version else None, "output": output,
               "reviewer": submitter, "simulated": False}
        )  # fmt: skip
        claimed = json.loads(criteria)
        scores += [
            {"run_id": run_id, "criterion": name, "grader_kind": "submitter",
             "grader": submitter or "submitter", "outcome": claimed[name],
             "credit": OUTCOME_CREDIT.get(claimed[name])}
            for name in sorted(claimed)
        ]  # fmt: skip
    return receipts, scores


def assemble(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, setups: SetupCatalog | None = None
) -> tuple[list[Row], list[Row]]:
    """Every receipt and score row but the held ones (`held_receipts`), checked for secrets
    (see the module docstring).

    `setups` gives each executed run its harness's system instructions (a setup id is a hash
    of the harness, instructions included, so the catalog's are the ones the run was sent);
    without it, or for a setup no longer in the files, they are null.

    Raises:
        ReceiptLeak: A field other than the output holds a secret text of the bank.
    """
    receipts, scores = [], []
    held = held_receipts(conn)
    for part in (_pm, _navigator, _usecase):
        found, graded = part(conn, bank)
        for receipt in found:
            receipt["system_instructions"] = _instructions(setups, receipt.get("setup_id"))
        receipts += [r for r in found if r["run_id"] not in held]
        scores += [s for s in graded if s["run_id"] not in held]
    refuse_secrets([*receipts, *scores], secret_texts(bank))
    return receipts, scores


def public_receipt_runs(conn: duckdb.DuckDBPyConnection) -> set[str]:
    """Runs whose receipt a stored release published (every release `releases` lists whose
    folder still holds its `receipts` table)."""
    runs: set[str] = set()
    for (path,) in conn.execute("SELECT path FROM releases").fetchall():
        table = Path(path) / "data" / "receipts.parquet"
        if table.is_file():
            runs.update(pl.read_parquet(table, columns=["run_id"])["run_id"].to_list())
    return runs


def held_receipts(conn: duckdb.DuckDBPyConnection) -> set[str]:
    """Runs whose receipt is held: their second look waits for a person's review, and no
    release has published their receipt yet."""
    awaiting = set(awaiting_second_look(conn))
    return awaiting - public_receipt_runs(conn) if awaiting else awaiting


def _instructions(setups: SetupCatalog | None, setup_id: str | None) -> str | None:
    if setups is None or setup_id is None:
        return None
    try:
        return setups.get(setup_id).harness.system_instructions or None
    except KeyError:
        return None


def refuse_secrets(rows: Iterable[Mapping[str, Any]], secrets: list[str]) -> None:
    """Raise when any field but the output of any row contains one of `secrets`.

    Raises:
        ReceiptLeak: Naming the run and field, and the secret by its position only (a
            report must not publish it).
    """
    rows = list(rows)
    # One search of every searched field joined first: a secret in a field is in the joined
    # text, so a release without any (the usual case) is not searched field by field.
    joined = "\0".join(
        value
        for row in rows
        for name, value in row.items()
        if name not in NOT_SEARCHED and isinstance(value, str)
    )
    if not any(secret in joined for secret in secrets):
        return
    for row in rows:
        for name, value in row.items():
            if name in NOT_SEARCHED or not isinstance(value, str):
                continue
            for number, secret in enumerate(secrets):
                if secret in value:
                    raise ReceiptLeak(
                        f"receipt of run {row.get('run_id')}, field {name}: holds secret text "
                        f"#{number} of the task bank (an answer key, hidden test, check detail "
                        "or private case text); nothing was published"
                    )


def receipt_frames(conn: duckdb.DuckDBPyConnection) -> dict[str, pl.DataFrame]:
    """The `receipts` and `receipt_scores` tables, from one assembly (the task bank is
    `BENCH_TASKS`, as for the release's privacy check, and the setups `BENCH_SETUPS`)."""
    receipts, scores = assemble(conn, load_bank(), load_setups())
    receipts.sort(key=lambda r: (r["suite"], str(r.get("setup")), r["run_id"]))
    scores.sort(key=lambda r: (r["run_id"], r["criterion"], r["grader"]))
    return {"receipts": _frame(receipts, RECEIPT_COLUMNS),
            "receipt_scores": _frame(scores, SCORE_COLUMNS)}  # fmt: skip


RECEIPT_TABLES = (
    PublishedTable("receipts", "Receipts: every published run's input, output, grades and costs",
                   None, ("run_id",), "receipts", RECEIPT_COLUMNS, together=receipt_frames),
    PublishedTable("receipt_scores", "Receipts: each run's score per criterion and grader",
                   None, ("run_id", "criterion", "grader"), "receipts", SCORE_COLUMNS,
                   together=receipt_frames),
)  # fmt: skip
"""The two tables, for `published.PUBLISHED`."""
