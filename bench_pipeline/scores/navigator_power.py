"""The Navigator Index's resolution: the smallest index gap its own data separates, by
simulation (`scores.card.resolution_continuous`), published instead of a rule of thumb.

The index is Σ_t a_t x[m, t] (a_t the task's weight, `navigator.task_weights`, summing to
100; x the task score 0–1), which is the mean over the T tasks of y[m, t] = T a_t x[m, t].
The board's pair test (the sign-flip test of the weighted task differences) is the same test
on the differences of y, so the card's simulation runs on y unchanged, in index points. A
model better by g points on every task's score moves y by g T a_t ÷ 100 on task t: the
simulated shift is spread over the tasks in proportion to their weights. The threshold is
the board's Holm threshold for the next pair, α ÷ (pairs − established).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from bench_pipeline.scores.card import ALPHA, SEED, Resolution, resolution_continuous
from bench_pipeline.scores.navigator import task_weights


def navigator_resolution(
    scores: Mapping[str, Mapping[str, float]],
    task_categories: Mapping[str, str],
    indexed: Sequence[str],
    pairs_total: int,
    pairs_established: int,
    *,
    alpha: float = ALPHA,
    seed: int = SEED,
) -> Resolution | None:
    """The gaps (index points) the board separates half the time and four times in five;
    None with fewer than two indexed models."""
    if len(indexed) < 2 or not task_categories:
        return None
    weights = task_weights(task_categories)
    tasks = sorted(weights)
    scale = np.array([len(tasks) * weights[t] for t in tasks])
    values = np.full((len(indexed), len(tasks)), np.nan)
    for row, model in enumerate(indexed):
        for column, task in enumerate(tasks):
            if task in scores[model]:
                values[row, column] = scale[column] * float(scores[model][task])
    threshold = alpha / max(1, pairs_total - pairs_established)
    return resolution_continuous(values, threshold, seed=seed, shift=scale / 100.0)


def resolution_frame(found: Resolution | None, models: int, tasks: int) -> pl.DataFrame:
    """`navigator_resolution`: one row when there is a figure, none otherwise."""
    rows = (
        []
        if found is None
        else [
            {"models": models, "tasks": tasks, "gap_50": found.gap_50, "gap_80": found.gap_80,
             "threshold": found.threshold, "replicates": found.replicates, "test": found.test}
        ]
    )  # fmt: skip
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "models": pl.Int64, "tasks": pl.Int64, "gap_50": pl.Float64, "gap_80": pl.Float64,
    "threshold": pl.Float64, "replicates": pl.Int64, "test": pl.String,
}  # fmt: skip

__all__ = ["SCHEMA", "navigator_resolution", "resolution_frame"]
