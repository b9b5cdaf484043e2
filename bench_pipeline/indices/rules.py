"""Score normalisation and the composite indices published on the leaderboards.

The methodology has three steps:

1. :func:`normalise` puts every evaluation on a common 0..1 scale, separately
   per evaluation, across all models that hold a score for it.
2. :func:`known_good_index` averages six headline components into the Known
   Good Index, published only for models covering science, mathematics and
   coding.
3. :func:`capability_indices` applies the same averaging recipe to the smaller
   capability subsets listed in :data:`CAPABILITY_INDICES`.

Every index value is ``100 × mean`` of the normalised components a model holds,
rounded to two decimals by :func:`index_value` (see there for the exact
rounding rule).

The functions are plain and framework-free so that orchestration code can call
them and tests can exercise them directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext

import polars as pl

HIGHER = "higher"
"""Direction value: a larger raw score is better."""

LOWER = "lower"
"""Direction value: a smaller raw score is better (e.g. calibration error)."""

DIRECTIONS = frozenset({HIGHER, LOWER})
"""The only values accepted in a directions mapping."""

NEUTRAL_SCORE = 0.5
"""Normalised value given when an evaluation cannot spread its holders apart."""

KNOWN_GOOD_COMPONENTS: tuple[str, ...] = (
    "gpqa_diamond",
    "math_aime",
    "swe_bench_verified",
    "livebench",
    "terminal_bench",
    "hle",
)
"""The six evaluations averaged into the Known Good Index, in column order."""

KNOWN_GOOD_REQUIREMENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("science", ("gpqa_diamond",)),
    ("mathematics", ("math_aime",)),
    ("coding", ("swe_bench_verified", "livebench", "terminal_bench")),
)
"""Domains a model must cover to be eligible, each with the evaluations that count.

