"""Navigator Bench: the Index v2 with paired rank ranges and dominance, and the v1 fit ranking.

Index v2 (site/methodology/navigator.md):

* A run scores 0–1; a task's score is the mean of a model's runs on it (every input, every
  case of the task and every repeat: cases sharing a task are one task); a category's is
  100 × the mean of its task scores; the Index is Σ weight × category / 100 over the eight
  categories (weights sum to 100), published only for a model scored in every category.
* Ranks are paired. For each pair of indexed models, over their common tasks, the
  per-task differences d_t are weighted by a_t = weight(category) / tasks(category), so
  that D = Σ a_t d_t is the Index difference when both ran every task; the exact two-sided
  sign-flip test (`stats.paired_comparisons`) gives its p-value and Holm's procedure over
  all pairs decides which differences are significant at 5%. Task scores (means of run
  scores) and weights (category weight over task count) are rationals and are passed as
  exact `Fraction`s, so the test counts exactly at any number of tasks and never depends
  on a float tolerance (real-valued run scores fall back to floats). `rank_best` = 1 + models
  significantly better, `rank_worst` = N − models significantly worse, `tied` when the two
  differ (`stats.rank_ranges`).
* Cost per successful task = total candidate cost ÷ Σ run scores. A dominates B when A is
  significantly better and cheaper per successful task (`stats.dominates`).

Classic v1 fit (`v1_fit`): for one task, monthly volume and monthly budget, the models whose
volume × mean cost per call fits the budget, by displayed overall, then lower monthly cost.
"""

from __future__ import annotations

import math
import multiprocessing
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from itertools import combinations

import polars as pl

from bench_pipeline.core.money import exact
from bench_pipeline.core.stats import (
    PairResult,
    as_rational,
    dominates,
    holm,
    paired_comparisons,
    rank_ranges,
    sign_flip_pvalue,
    significantly_better_pairs,
    weighted_sum,
)
from bench_pipeline.runs.costing import format_usd

CATEGORY_WEIGHTS: Mapping[str, int] = {
    "coding": 15,
    "data_analysis": 15,
    "extraction": 10,
    "reasoning": 15,
    "research_agentic": 15,
    "summarization": 10,
    "support": 10,
    "writing": 10,
}
"""Index v2 weight of each category (they sum to 100)."""

ALPHA = 0.05
COST_PER_SUCCESS_QUANTUM = Decimal("1e-12")
"""A cost divided by a sum of scores does not end; it is published to 10⁻¹² USD."""


def _to_quantum(value: Decimal) -> Decimal:
    """Round half-even to `COST_PER_SUCCESS_QUANTUM`, however many integer digits it has."""
    with exact(value.adjusted() + 14):
        return value.quantize(COST_PER_SUCCESS_QUANTUM)


@dataclass(frozen=True)
class NavigatorRun:
    """One graded run: a model answering one input (one repeat) of one task.

    Attributes:
        run_id: Unique run id.
        model: The model (setup) that ran.
        task: The task (the case's `task`, not its id); its score averages every input,
            every case of the task and every repeat.
        category: One of `CATEGORY_WEIGHTS`.
        score: The run's score, 0–1 (partial credit).
        cost_usd: The run's candidate cost; None when it could not be priced.
    """

    run_id: str
    model: str
    task: str
    category: str
    score: float
    cost_usd: Decimal | None

    def __post_init__(self) -> None:
        if self.category not in CATEGORY_WEIGHTS:
            raise ValueError(f"run {self.run_id}: not a navigator category: {self.category!r}")
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"run {self.run_id}: a run score is 0–1, got {self.score}")
        if self.cost_usd is not None and (
            not isinstance(self.cost_usd, Decimal) or self.cost_usd < 0
        ):
            raise ValueError(f"run {self.run_id}: cost_usd must be a non-negative Decimal")


@dataclass(frozen=True)
class NavigatorModel:
    """One row of `navigator_models`."""

    model: str
    index: float | None
    """None unless the model was scored in every category."""
    categories: Mapping[str, float]
    """100 × mean task score, for each category the model was scored in."""
    tasks: int
    runs: int
    rank_best: int | None
    rank_worst: int | None
    tied: bool | None
    candidate_cost_usd: Decimal | None
    """Sum of the model's run costs; None when any run is unpriced (never a partial sum)."""
    cost_per_success_usd: Decimal | None
    dominated_by: tuple[str, ...]
    dominates: tuple[str, ...]
    index_low: float | None = None
    """Low end of the Index's 95% interval (`index_interval`); None without one."""
    index_high: float | None = None


