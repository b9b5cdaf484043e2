"""Tests for score normalisation, the Known Good Index and the capability indices.

Expected values are computed by hand in the comments next to each case.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench_pipeline.indices.rules import (
    CAPABILITY_INDICES,
    KNOWN_GOOD_COMPONENTS,
    IndexDefinition,
    capability_indices,
    default_min_components,
    index_value,
    known_good_index,
    normalise,
)
from bench_pipeline.ingest.catalog import evaluations

pytestmark = pytest.mark.unit

# The directions the pipeline uses, from sources/evaluations.toml.
DIRECTIONS = {spec.id: spec.direction for spec in evaluations()}


def scores_frame(rows: list[tuple[str, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"model_id": pl.String, "evaluation_id": pl.String, "score": pl.Float64},
        orient="row",
    )


def normalised_frame(values: dict[str, dict[str, float]]) -> pl.DataFrame:
    """Build a normalised long frame from {model_id: {evaluation_id: value}}."""
    rows = [(m, e, v) for m, evals in values.items() for e, v in evals.items()]
    return pl.DataFrame(
        rows,
        schema={"model_id": pl.String, "evaluation_id": pl.String, "normalised": pl.Float64},
        orient="row",
    )


def normalised_lookup(frame: pl.DataFrame) -> dict[tuple[str, str], float]:
    return {
        (m, e): v for m, e, v in frame.select("model_id", "evaluation_id", "normalised").iter_rows()
    }


def row_of(frame: pl.DataFrame, model_id: str) -> dict[str, object]:
    rows = frame.filter(pl.col("model_id") == model_id).to_dicts()
    assert len(rows) == 1
    return rows[0]


# --- normalise ---------------------------------------------------------------


def test_lower_is_better_is_inverted_before_min_max() -> None:
    # Calibration errors 10, 30, 50: negate to -10, -30, -50; min -50, max -10.
    # a: (-10 + 50) / 40 = 1.0; b: (-30 + 50) / 40 = 0.5; c: 0.0.
    scores = scores_frame(
        [
            ("a", "hle_calibration_error", 10.0),
            ("b", "hle_calibration_error", 30.0),
            ("c", "hle_calibration_error", 50.0),
        ]
    )
    got = normalised_lookup(normalise(scores, DIRECTIONS))
    assert got[("a", "hle_calibration_error")] == 1.0
    assert got[("b", "hle_calibration_error")] == 0.5
    assert got[("c", "hle_calibration_error")] == 0.0


def test_three_holder_min_max() -> None:
    # GPQA 40, 55, 90: min 40, max 90, range 50 -> 0.0, 15/50 = 0.3, 1.0.
    scores = scores_frame(
        [("a", "gpqa_diamond", 40.0), ("b", "gpqa_diamond", 55.0), ("c", "gpqa_diamond", 90.0)]
    )
    got = normalised_lookup(normalise(scores, DIRECTIONS))
    assert got[("a", "gpqa_diamond")] == 0.0
    assert got[("b", "gpqa_diamond")] == pytest.approx(0.3)
    assert got[("c", "gpqa_diamond")] == 1.0


def test_single_holder_gets_half() -> None:
    scores = scores_frame([("a", "terminal_bench", 37.5)])
    assert normalised_lookup(normalise(scores, DIRECTIONS)) == {("a", "terminal_bench"): 0.5}


def test_all_equal_holders_get_half() -> None:
    scores = scores_frame([("a", "hle", 12.0), ("b", "hle", 12.0), ("c", "hle", 12.0)])
    got = normalise(scores, DIRECTIONS).get_column("normalised").to_list()
    assert got == [0.5, 0.5, 0.5]


def test_each_evaluation_is_normalised_separately() -> None:
    # math_aime: 20 -> 0.0, 80 -> 1.0. hle alone for c -> 0.5; it does not
    # join math_aime's range.
    scores = scores_frame([("a", "math_aime", 20.0), ("b", "math_aime", 80.0), ("c", "hle", 99.0)])
    got = normalised_lookup(normalise(scores, DIRECTIONS))
    assert got == {("a", "math_aime"): 0.0, ("b", "math_aime"): 1.0, ("c", "hle"): 0.5}


def test_output_keeps_rows_order_and_extra_columns() -> None:
    scores = scores_frame([("b", "hle", 2.0), ("a", "hle", 1.0)]).with_columns(
        source=pl.lit("epoch")
    )
    out = normalise(scores, DIRECTIONS)
    assert out.columns == ["model_id", "evaluation_id", "score", "source", "normalised"]
    assert out.schema["normalised"] == pl.Float64
    assert out.get_column("model_id").to_list() == ["b", "a"]
    assert out.get_column("normalised").to_list() == [1.0, 0.0]


def test_integer_scores_are_accepted() -> None:
    scores = pl.DataFrame(
        {"model_id": ["a", "b"], "evaluation_id": ["hle", "hle"], "score": [1, 3]}
    )
    assert normalise(scores, DIRECTIONS).get_column("normalised").to_list() == [0.0, 1.0]


def test_missing_direction_raises_naming_the_evaluation() -> None:
    scores = scores_frame([("a", "mystery_eval", 1.0), ("a", "hle", 1.0)])
    with pytest.raises(ValueError, match="mystery_eval"):
        normalise(scores, DIRECTIONS)


def test_invalid_direction_value_raises() -> None:
    scores = scores_frame([("a", "hle", 1.0)])
    with pytest.raises(ValueError, match="hle"):
        normalise(scores, {"hle": "up"})


def test_duplicate_pair_raises() -> None:
    scores = scores_frame([("a", "hle", 1.0), ("a", "hle", 2.0)])
    with pytest.raises(ValueError, match="more than one row"):
        normalise(scores, DIRECTIONS)


def test_null_score_raises() -> None:
    scores = pl.DataFrame(
        {"model_id": ["a"], "evaluation_id": ["hle"], "score": [None]},
        schema={"model_id": pl.String, "evaluation_id": pl.String, "score": pl.Float64},
    )
    with pytest.raises(ValueError, match="null"):
        normalise(scores, DIRECTIONS)


def test_nan_score_raises() -> None:
    scores = scores_frame([("a", "hle", float("nan"))])
    with pytest.raises(ValueError, match="NaN"):
        normalise(scores, DIRECTIONS)


def test_missing_column_raises() -> None:
    with pytest.raises(ValueError, match="score"):
        normalise(pl.DataFrame({"model_id": ["a"], "evaluation_id": ["hle"]}), DIRECTIONS)


@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["hle", "hle_calibration_error"]),
)
def test_normalised_values_span_zero_to_one(raw: list[float], evaluation: str) -> None:
    scores = scores_frame([(f"m{i}", evaluation, v) for i, v in enumerate(raw)])
    values = normalise(scores, DIRECTIONS).get_column("normalised").to_list()
    assert all(0.0 <= v <= 1.0 for v in values)
    if len(set(raw)) == 1:
        assert set(values) == {0.5}
    else:
        best = max(raw) if evaluation == "hle" else min(raw)
        worst = min(raw) if evaluation == "hle" else max(raw)
        assert values[raw.index(best)] == 1.0
        assert values[raw.index(worst)] == 0.0


# --- index_value (rounding) ----------------------------------------------------


def test_index_value_two_thirds() -> None:
    # mean(1, 1, 0) = 2/3 -> 66.666... -> 66.67
    assert index_value([1.0, 1.0, 0.0]) == 66.67


def test_index_value_rounds_ties_up() -> None:
    # mean(0.0025, 0) = 0.00125 -> 0.125 -> 0.13 (half-to-even would give 0.12)
    assert index_value([0.0025, 0.0]) == 0.13


def test_index_value_is_free_of_float_artefacts() -> None:
    # mean = 0.02345 -> 2.345 -> 2.35 (100 * 0.02345 in binary floats is
    # 2.3449999999999998, which would round to 2.34)
    assert index_value([0.02345, 0.02345, 0.02345]) == 2.35


def test_index_value_needs_a_component() -> None:
    with pytest.raises(ValueError):
        index_value([])


# --- Known Good Index ----------------------------------------------------------

KGI_COLUMNS = [
    "model_id",
    "known_good_index",
    "index_components",
    "eligible",
    *KNOWN_GOOD_COMPONENTS,
]


def test_known_good_index_columns_and_types() -> None:
    out = known_good_index(
        normalised_frame({"a": {"gpqa_diamond": 0.5, "math_aime": 0.5, "livebench": 0.5}})
    )
    assert out.columns == KGI_COLUMNS
    assert out.schema["known_good_index"] == pl.Float64
    assert out.schema["index_components"] == pl.Int64
    assert out.schema["eligible"] == pl.Boolean
    assert all(out.schema[c] == pl.Float64 for c in KNOWN_GOOD_COMPONENTS)


def test_minimal_eligible_model() -> None:
    # mean(0.5, 1.0, 0.0) = 0.5 -> 50.0
    out = known_good_index(
        normalised_frame({"a": {"gpqa_diamond": 0.5, "math_aime": 1.0, "livebench": 0.0}})
    )
    assert row_of(out, "a") == {
        "model_id": "a",
        "known_good_index": 50.0,
        "index_components": 3,
        "eligible": True,
        "gpqa_diamond": 0.5,
        "math_aime": 1.0,
        "swe_bench_verified": None,
        "livebench": 0.0,
        "terminal_bench": None,
        "hle": None,
    }


def test_hle_never_makes_a_model_eligible() -> None:
    out = known_good_index(
        normalised_frame({"a": {"gpqa_diamond": 0.9, "math_aime": 0.8, "hle": 0.7}})
    )
    row = row_of(out, "a")
    assert row["eligible"] is False
    assert row["known_good_index"] is None
    assert row["index_components"] == 3
    assert row["hle"] == 0.7


@pytest.mark.parametrize("coding", ["swe_bench_verified", "livebench", "terminal_bench"])
def test_any_coding_component_completes_eligibility(coding: str) -> None:
    # mean(0.2, 0.4, 0.6) = 0.4 -> 40.0
    out = known_good_index(
        normalised_frame({"a": {"gpqa_diamond": 0.2, "math_aime": 0.4, coding: 0.6}})
    )
    row = row_of(out, "a")
    assert row["eligible"] is True
    assert row["known_good_index"] == 40.0


@pytest.mark.parametrize(
    ("held", "reason"),
    [
        ({"math_aime": 1.0, "swe_bench_verified": 1.0, "hle": 1.0}, "no science"),
        ({"gpqa_diamond": 1.0, "swe_bench_verified": 1.0, "livebench": 1.0}, "no maths"),
        ({"gpqa_diamond": 1.0, "math_aime": 1.0}, "no coding"),
        ({"gpqa_diamond": 1.0, "math_aime": 1.0, "livebench_coding": 1.0}, "not a KGI part"),
    ],
)
def test_missing_domain_is_ineligible(held: dict[str, float], reason: str) -> None:
    row = row_of(known_good_index(normalised_frame({"a": held})), "a")
    assert row["eligible"] is False, reason
    assert row["known_good_index"] is None, reason


def test_model_with_all_six_components() -> None:
    # mean(0.1, 0.2, 0.3, 0.4, 0.5, 0.6) = 2.1 / 6 = 0.35 -> 35.0
    values = dict(zip(KNOWN_GOOD_COMPONENTS, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], strict=True))
    row = row_of(known_good_index(normalised_frame({"a": values})), "a")
    assert row["known_good_index"] == 35.0
    assert row["index_components"] == 6
    assert row["eligible"] is True
    assert {c: row[c] for c in KNOWN_GOOD_COMPONENTS} == values


def test_hle_counts_toward_the_mean() -> None:
    # without hle: mean(1, 1, 1) = 100; with hle 0.0: mean(1, 1, 1, 0) = 75.0
    values = {"gpqa_diamond": 1.0, "math_aime": 1.0, "terminal_bench": 1.0, "hle": 0.0}
    row = row_of(known_good_index(normalised_frame({"a": values})), "a")
    assert row["known_good_index"] == 75.0
    assert row["index_components"] == 4


def test_known_good_index_rounds_to_two_decimals() -> None:
    # mean(1, 1, 0) = 2/3 -> 66.67
    values = {"gpqa_diamond": 1.0, "math_aime": 1.0, "swe_bench_verified": 0.0}
    assert (
        row_of(known_good_index(normalised_frame({"a": values})), "a")["known_good_index"] == 66.67
    )


def test_rows_only_for_holders_of_a_component_sorted_by_model() -> None:
    frame = normalised_frame(
        {
            "zeta": {"hle": 0.5},
            "alpha": {"gpqa_diamond": 0.5},
            "outsider": {"math_level5": 1.0, "hle_calibration_error": 0.2},
        }
    )
    out = known_good_index(frame)
    assert out.get_column("model_id").to_list() == ["alpha", "zeta"]
    assert out.get_column("index_components").to_list() == [1, 1]


def test_known_good_index_rejects_out_of_range_values() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        known_good_index(normalised_frame({"a": {"gpqa_diamond": 1.5}}))


def test_end_to_end_from_raw_scores() -> None:
    # gpqa: a 80, b 60 -> a 1.0, b 0.0; math_aime: a 50, b 70 -> a 0.0, b 1.0;
    # swe: a only -> 0.5; livebench: b only -> 0.5.
    # a: mean(1, 0, 0.5) = 0.5 -> 50.0; b: mean(0, 1, 0.5) = 0.5 -> 50.0
    scores = scores_frame(
        [
            ("a", "gpqa_diamond", 80.0),
            ("b", "gpqa_diamond", 60.0),
            ("a", "math_aime", 50.0),
            ("b", "math_aime", 70.0),
            ("a", "swe_bench_verified", 40.0),
            ("b", "livebench", 55.0),
        ]
    )
    out = known_good_index(normalise(scores, DIRECTIONS))
    assert out.get_column("known_good_index").to_list() == [50.0, 50.0]


# --- capability indices --------------------------------------------------------

CAPABILITY_COLUMNS = [
    "model_id",
    "coding_index",
    "agentic_index",
    "mathematics_index",
    "science_index",
    "reasoning_index",
]


def test_definitions_follow_the_general_rule() -> None:
    assert [d.name for d in CAPABILITY_INDICES] == CAPABILITY_COLUMNS[1:]
    for definition in CAPABILITY_INDICES:
        assert definition.min_components == default_min_components(len(definition.components))


@pytest.mark.parametrize(("count", "needed"), [(1, 1), (2, 2), (3, 2), (4, 2)])
def test_default_min_components(count: int, needed: int) -> None:
    assert default_min_components(count) == needed


def test_capability_columns_and_types() -> None:
    out = capability_indices(normalised_frame({"a": {"gpqa_diamond": 0.25}}))
    assert out.columns == CAPABILITY_COLUMNS
    assert all(out.schema[c] == pl.Float64 for c in CAPABILITY_COLUMNS[1:])


def test_reasoning_two_of_three() -> None:
    # hle 0.2 + gpqa 0.6 -> mean 0.4 -> 40.0; hle alone -> NULL
    frame = normalised_frame({"both": {"hle": 0.2, "gpqa_diamond": 0.6}, "hle_only": {"hle": 0.9}})
    out = capability_indices(frame)
    assert row_of(out, "both")["reasoning_index"] == 40.0
    assert row_of(out, "hle_only")["reasoning_index"] is None


def test_coding_two_of_three() -> None:
    # swe 0.5 + livebench_coding 1.0 -> 75.0; all three (0.5, 1.0, 0.0) -> 50.0
    frame = normalised_frame(
        {
            "two": {"swe_bench_verified": 0.5, "livebench_coding": 1.0},
            "three": {"swe_bench_verified": 0.5, "livebench_coding": 1.0, "terminal_bench": 0.0},
            "one": {"livebench_coding": 1.0},
        }
    )
    out = capability_indices(frame)
    assert row_of(out, "two")["coding_index"] == 75.0
    assert row_of(out, "three")["coding_index"] == 50.0
    assert row_of(out, "one")["coding_index"] is None


def test_agentic_needs_both() -> None:
    # terminal 0.3 + swe 0.4 -> 35.0; terminal alone -> NULL
    frame = normalised_frame(
        {
            "both": {"terminal_bench": 0.3, "swe_bench_verified": 0.4},
            "terminal_only": {"terminal_bench": 1.0},
        }
    )
    out = capability_indices(frame)
    assert row_of(out, "both")["agentic_index"] == 35.0
    assert row_of(out, "terminal_only")["agentic_index"] is None


def test_mathematics_needs_both() -> None:
    # aime 1.0 + level5 0.0 -> 50.0; level5 alone -> NULL
    frame = normalised_frame(
        {"both": {"math_aime": 1.0, "math_level5": 0.0}, "level5": {"math_level5": 0.8}}
    )
    out = capability_indices(frame)
    assert row_of(out, "both")["mathematics_index"] == 50.0
    assert row_of(out, "level5")["mathematics_index"] is None


def test_science_needs_gpqa() -> None:
    # gpqa 0.123 -> 12.3; no gpqa -> NULL
    frame = normalised_frame({"a": {"gpqa_diamond": 0.123}, "b": {"hle": 1.0}})
    out = capability_indices(frame)
    assert row_of(out, "a")["science_index"] == 12.3
    assert row_of(out, "b")["science_index"] is None


def test_capability_rounding() -> None:
    # reasoning over hle 1, livebench_reasoning 0, gpqa 0 -> 1/3 -> 33.33
    frame = normalised_frame({"a": {"hle": 1.0, "livebench_reasoning": 0.0, "gpqa_diamond": 0.0}})
    assert row_of(capability_indices(frame), "a")["reasoning_index"] == 33.33


def test_capability_rows_cover_every_component_holder_only() -> None:
    frame = normalised_frame(
        {"b": {"math_level5": 0.5}, "a": {"livebench_reasoning": 0.5}, "x": {"livebench": 1.0}}
    )
    out = capability_indices(frame)
    assert out.get_column("model_id").to_list() == ["a", "b"]
    assert out.drop("model_id").null_count().row(0) == (2, 2, 2, 2, 2)


def test_custom_definitions() -> None:
    custom = (IndexDefinition("hard_index", ("hle", "math_aime"), 1),)
    out = capability_indices(normalised_frame({"a": {"hle": 0.5}}), definitions=custom)
    assert out.columns == ["model_id", "hard_index"]
    assert row_of(out, "a")["hard_index"] == 50.0


@pytest.mark.parametrize(
    ("name", "components", "minimum"),
    [
        ("", ("hle",), 1),
        ("x", (), 1),
        ("x", ("hle", "hle"), 1),
        ("x", ("hle",), 0),
        ("x", ("hle", "gpqa_diamond"), 3),
    ],
)
def test_index_definition_validation(name: str, components: tuple[str, ...], minimum: int) -> None:
    with pytest.raises(ValueError):
        IndexDefinition(name, components, minimum)


def test_duplicate_definition_names_rejected() -> None:
    twice = (IndexDefinition("i", ("hle",), 1), IndexDefinition("i", ("gpqa_diamond",), 1))
    with pytest.raises(ValueError, match="unique"):
        capability_indices(normalised_frame({"a": {"hle": 0.5}}), definitions=twice)