A model is eligible when it holds at least one evaluation of every domain.
``hle`` is deliberately absent: it contributes to the mean but never to
eligibility.
"""

_INDEX_PLACES = Decimal("0.01")
_DECIMAL_PRECISION = 50


@dataclass(frozen=True)
class IndexDefinition:
    """One capability index: which evaluations it averages and how many it needs.

    Attributes:
        name: Output column name, e.g. ``"coding_index"``.
        components: Evaluation ids averaged into the index, without repeats.
        min_components: How many of ``components`` a model must hold before the
            index is published for it; between 1 and ``len(components)``.

    Raises:
        ValueError: If the name is empty, the components are empty or repeated,
            or ``min_components`` is outside ``1..len(components)``.
    """

    name: str
    components: tuple[str, ...]
    min_components: int

    def __post_init__(self) -> None:
        """Validate the definition and freeze ``components`` into a tuple."""
        components = tuple(self.components)
        object.__setattr__(self, "components", components)
        if not self.name:
            raise ValueError("index definition needs a non-empty name")
        if not components:
            raise ValueError(f"index {self.name!r} has no components")
        if len(set(components)) != len(components):
            raise ValueError(f"index {self.name!r} lists a component more than once")
        if not 1 <= self.min_components <= len(components):
            raise ValueError(
                f"index {self.name!r}: min_components must be between 1 and "
                f"{len(components)}, got {self.min_components}"
            )


def default_min_components(component_count: int) -> int:
    """Return how many components the methodology requires for a subset size.

    The general rule: a subset of three or more components needs two of them;
    a subset of one or two components needs all of them.

    Args:
        component_count: Number of components in the subset (at least 1).

    Returns:
        The minimum number of components a model must hold.

    Raises:
        ValueError: If ``component_count`` is below 1.
    """
    if component_count < 1:
        raise ValueError(f"an index needs at least one component, got {component_count}")
    return 2 if component_count >= 3 else component_count


CAPABILITY_INDICES: tuple[IndexDefinition, ...] = (
    IndexDefinition(
        name="coding_index",
        components=("swe_bench_verified", "livebench_coding", "terminal_bench"),
        min_components=2,
    ),
    IndexDefinition(
        name="agentic_index",
        components=("terminal_bench", "swe_bench_verified"),
        min_components=2,
    ),
    IndexDefinition(
        name="mathematics_index",
        components=("math_aime", "math_level5"),
        min_components=2,
    ),
    IndexDefinition(
        name="science_index",
        components=("gpqa_diamond",),
        min_components=1,
    ),
    IndexDefinition(
        name="reasoning_index",
        components=("hle", "livebench_reasoning", "gpqa_diamond"),
        min_components=2,
    ),
)
"""The published capability indices, in output column order."""


def normalise(scores: pl.DataFrame, directions: Mapping[str, str]) -> pl.DataFrame:
    """Min-max normalise raw scores to 0..1, separately for each evaluation.

    For each evaluation, over every model holding a score for it: scores of a
    lower-is-better evaluation are negated first, so that 1.0 is always the
    best holder and 0.0 the worst; then ``(x - min) / (max - min)`` is applied.
    When an evaluation has a single holder, or all its holders share one score,
    there is no spread to measure and every holder gets 0.5.

    Args:
        scores: Columns ``model_id`` (str), ``evaluation_id`` (str) and
            ``score`` (numeric); one row per model and evaluation, no nulls or
            NaN. Extra columns are carried through unchanged.
        directions: Maps each evaluation id to ``"higher"`` or ``"lower"``
            (which way is better). Ids not present in ``scores`` are allowed.

    Returns:
        ``scores`` in its original row order with a Float64 column
        ``normalised`` appended.

    Raises:
        ValueError: If a column is missing, a value is null or NaN, a
            ``(model_id, evaluation_id)`` pair repeats, a direction is neither
            ``"higher"`` nor ``"lower"``, or an evaluation id in ``scores`` has
            no direction (the message names the missing ids).
    """
    _check_long_frame(scores, "score")
    bad_directions = sorted(k for k, v in directions.items() if v not in DIRECTIONS)
    if bad_directions:
        raise ValueError(
            "direction must be 'higher' or 'lower' for evaluation id(s): "
            + ", ".join(bad_directions)
        )
    present = scores.get_column("evaluation_id").unique().to_list()
    missing = sorted(e for e in present if e not in directions)
    if missing:
        raise ValueError("no direction configured for evaluation id(s): " + ", ".join(missing))

    lower_ids = pl.Series([e for e in present if directions[e] == LOWER], dtype=pl.String)
    raw = pl.col("score").cast(pl.Float64)
    oriented = pl.when(pl.col("evaluation_id").is_in(lower_ids)).then(-raw).otherwise(raw)
    low = oriented.min().over("evaluation_id")
    high = oriented.max().over("evaluation_id")
    normalised = (
        pl.when(high == low)
        .then(pl.lit(NEUTRAL_SCORE, dtype=pl.Float64))
        .otherwise((oriented - low) / (high - low))
    )
    return scores.with_columns(normalised.cast(pl.Float64).alias("normalised"))


def index_value(values: Iterable[float]) -> float:
    """Turn the normalised components a model holds into a published index value.

    The value is ``100 × mean(values)`` rounded to two decimals. Rounding rule:
    each normalised value is read as its shortest round-trip decimal form
    (Python ``repr``), the mean and the multiplication by 100 are done in
    :class:`decimal.Decimal` arithmetic (50 significant digits), and the result
    is quantised to two decimals with ``ROUND_HALF_UP`` (ties go away from
    zero; all values here are non-negative, so ties go up). This reproduces a
    hand calculation on the printed values, free of binary floating-point
    artefacts (e.g. a mean of 0.02345 gives 2.35, not 2.34).

    Args:
        values: Normalised component values (at least one).

    Returns:
        The index value as a float with at most two decimals.

    Raises:
        ValueError: If ``values`` is empty.
    """
    decimals = [Decimal(repr(float(v))) for v in values]
    if not decimals:
        raise ValueError("an index value needs at least one component")
    with localcontext() as ctx:
        ctx.prec = _DECIMAL_PRECISION
        scaled = sum(decimals, Decimal(0)) * 100 / len(decimals)
        return float(scaled.quantize(_INDEX_PLACES, rounding=ROUND_HALF_UP))


def known_good_index(normalised: pl.DataFrame) -> pl.DataFrame:
    """Compute the Known Good Index from normalised scores.

    Only the six :data:`KNOWN_GOOD_COMPONENTS` are considered; other
    evaluations in the input are ignored. A model is eligible when it holds
    ``gpqa_diamond`` (science) and ``math_aime`` (mathematics) and at least one
    of ``swe_bench_verified``, ``livebench`` or ``terminal_bench`` (coding).
    ``hle`` is averaged in when held but never makes a model eligible. For an
    eligible model the index is :func:`index_value` of every component it holds
    (three to six of them); otherwise it is null.

    Args:
        normalised: Output of :func:`normalise` (at least ``model_id``,
            ``evaluation_id`` and ``normalised``; one row per pair).

    Returns:
        One row per model holding any of the six components, sorted by
        ``model_id``, with columns ``model_id`` (str), ``known_good_index``
        (Float64, null when ineligible), ``index_components`` (Int64, 0..6),
        ``eligible`` (Boolean), then one Float64 column per component named
        after its evaluation id (null when not held), in
        :data:`KNOWN_GOOD_COMPONENTS` order.

    Raises:
        ValueError: If the input is malformed (see :func:`normalise`) or holds
            a normalised value outside 0..1.
    """
    wide = _components_wide(normalised, KNOWN_GOOD_COMPONENTS)
    held = [pl.col(c).is_not_null() for c in KNOWN_GOOD_COMPONENTS]
    eligible = pl.all_horizontal(
        [
            pl.any_horizontal([pl.col(c).is_not_null() for c in group])
            for _, group in KNOWN_GOOD_REQUIREMENTS
        ]
    )
    wide = wide.with_columns(
        pl.sum_horizontal(held).cast(pl.Int64).alias("index_components"),
        eligible.alias("eligible"),
    )
    values = [
        index_value(v for v in row[1:] if v is not None) if row[0] else None
        for row in wide.select("eligible", *KNOWN_GOOD_COMPONENTS).iter_rows()
    ]
    wide = wide.with_columns(pl.Series("known_good_index", values, dtype=pl.Float64))
    return wide.select(
        "model_id", "known_good_index", "index_components", "eligible", *KNOWN_GOOD_COMPONENTS
    )


def capability_indices(
    normalised: pl.DataFrame,
    definitions: Sequence[IndexDefinition] = CAPABILITY_INDICES,
) -> pl.DataFrame:
    """Compute the capability indices from normalised scores.

    Each index is :func:`index_value` of the components a model holds from its
    definition, published only when the model holds at least
    ``min_components`` of them (null otherwise).

    Args:
        normalised: Output of :func:`normalise` (at least ``model_id``,
            ``evaluation_id`` and ``normalised``; one row per pair).
        definitions: Indices to compute; defaults to :data:`CAPABILITY_INDICES`.

    Returns:
        One row per model holding any component of any definition, sorted by
        ``model_id``, with ``model_id`` followed by one Float64 column per
        definition, in definition order.

    Raises:
        ValueError: If the input is malformed, a normalised value lies outside
            0..1, or two definitions share a name (or one is named
            ``model_id``).
    """
    names = [d.name for d in definitions]
    if len(set(names)) != len(names) or "model_id" in names:
        raise ValueError(f"index names must be unique and not 'model_id': {names}")
    components = tuple(dict.fromkeys(c for d in definitions for c in d.components))
    wide = _components_wide(normalised, components)
    columns = []
    for definition in definitions:
        values = []
        for row in wide.select(definition.components).iter_rows():
            held = [v for v in row if v is not None]
            values.append(index_value(held) if len(held) >= definition.min_components else None)
        columns.append(pl.Series(definition.name, values, dtype=pl.Float64))
    return wide.select("model_id").with_columns(columns)


def _check_long_frame(frame: pl.DataFrame, value_column: str) -> None:
    """Reject long-format input that breaks the one-row-per-pair contract.

    Args:
        frame: Frame with ``model_id``, ``evaluation_id`` and ``value_column``.
        value_column: Name of the numeric column to check.

    Raises:
        ValueError: On a missing column, a non-numeric value column, a null or
            NaN value, or a repeated ``(model_id, evaluation_id)`` pair.
    """
    required = ("model_id", "evaluation_id", value_column)
    absent = [c for c in required if c not in frame.columns]
    if absent:
        raise ValueError(f"missing column(s): {', '.join(absent)}")
    if not frame.schema[value_column].is_numeric():
        raise ValueError(f"column {value_column!r} must be numeric")
    nulls = [c for c in required if frame.get_column(c).null_count()]
    if nulls:
        raise ValueError(f"null values in column(s): {', '.join(nulls)}")
    values = frame.get_column(value_column).cast(pl.Float64)
    if values.is_nan().any():
        raise ValueError(f"NaN in column {value_column!r}")
    if frame.select("model_id", "evaluation_id").is_duplicated().any():
        raise ValueError("more than one row for a (model_id, evaluation_id) pair")


def _components_wide(normalised: pl.DataFrame, components: Sequence[str]) -> pl.DataFrame:
    """Pivot the given components of a normalised long frame to one row per model.

    Args:
        normalised: Long frame with ``model_id``, ``evaluation_id``, ``normalised``.
        components: Evaluation ids to keep, in output column order.

    Returns:
        ``model_id`` plus one Float64 column per component (null when the model
        does not hold it), one row per model holding any component, sorted by
        ``model_id``. Every component column exists even if nobody holds it.

    Raises:
        ValueError: If the frame is malformed or a value lies outside 0..1.
    """
    _check_long_frame(normalised, "normalised")
    values = normalised.get_column("normalised").cast(pl.Float64)
    if ((values < 0) | (values > 1)).any():
        raise ValueError("normalised values must lie between 0 and 1")
    selected = normalised.filter(
        pl.col("evaluation_id").is_in(pl.Series(list(components), dtype=pl.String))
    )
    value = pl.col("normalised").cast(pl.Float64)
    return (
        selected.group_by("model_id")
        .agg(value.filter(pl.col("evaluation_id") == c).first().alias(c) for c in components)
        .sort("model_id")
        .select(pl.col("model_id").cast(pl.String), *components)
    )


__all__ = [
    "CAPABILITY_INDICES",
    "DIRECTIONS",
    "HIGHER",
    "KNOWN_GOOD_COMPONENTS",
    "KNOWN_GOOD_REQUIREMENTS",
    "LOWER",
    "NEUTRAL_SCORE",
    "IndexDefinition",
    "capability_indices",
    "default_min_components",
    "index_value",
    "known_good_index",
    "normalise",
]
