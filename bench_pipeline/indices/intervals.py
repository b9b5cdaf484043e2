"""95% intervals for the Known Good Index and the capability indices, propagated from the
standard errors the publisher states for each score (`site/methodology/indices.md`).

Method (first-order propagation, the delta method, with the normalisation scale held fixed):

- A component's normalised value is ``(x - L) / (H - L)``, where ``L`` and ``H`` are the
  weakest and strongest scores of the evaluation's holders. With the scale ``H - L`` taken as
  given, the normalised value's standard error is ``se(x) / (H - L)``.
- An evaluation whose holders do not spread (one holder, or all equal) gives every holder the
  fixed neutral value, which no score moves: its standard error is 0 and it needs none.
- Different evaluations are measured on different runs, so their errors are independent; an
  index of ``k`` held components, ``100 × mean``, has the standard error
  ``100 / k × sqrt(sum of the components' squared standard errors)``.
- The interval is the published value ± 1.96 standard errors, clipped to 0..100 and rounded
  to two decimals half up (as the values are, `rules.index_value`).

An index for which a held component's score carries no standard error (LiveBench publishes
none) has no interval: leaving that component's error out would draw an interval narrower than
the evidence supports. The components without one are named beside it (`without_stderr`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import polars as pl

from bench_pipeline.indices.rules import CAPABILITY_INDICES, KNOWN_GOOD_COMPONENTS, IndexDefinition

Z_95 = 1.959963984540054
"""The standard normal quantile of 0.975: a two-sided 95% interval."""

_PLACES = Decimal("0.01")


@dataclass(frozen=True)
class Component:
    """One score a model holds, as the interval needs it."""

    stderr: float | None
    """The publisher's standard error, in the score's units (None: not published)."""
    spread: float
    """``H - L`` of the evaluation's holders (0: no spread, the neutral value)."""

    @property
    def normalised_se(self) -> float | None:
        """The normalised value's standard error (None: unknown)."""
        if self.spread == 0:
            return 0.0
        if self.stderr is None:
            return None
        return self.stderr / self.spread


def _rounded(value: float) -> float:
    return float(Decimal(repr(value)).quantize(_PLACES, rounding=ROUND_HALF_UP))


def interval(value: float, components: Sequence[Component]) -> tuple[float, float] | None:
    """The 95% interval of an index `value` resting on `components` (see the module text);
    None when a component's standard error is unknown."""
    errors = [c.normalised_se for c in components]
    if not errors or any(e is None for e in errors):
        return None
    se = 100 / len(errors) * math.sqrt(sum(e * e for e in errors if e is not None))
    low = max(0.0, value - Z_95 * se)
    high = min(100.0, value + Z_95 * se)
    return _rounded(low), _rounded(high)


def components_by_model(scores: pl.DataFrame) -> dict[str, dict[str, Component]]:
    """Each model's components (`evaluation_id` → `Component`), from a long frame with
    `model_id`, `evaluation_id`, `score` and `stderr` (null when not published)."""
    spreads = dict(
        scores.group_by("evaluation_id")
        .agg((pl.col("score").max() - pl.col("score").min()).cast(pl.Float64).alias("spread"))
        .iter_rows()
    )
    held: dict[str, dict[str, Component]] = {}
    for model, evaluation, stderr in scores.select(
        "model_id", "evaluation_id", pl.col("stderr").cast(pl.Float64)
    ).iter_rows():
        held.setdefault(model, {})[evaluation] = Component(stderr, float(spreads[evaluation]))
    return held


def _without(held: Mapping[str, Component], evaluations: Sequence[str]) -> str | None:
    """The held evaluations among `evaluations` whose score has no standard error (it
    matters), comma-separated; None when there is none."""
    lacking = [e for e in evaluations if e in held and held[e].normalised_se is None]
    return ", ".join(lacking) or None


def _bounds(
    values: pl.Series, components: Mapping[str, dict[str, Component]], models: pl.Series,
    evaluations: Sequence[str],
) -> tuple[list[float | None], list[float | None]]:  # fmt: skip
    low: list[float | None] = []
    high: list[float | None] = []
    for model, value in zip(models.to_list(), values.to_list(), strict=True):
        held = components.get(model, {})
        found = (
            interval(value, [held[e] for e in evaluations if e in held])
            if value is not None
            else None
        )
        low.append(found[0] if found else None)
        high.append(found[1] if found else None)
    return low, high


def known_good_intervals(known_good: pl.DataFrame, scores: pl.DataFrame) -> pl.DataFrame:
    """`known_good` (`rules.known_good_index`) with `known_good_index_low`,
    `known_good_index_high` and `without_stderr` appended."""
    components = components_by_model(scores)
    models = known_good.get_column("model_id")
    low, high = _bounds(
        known_good.get_column("known_good_index"), components, models, KNOWN_GOOD_COMPONENTS
    )
    return known_good.with_columns(
        pl.Series("known_good_index_low", low, dtype=pl.Float64),
        pl.Series("known_good_index_high", high, dtype=pl.Float64),
        pl.Series(
            "without_stderr",
            [_without(components.get(m, {}), KNOWN_GOOD_COMPONENTS) for m in models.to_list()],
            dtype=pl.String,
        ),
    )


def capability_intervals(
    capability: pl.DataFrame,
    scores: pl.DataFrame,
    definitions: Sequence[IndexDefinition] = CAPABILITY_INDICES,
) -> pl.DataFrame:
    """`capability` (`rules.capability_indices`) with `<index>_low` and `<index>_high` for
    every index and `without_stderr` (over all their components) appended."""
    components = components_by_model(scores)
    models = capability.get_column("model_id")
    columns = []
    for definition in definitions:
        low, high = _bounds(
            capability.get_column(definition.name), components, models, definition.components
        )
        columns += [
            pl.Series(f"{definition.name}_low", low, dtype=pl.Float64),
            pl.Series(f"{definition.name}_high", high, dtype=pl.Float64),
        ]
    every = tuple(dict.fromkeys(c for d in definitions for c in d.components))
    columns.append(
        pl.Series(
            "without_stderr",
            [_without(components.get(m, {}), every) for m in models.to_list()],
            dtype=pl.String,
        )
    )
    return capability.with_columns(columns)
