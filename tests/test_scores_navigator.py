"""Navigator Index v2 and the v1 fit: expectations worked out by hand in the comments."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.core.stats import paired_comparisons
from bench_pipeline.scores.navigator import (
    CATEGORY_WEIGHTS,
    NavigatorRun,
    V1Call,
    cost_per_success,
    navigator_board,
    paired_results,
    task_weights,
    v1_fit,
)
from bench_pipeline.taskbank import NAVIGATOR_CATEGORIES

pytestmark = pytest.mark.unit

CATEGORIES = list(CATEGORY_WEIGHTS)


def nav(run_id: str, model: str, task: str, score: float, cost: str | None = "1") -> NavigatorRun:
    category = task.split("/")[0]
    return NavigatorRun(
        run_id=run_id,
        model=model,
        task=task,
        category=category,
        score=score,
        cost_usd=None if cost is None else Decimal(cost),
    )


def test_categories_and_weights() -> None:
    assert tuple(CATEGORY_WEIGHTS) == NAVIGATOR_CATEGORIES
    assert sum(CATEGORY_WEIGHTS.values()) == 100
    # two coding tasks and one writing task: a = 15 / 2 and 10 / 1
    weights = task_weights({"coding/a": "coding", "coding/b": "coding", "writing/a": "writing"})
    assert weights == {"coding/a": 7.5, "coding/b": 7.5, "writing/a": 10.0}


def test_index_only_when_every_category_is_scored() -> None:
    # x: one task per category at 1, .5, 1, 0, 1, .5, 1, .5 (the .5 ones as runs 1 and 0);
    # categories 100, 50, 100, 0, 100, 50, 100, 50;
    # Index = (15·100 + 15·50 + 10·100 + 15·0 + 15·100 + 10·50 + 10·100 + 10·50) / 100
    #       = (1500 + 750 + 1000 + 0 + 1500 + 500 + 1000 + 500) / 100 = 67.5
    task_score = dict(zip(CATEGORIES, [1, 0.5, 1, 0, 1, 0.5, 1, 0.5], strict=True))
    runs = []
    for category, value in task_score.items():
        task = f"{category}/t"
        if value == 0.5:
            runs += [nav(f"x-{task}-0", "x", task, 1.0), nav(f"x-{task}-1", "x", task, 0.0)]
        else:
            runs.append(nav(f"x-{task}", "x", task, float(value)))
        if category != "writing":  # y never ran a writing task
            runs.append(nav(f"y-{task}", "y", task, 1.0))
    board = navigator_board(runs)
    models = {m["model"]: m for m in board.navigator_models.to_dicts()}
    assert models["x"]["index"] == pytest.approx(67.5)
    assert models["x"]["reasoning"] == 0.0 and models["x"]["coding"] == 100.0
    assert models["y"]["index"] is None
    assert models["y"]["coding"] == 100.0 and models["y"]["writing"] is None
    assert (models["y"]["rank_best"], models["y"]["tied"]) == (None, None)
    assert (models["x"]["rank_best"], models["x"]["rank_worst"]) == (1, 1)  # alone: N = 1
    assert board.navigator_pairs.height == 0  # y takes no part in the paired tests


def test_category_is_the_mean_of_task_scores_not_of_runs() -> None:
    # coding/a: three runs 1, 1, 0 → 2/3; coding/b: one run 0 → 0.
    # coding = 100 × (2/3 + 0) / 2 = 33.33 (the run mean would be 50).
    runs = [
        nav("1", "x", "coding/a", 1.0),
        nav("2", "x", "coding/a", 1.0),
        nav("3", "x", "coding/a", 0.0),
        nav("4", "x", "coding/b", 0.0),
    ]
    model = navigator_board(runs).navigator_models.row(0, named=True)
    assert model["coding"] == pytest.approx(100 / 3)
    assert (model["tasks"], model["runs"]) == (2, 4)


def _three_models() -> list[NavigatorRun]:
    """Two tasks per category (16 tasks): a_t = 7.5 for weight-15 categories, 5 for 10.

    a: every run 1.0 at a cost of 1.     Index 100; cost per success 16 / 16 = 1.
    b: every run 0.5 at a cost of 1.     Index 50;  cost per success 16 / 8  = 2.
    c: 0.25 on the first task of each category and 0.75 on the second, at 0.1 a run.
       Index 50 (each category averages 0.5); cost per success 1.6 / 8 = 0.2.
    """
    runs = []
    for category in CATEGORIES:
        for k, c_score in enumerate((0.25, 0.75)):
            task = f"{category}/{k}"
            runs.append(nav(f"a-{task}", "a", task, 1.0, "1"))
            runs.append(nav(f"b-{task}", "b", task, 0.5, "1"))
            runs.append(nav(f"c-{task}", "c", task, c_score, "0.1"))
    return runs


def test_rank_ranges_ties_and_dominance() -> None:
    board = navigator_board(_three_models())
    pairs = {(p["model_a"], p["model_b"]): p for p in board.navigator_pairs.to_dicts()}
    # a − b = +0.5 on every task: D = 0.5 × Σ a_t = 0.5 × 100 = 50 (the Index difference).
    # All 16 differences have one sign, so only the observed signs and their mirror reach
    # |D|: p = 2 / 2^16 = 3.05e-5. Same for a − c (+0.75 / +0.25 on every task).
    assert pairs[("a", "b")]["statistic"] == pytest.approx(50.0)
    assert pairs[("a", "b")]["p_value"] == 2 / 2**16
    assert pairs[("a", "c")]["p_value"] == 2 / 2**16
    # b − c = +0.25 and −0.25 within each category, equal weights: D = 0, p = 1.
    assert pairs[("b", "c")]["statistic"] == pytest.approx(0.0)
    assert pairs[("b", "c")]["p_value"] == 1.0
    # Holm over 3 pairs: 3.05e-5 ≤ 0.05/3 and ≤ 0.05/2 are rejected; 1 > 0.05 is not.
    assert [pairs[k]["rejected"] for k in (("a", "b"), ("a", "c"), ("b", "c"))] == [
        True,
        True,
        False,
    ]
    assert pairs[("a", "b")]["better"] == "a" and pairs[("b", "c")]["better"] is None

    models = {m["model"]: m for m in board.navigator_models.to_dicts()}
    # a: best 1 + 0 = 1, worst 3 − 2 = 1. b and c: best 1 + 1 = 2, worst 3 − 0 = 3: tied.
    assert [
        (models[m]["rank_best"], models[m]["rank_worst"], models[m]["tied"]) for m in "abc"
    ] == [
        (1, 1, False),
        (2, 3, True),
        (2, 3, True),
    ]
    # a is better than both, but cheaper per success only than b (1 < 2; c costs 0.2).
    assert models["b"]["dominated_by"] == "a" and models["c"]["dominated_by"] == ""
    assert models["a"]["dominates"] == "b"
    assert [
        (models[m]["candidate_cost_usd"], models[m]["cost_per_success_usd"]) for m in "abc"
    ] == [
        ("16", "1"),
        ("16", "2"),
        ("1.6", "0.2"),
    ]


def test_tests_shared_among_processes_give_identical_results() -> None:
    # Random continuous scores for 6 models over 16 tasks (a model missing one task): two
    # processes must reproduce paired_comparisons exactly (navigator_board passes workers on).
    rng = np.random.default_rng(5)
    tasks = [f"{c}/{k}" for c in CATEGORIES for k in (0, 1)]
    scores = {
        f"m{i}": dict(zip(tasks, rng.uniform(0, 1, 16).tolist(), strict=True)) for i in range(6)
    }
    del scores["m3"]["coding/0"]
    weights = task_weights({t: t.split("/")[0] for t in tasks})
    assert paired_results(scores, weights, workers=2) == paired_comparisons(scores, weights)


def test_pairs_use_common_tasks_only() -> None:
    runs = _three_models()
    runs.append(nav("a-extra", "a", "coding/extra", 1.0))  # only a ran it
    runs = [r for r in runs if not (r.model == "c" and r.task == "writing/0")]
    frame = navigator_board(runs).navigator_pairs
    n_tasks = {(a, b): n for a, b, n in frame.select("model_a", "model_b", "n_tasks").rows()}
    assert n_tasks[("a", "b")] == 16  # coding/extra is not common
    assert n_tasks[("a", "c")] == 15  # nor is writing/0, which c did not run


def test_cost_per_successful_task() -> None:
    # 1 USD over runs scoring 0.5 + 1 + 1.5…: 1 / 3 = 0.333333333333 (rounded to 1e-12)
    total, per_success = cost_per_success([Decimal("0.25"), Decimal("0.75")], [1.0, 2.0])
    assert (total, per_success) == (Decimal(1), Decimal("0.333333333333"))
    # an unpriced run makes both unknown; nothing succeeded: no cost per success
    assert cost_per_success([Decimal(1), None], [1.0, 1.0]) == (None, None)
    assert cost_per_success([Decimal(2)], [0.0]) == (Decimal(2), None)
    # a vanishing success sum gives a huge (but exact to 1e-12) figure, not an error
    huge = cost_per_success([Decimal(1)], [5e-324])[1]
    assert huge is not None and huge > Decimal("1e323")
    runs = [nav("1", "x", "coding/a", 1.0, None), nav("2", "x", "coding/b", 1.0)]
    model = navigator_board(runs).navigator_models.row(0, named=True)
    assert model["candidate_cost_usd"] is None and model["cost_per_success_usd"] is None


def test_runs_are_checked() -> None:
    with pytest.raises(ValueError, match="0–1"):
        nav("1", "x", "coding/a", 1.5)
    with pytest.raises(ValueError, match="category"):
        nav("1", "x", "cooking/a", 1.0)
    with pytest.raises(ValueError, match="twice"):
        navigator_board([nav("1", "x", "coding/a", 1.0), nav("1", "y", "coding/a", 1.0)])
    with pytest.raises(ValueError, match="active task"):
        navigator_board([nav("1", "x", "coding/a", 1.0)], task_categories={"coding/b": "coding"})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=16, max_size=16))
def test_index_is_the_weighted_task_sum_and_stays_in_0_100(values: list[float]) -> None:
    runs = [
        nav(f"{category}/{k}", "x", f"{category}/{k}", values[2 * i + k])
        for i, category in enumerate(CATEGORIES)
        for k in (0, 1)
    ]
    index = navigator_board(runs).models[0].index
    assert index is not None and 0.0 <= index <= 100.0
    weights = task_weights({r.task: r.category for r in runs})
    expected = math.fsum(weights[r.task] * r.score for r in runs)
    assert index == pytest.approx(expected, abs=1e-9)


# v1 fit --------------------------------------------------------------------------------------


def _v1_calls() -> list[V1Call]:
    def call(model: str, overall: float, cost: str | None, task: str = "invoice") -> V1Call:
        return V1Call(model, task, overall, None if cost is None else Decimal(cost))

    return [
        call("m1", 4.0, "0.01"),
        call("m1", 4.0, "0.03"),  # mean 0.02 a call → 1,000 × 0.02 = 20 a month
        call("m2", 4.5, "0.05"),  # 50 a month: exactly the budget, fits
        call("m3", 4.0, "0.01"),  # 10 a month
        call("m4", 5.0, "0.2"),  # 200 a month: over budget
        call("m5", 5.0, None),  # unknown cost: cannot be shown to fit
        call("m6", 5.0, "0.001", task="receipt"),  # another task
    ]


def test_v1_fit_orders_by_displayed_overall_then_monthly_cost() -> None:
    fit = v1_fit("invoice", 1_000, Decimal(50), _v1_calls())
    assert fit.select("rank", "model", "displayed_overall", "monthly_cost_usd").rows() == [
        (1, "m2", 4.5, "50"),
        (2, "m3", 4.0, "10"),  # equal overall: the cheaper month first
        (3, "m1", 4.0, "20"),
    ]
    assert fit.filter(model="m1")["mean_cost_per_call_usd"].item() == "0.02"


def test_v1_fit_budget_filter() -> None:
    # 49.99 leaves m2 (50) out; a budget of 0 leaves nothing
    assert v1_fit("invoice", 1_000, Decimal("49.99"), _v1_calls())["model"].to_list() == [
        "m3",
        "m1",
    ]
    assert v1_fit("invoice", 1_000, Decimal(0), _v1_calls()).height == 0
    # a third of a cent per call: 3 × (1/3 cent) = 1 cent exactly fits a 1-cent budget
    thirds = [V1Call("t", "x", 3.0, Decimal("0.01")), *[V1Call("t", "x", 3.0, Decimal(0))] * 2]
    fit = v1_fit("x", 3, Decimal("0.01"), thirds)
    assert fit["model"].to_list() == ["t"]
    assert fit["mean_cost_per_call_usd"].item() == "0.003333333333"


def test_index_interval_worked_by_hand() -> None:
    """Two tasks per category. Model x scores 1 and 0 on coding's tasks and 1 and 1 on every
    other category's: coding 50, the rest 100, Index = (15·50 + 85·100) / 100 = 92.5.
    Coding's task scores have s = √((.5² + .5²) / 1) = √.5, so its standard error is
    100 × √.5 / √2 = 50; the other categories have none. The Index's standard error is
    15 / 100 × 50 = 7.5 and its interval 92.5 ± 1.96 × 7.5 = 77.80 .. 100 (clipped).
    A model with a one-task category has none."""
    runs, number = [], 0
    for category in CATEGORIES:
        for task, value in (("a", 1.0), ("b", 0.0 if category == "coding" else 1.0)):
            number += 1
            runs.append(nav(f"r{number}", "x", f"{category}/{task}", value))
    for category in CATEGORIES:
        number += 1
        runs.append(nav(f"r{number}", "y", f"{category}/a", 0.5))
    board = navigator_board(runs)
    x = next(m for m in board.models if m.model == "x")
    assert x.index == pytest.approx(92.5)
    assert (round(x.index_low, 2), x.index_high) == (77.80, 100.0)
    y = next(m for m in board.models if m.model == "y")
    assert y.index == pytest.approx(50.0) and (y.index_low, y.index_high) == (None, None)
    frame = board.navigator_models
    assert frame.filter(frame["model"] == "x")["index_low"].item() == pytest.approx(x.index_low)