Z_95 = 1.959963984540054
"""The standard normal quantile of 0.975: a two-sided 95% interval."""


def index_interval(
    index: float | None, grouped: Mapping[str, Sequence[float]]
) -> tuple[float, float] | None:
    """The Index's 95% interval, the tasks of each category read as a sample of the tasks
    that category could hold (as the paired tests read them).

    A category's score is 100 × the mean of its n task scores, so its standard error is
    100 × s / √n (s: the sample standard deviation of the task scores); categories are
    separate tasks, so the Index (Σ weight × category / 100) has the standard error
    √Σ (weight / 100 × 100 × s / √n)². The interval is the Index ± 1.96 standard errors,
    clipped to 0..100. None for a model without an Index or with a category of one task
    (no spread to measure)."""
    if index is None or any(len(v) < 2 for v in grouped.values()):
        return None
    variance = 0.0
    for category, values in grouped.items():
        mean = math.fsum(values) / len(values)
        spread = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
        variance += (CATEGORY_WEIGHTS[category] / 100 * 100) ** 2 * spread / len(values)
    half = Z_95 * math.sqrt(variance)
    return max(0.0, index - half), min(100.0, index + half)


@dataclass(frozen=True)
class NavigatorBoard:
    """The Index v2 board: one row per model and one per tested pair."""

    models: tuple[NavigatorModel, ...]
    pairs: tuple[PairResult, ...]

    @property
    def navigator_models(self) -> pl.DataFrame:
        rows = []
        for m in self.models:
            row: dict[str, object] = {
                "model": m.model, "index": m.index, "index_low": m.index_low,
                "index_high": m.index_high,
            }  # fmt: skip
            row.update({c: m.categories.get(c) for c in CATEGORY_WEIGHTS})
            row.update(
                tasks=m.tasks,
                runs=m.runs,
                rank_best=m.rank_best,
                rank_worst=m.rank_worst,
                tied=m.tied,
                candidate_cost_usd=format_usd(m.candidate_cost_usd),
                cost_per_success_usd=format_usd(m.cost_per_success_usd),
                dominated_by=",".join(m.dominated_by),
                dominates=",".join(m.dominates),
            )
            rows.append(row)
        return pl.DataFrame(rows, schema=_MODEL_SCHEMA, orient="row")

    @property
    def navigator_pairs(self) -> pl.DataFrame:
        rows = [
            {
                "model_a": p.model_a,
                "model_b": p.model_b,
                "n_tasks": p.n_tasks,
                "statistic": p.statistic,
                "p_value": p.p_value,
                "rejected": p.significant,
                "better": p.better,
            }
            for p in self.pairs
        ]
        return pl.DataFrame(rows, schema=_PAIR_SCHEMA, orient="row")


_MODEL_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "model": pl.String,
    "index": pl.Float64,
    "index_low": pl.Float64,
    "index_high": pl.Float64,
    **dict.fromkeys(CATEGORY_WEIGHTS, pl.Float64),
    "tasks": pl.Int64,
    "runs": pl.Int64,
    "rank_best": pl.Int64,
    "rank_worst": pl.Int64,
    "tied": pl.Boolean,
    "candidate_cost_usd": pl.String,
    "cost_per_success_usd": pl.String,
    "dominated_by": pl.String,
    "dominates": pl.String,
}
_PAIR_SCHEMA = {
    "model_a": pl.String,
    "model_b": pl.String,
    "n_tasks": pl.Int64,
    "statistic": pl.Float64,
    "p_value": pl.Float64,
    "rejected": pl.Boolean,
    "better": pl.String,
}


def task_scores(runs: Iterable[NavigatorRun]) -> dict[str, dict[str, float]]:
    """`scores[model][task]`: the mean score (0–1) of the model's runs on the task."""
    collected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        collected[run.model][run.task].append(run.score)
    return {
        model: {task: math.fsum(s) / len(s) for task, s in sorted(tasks.items())}
        for model, tasks in sorted(collected.items())
    }


