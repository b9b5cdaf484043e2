"""Navigator classic v1 tables from stored v1 runs and scores, as of any date.

`navigator_v1_results`: every scored v1 call of a task's current version, with the stored
overall and dimensions exactly as the grader gave them, and what a reader is shown
(`navigator_v1.display_overall`: a stored 5 with a dimension at 3 or below shows as 4, labelled
`mixed`; a 5 shows only for a complete output), the completeness flags, who graded it (grader,
rubric version, methodology version) and its costs (candidate, judge, total as methodology v1
defines them). `navigator_v1_fit`: the fit ranking (`navigator.v1_fit_rows`) over those
displayed overalls. `navigator_v1_tasks`: the library's tasks with tier and version (never a
prompt's answer key or a judge's guidance).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal

import duckdb
import polars as pl

from bench_pipeline.grading.navigator_v1 import completeness, display_overall
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.runs.v1_comparison import total_cost
from bench_pipeline.scores.navigator import V1Call, v1_fit_rows
from bench_pipeline.taskbank.v1_library import V1Task

SCENARIOS: tuple[tuple[int, Decimal], ...] = (
    (1_000, Decimal("10")),
    (10_000, Decimal("100")),
    (100_000, Decimal("1000")),
)
"""(monthly calls, monthly budget in USD) of the published v1 fit tables."""

RESULT_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "run_id": pl.String, "comparison_id": pl.String, "model": pl.String, "task": pl.String,
    "tier": pl.Int64, "call": pl.Int64, "stored_overall": pl.Float64,
    "displayed_overall": pl.Float64, "label": pl.String, "needs_review": pl.Boolean,
    "dimensions": pl.String, "grader": pl.String, "rubric_version": pl.String,
    "methodology_version": pl.String, "output_incomplete": pl.Boolean,
    "completeness_confidence": pl.String, "completeness_reason": pl.String,
    "candidate_cost_usd": pl.String, "judge_cost_usd": pl.String, "total_cost_usd": pl.String,
    "simulated": pl.Boolean,
}  # fmt: skip
FIT_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "task": pl.String, "monthly_volume": pl.Int64, "monthly_budget_usd": pl.String,
    "rank": pl.Int64, "model": pl.String, "displayed_overall": pl.Float64, "calls": pl.Int64,
    "mean_cost_per_call_usd": pl.String, "monthly_cost_usd": pl.String, "simulated": pl.Boolean,
}  # fmt: skip
TASK_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "task": pl.String, "title": pl.String, "category": pl.String, "tier": pl.Int64,
    "version": pl.String,
}  # fmt: skip

_SQL = """
SELECT r.run_id, r.comparison_id, r.model, r.task_id, r.tier, r.call, r.task_digest,
       r.output, r.finish_reason, r.max_tokens, r.completion_tokens, r.cost_usd, r.simulated,
       s.stored_overall, s.dimensions, s.grader, s.rubric_version, s.methodology_version,
       s.judge_cost_usd, s.simulated
FROM v1_runs r JOIN v1_scores s USING (run_id)
WHERE r.recorded_at <= ? AND s.graded_at <= ?
ORDER BY r.task_id, r.model, r.run_id
"""


def v1_frames(
    conn: duckdb.DuckDBPyConnection, library: Sequence[V1Task], as_of: datetime
) -> dict[str, pl.DataFrame]:
    """`navigator_v1_results`, `navigator_v1_fit` and `navigator_v1_tasks` as of `as_of`."""
    moment = as_of.astimezone(UTC).replace(tzinfo=None) if as_of.tzinfo else as_of
    current = {t.id: t.digest for t in library}
    results, calls = [], []
    for (run_id, comparison, model, task, tier, call, digest, output, finish, max_tokens,
         used, cost, simulated, stored, dims, grader, rubric, methodology, judge_cost,
         judge_simulated) in conn.execute(_SQL, [moment, moment]).fetchall():  # fmt: skip
        if current.get(task) != digest or stored is None:
            continue  # an old version of the task, or an answer that could not be scored
        dimensions = json.loads(dims)
        done = completeness(output, finish, max_tokens, used)
        shown = display_overall(stored, dimensions, done.output_incomplete)
        results.append({
            "run_id": run_id, "comparison_id": comparison, "model": model, "task": task,
            "tier": tier, "call": call, "stored_overall": stored,
            "displayed_overall": shown.displayed_overall, "label": shown.label,
            "needs_review": shown.needs_review,
            "dimensions": json.dumps(dimensions, sort_keys=True),
            "grader": grader, "rubric_version": rubric, "methodology_version": methodology,
            **done.model_dump(),
            "candidate_cost_usd": format_usd(cost), "judge_cost_usd": format_usd(judge_cost),
            "total_cost_usd": format_usd(total_cost(cost, judge_cost)),
            "simulated": bool(simulated or judge_simulated),
        })  # fmt: skip
        calls.append((V1Call(model, task, shown.displayed_overall, cost), bool(simulated)))
    simulated_pairs: dict[tuple[str, str], bool] = defaultdict(bool)
    for item, flag in calls:
        simulated_pairs[(item.model, item.task)] |= flag
    fits = [
        {
            "task": fit.task, "monthly_volume": volume, "monthly_budget_usd": format_usd(budget),
            "rank": fit.rank, "model": fit.model, "displayed_overall": fit.displayed_overall,
            "calls": fit.calls, "mean_cost_per_call_usd": format_usd(fit.mean_cost_per_call_usd),
            "monthly_cost_usd": format_usd(fit.monthly_cost_usd),
            "simulated": simulated_pairs[(fit.model, fit.task)],
        }
        for task in sorted(current)
        for volume, budget in SCENARIOS
        for fit in v1_fit_rows(task, volume, budget, [c for c, _ in calls])
    ]  # fmt: skip
    tasks = [
        {"task": t.id, "title": t.title, "category": t.category, "tier": t.tier,
         "version": t.version}
        for t in library
    ]  # fmt: skip
    return {
        "navigator_v1_results": pl.DataFrame(results, schema=RESULT_SCHEMA, orient="row"),
        "navigator_v1_fit": pl.DataFrame(fits, schema=FIT_SCHEMA, orient="row"),
        "navigator_v1_tasks": pl.DataFrame(tasks, schema=TASK_SCHEMA, orient="row"),
    }