def exact_task_scores(runs: Iterable[NavigatorRun]) -> dict[str, dict[str, Fraction]] | None:
    """`task_scores` as exact rationals (a run score is a mean of pass 1 / partial 0.5 /
    fail 0 values, so a fraction), or None when some run score is not one."""
    collected: dict[str, dict[str, list[Fraction]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        exact = as_rational(run.score)
        if exact is None:
            return None
        collected[run.model][run.task].append(exact)
    return {
        model: {task: sum(s, Fraction(0)) / len(s) for task, s in sorted(tasks.items())}
        for model, tasks in sorted(collected.items())
    }


def exact_task_weights(task_categories: Mapping[str, str]) -> dict[str, Fraction]:
    """`task_weights` as exact fractions: weight(category) / tasks in the category."""
    counts: dict[str, int] = defaultdict(int)
    for category in task_categories.values():
        counts[category] += 1
    return {
        task: Fraction(CATEGORY_WEIGHTS[category], counts[category])
        for task, category in task_categories.items()
    }


def task_weights(task_categories: Mapping[str, str]) -> dict[str, float]:
    """a_t = weight(category) / number of tasks in the category, for every task."""
    counts: dict[str, int] = defaultdict(int)
    for category in task_categories.values():
        counts[category] += 1
    return {
        task: CATEGORY_WEIGHTS[category] / counts[category]
        for task, category in task_categories.items()
    }


def cost_per_success(
    costs: Sequence[Decimal | None], scores: Sequence[float]
) -> tuple[Decimal | None, Decimal | None]:
    """(candidate cost, cost per successful task) of one model's runs.

    The candidate cost is the exact sum of run costs, None when any run is unpriced. The
    cost per successful task divides it by Σ run scores (a run at 0.5 is half a success),
    rounded half-even to 10⁻¹² USD; None when the cost is unknown or nothing succeeded.
    """
    if any(c is None for c in costs):
        return None, None
    with exact():
        total = sum((c for c in costs if c is not None), Decimal(0))
        successes = Decimal(math.fsum(scores))
        if successes <= 0:
            return total, None
        return total, _to_quantum(total / successes)


def _pvalue(job: tuple[list, list]) -> float:
    return sign_flip_pvalue(*job)


def paired_results(
    scores: Mapping[str, Mapping[str, float | Fraction]],
    weights: Mapping[str, float | Fraction],
    *,
    alpha: float = ALPHA,
    workers: int = 1,
) -> list[PairResult]:
    """Every pair's exact sign-flip test over common tasks, with Holm over all pairs.

    With one worker this is `stats.paired_comparisons`. With more, the same tests (same
    differences, weights and statistic, pairs in the same order) are shared among that many
    processes and Holm runs on the gathered p-values: the results are identical, only the
    wall time changes (an exact test at n = 40 takes up to ~0.1 s, and 100 models make
    4,950 of them). Processes are spawned, never forked, so a threaded caller is safe.
    """
    if workers <= 1:
        return paired_comparisons(scores, weights, alpha=alpha)
    pairs = []
    for model_a, model_b in combinations(list(scores), 2):
        common = sorted(set(scores[model_a]) & set(scores[model_b]))
        missing = [task for task in common if task not in weights]
        if missing:
            raise ValueError(f"no weight for tasks {missing}")
        diffs = [scores[model_a][t] - scores[model_b][t] for t in common]
        pairs.append((model_a, model_b, diffs, [weights[t] for t in common]))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pvalues = list(pool.map(_pvalue, [(d, w) for _, _, d, w in pairs], chunksize=8))
    rejected = holm(pvalues, alpha=alpha)
    results = []
    for (model_a, model_b, diffs, w), p_value, significant in zip(
        pairs, pvalues, rejected, strict=True
    ):
        statistic = weighted_sum(diffs, w)
        better = (model_a if statistic > 0 else model_b) if significant else None
        results.append(
            PairResult(model_a, model_b, len(diffs), statistic, p_value, significant, better)
        )
    return results


def navigator_board(
    runs: Iterable[NavigatorRun],
    *,
    task_categories: Mapping[str, str] | None = None,
    alpha: float = ALPHA,
    workers: int = 1,
) -> NavigatorBoard:
    """The Index v2 board: scores, paired rank ranges, costs and dominance.

    Args:
        runs: Every graded run of the cycle.
        task_categories: The active tasks of the bank and their categories; a_t divides a
            category's weight by its number of tasks here. By default, the tasks the runs
            cover.
        alpha: Family-wise level of Holm's procedure over all pairs.
        workers: Processes sharing the paired tests (`paired_results`); results do not
            depend on it.

    Returns:
        Models with an Index first, by Index (then name), then the others by name. Models
        without an Index get no rank and take no part in the paired tests.

    Raises:
        ValueError: On a repeated run id, a task given two categories, or (from
            `stats.sign_flip_pvalue`) real-valued run scores over more than 44 common tasks
            with non-zero differences.
    """
    run_list = list(runs)
    ids = [r.run_id for r in run_list]
    if len(set(ids)) != len(ids):
        raise ValueError("a run id appears twice")
    seen_categories: dict[str, str] = {}
    for run in run_list:
        if seen_categories.setdefault(run.task, run.category) != run.category:
            raise ValueError(f"task {run.task} is given two categories")
    categories_of = dict(task_categories) if task_categories is not None else seen_categories
    for task, category in seen_categories.items():
        if categories_of.get(task) != category:
            raise ValueError(f"task {task} is not an active task of category {category}")

    scores = task_scores(run_list)
    by_model: dict[str, list[NavigatorRun]] = defaultdict(list)
    for run in run_list:
        by_model[run.model].append(run)

    category_scores: dict[str, dict[str, float]] = {}
    index: dict[str, float] = {}
    intervals: dict[str, tuple[float, float] | None] = {}
    for model, tasks in scores.items():
        grouped: dict[str, list[float]] = defaultdict(list)
        for task, value in tasks.items():
            grouped[categories_of[task]].append(value)
        category_scores[model] = {
            c: 100.0 * math.fsum(v) / len(v) for c, v in sorted(grouped.items())
        }
        if set(grouped) == set(CATEGORY_WEIGHTS):
            index[model] = math.fsum(
                CATEGORY_WEIGHTS[c] * s / 100.0 for c, s in category_scores[model].items()
            )
            intervals[model] = index_interval(index[model], grouped)

    indexed = sorted(index, key=lambda m: (-index[m], m))
    exact = exact_task_scores(run_list)
    pairs = paired_results(
        {m: (exact or scores)[m] for m in indexed},
        exact_task_weights(categories_of) if exact is not None else task_weights(categories_of),
        alpha=alpha,
        workers=workers,
    )
    better = significantly_better_pairs(pairs)
    ranges = rank_ranges(indexed, better)
    costs = {
        m: cost_per_success([r.cost_usd for r in rs], [r.score for r in rs])
        for m, rs in by_model.items()
    }
    dominated_by: dict[str, list[str]] = defaultdict(list)
    for winner, loser in sorted(better):
        if dominates(True, costs[winner][1], costs[loser][1]):  # exact Decimal costs
            dominated_by[loser].append(winner)
    dominating: dict[str, list[str]] = defaultdict(list)
    for loser, winners in dominated_by.items():
        for winner in winners:
            dominating[winner].append(loser)

    order = indexed + sorted(set(scores) - set(index))
    models = []
    for model in order:
        rank = ranges.get(model)
        interval = intervals.get(model)
        models.append(
            NavigatorModel(
                model=model,
                index=index.get(model),
                categories=category_scores[model],
                tasks=len(scores[model]),
                runs=len(by_model[model]),
                rank_best=None if rank is None else rank.rank_best,
                rank_worst=None if rank is None else rank.rank_worst,
                tied=None if rank is None else rank.tied,
                candidate_cost_usd=costs[model][0],
                cost_per_success_usd=costs[model][1],
                dominated_by=tuple(sorted(dominated_by[model])),
                dominates=tuple(sorted(dominating[model])),
                index_low=None if interval is None else interval[0],
                index_high=None if interval is None else interval[1],
            )
        )
    return NavigatorBoard(models=tuple(models), pairs=tuple(pairs))


# Classic v1 fit ------------------------------------------------------------------------------


@dataclass(frozen=True)
class V1Call:
    """One judged v1 call of a model on a task.

    Attributes:
        model: The model.
        task: The v1 task.
        displayed_overall: The overall a reader is shown (0–5), from
            `bench_pipeline.grading.navigator_v1.display_overall`.
        cost_usd: The call's measured cost; None when it was not recorded.
    """

    model: str
    task: str
    displayed_overall: float
    cost_usd: Decimal | None

    def __post_init__(self) -> None:
        if not 0.0 <= self.displayed_overall <= 5.0:
            raise ValueError(f"a displayed overall is 0–5, got {self.displayed_overall}")
        if self.cost_usd is not None and (
            not isinstance(self.cost_usd, Decimal) or self.cost_usd < 0
        ):
            raise ValueError("cost_usd must be a non-negative Decimal")


@dataclass(frozen=True)
class V1Fit:
    """One row of `navigator_v1_fit`."""

    rank: int
    model: str
    task: str
    displayed_overall: float
    """Mean displayed overall of the model's calls on the task."""
    calls: int
    mean_cost_per_call_usd: Decimal
    monthly_cost_usd: Decimal
    monthly_volume: int
    monthly_budget_usd: Decimal


def v1_fit_rows(
    task: str, monthly_volume: int, monthly_budget: Decimal, rows: Iterable[V1Call]
) -> list[V1Fit]:
    """The v1 fit ranking for one task, volume and budget (see `v1_fit`)."""
    if monthly_volume < 0:
        raise ValueError("monthly_volume must not be negative")
    if not isinstance(monthly_budget, Decimal) or monthly_budget < 0:
        raise ValueError("monthly_budget must be a non-negative Decimal")
    calls: dict[str, list[V1Call]] = defaultdict(list)
    for row in rows:
        if row.task == task:
            calls[row.model].append(row)
    fits = []
    with exact():
        for model, model_calls in calls.items():
            costs = [c.cost_usd for c in model_calls]
            if any(c is None for c in costs):
                continue  # an unknown cost cannot be shown to fit
            total = sum((c for c in costs if c is not None), Decimal(0))
            n = len(model_calls)
            # volume × total / n ≤ budget, compared exactly as volume × total ≤ budget × n
            if monthly_volume * total > monthly_budget * n:
                continue
            overall = math.fsum(c.displayed_overall for c in model_calls) / n
            monthly = monthly_volume * total / n
            fits.append((overall, monthly, model, n, total / n))
    fits.sort(key=lambda f: (-f[0], f[1], f[2]))
    return [
        V1Fit(
            rank=position,
            model=model,
            task=task,
            displayed_overall=overall,
            calls=n,
            mean_cost_per_call_usd=_to_quantum(mean),
            monthly_cost_usd=_to_quantum(monthly),
            monthly_volume=monthly_volume,
            monthly_budget_usd=monthly_budget,
        )
        for position, (overall, monthly, model, n, mean) in enumerate(fits, start=1)
    ]


def v1_fit(
    task: str, monthly_volume: int, monthly_budget: Decimal, rows: Iterable[V1Call]
) -> pl.DataFrame:
    """`navigator_v1_fit`: which models fit one task at one monthly volume and budget.

    A model fits when monthly volume × its mean cost per call on the task is at most the
    budget (compared exactly); a model with any call of unknown cost is left out. Fits are
    ordered by displayed overall (the mean over the model's calls, highest first), then by
    lower monthly cost, then by name. Costs are published as strings, divided ones
    rounded half-even to 10⁻¹² USD.
    """
    fits = v1_fit_rows(task, monthly_volume, monthly_budget, rows)
    return pl.DataFrame(
        [
            {
                **f.__dict__,
                "mean_cost_per_call_usd": format_usd(f.mean_cost_per_call_usd),
                "monthly_cost_usd": format_usd(f.monthly_cost_usd),
                "monthly_budget_usd": format_usd(f.monthly_budget_usd),
            }
            for f in fits
        ],
        schema={
            "rank": pl.Int64,
            "model": pl.String,
            "task": pl.String,
            "displayed_overall": pl.Float64,
            "calls": pl.Int64,
            "mean_cost_per_call_usd": pl.String,
            "monthly_cost_usd": pl.String,
            "monthly_volume": pl.Int64,
            "monthly_budget_usd": pl.String,
        },
        orient="row",
    )


__all__ = [
    "CATEGORY_WEIGHTS",
    "NavigatorBoard",
    "NavigatorModel",
    "NavigatorRun",
    "V1Call",
    "V1Fit",
    "cost_per_success",
    "exact_task_scores",
    "exact_task_weights",
    "navigator_board",
    "paired_results",
    "task_scores",
    "task_weights",
    "v1_fit",
    "v1_fit_rows",
]
