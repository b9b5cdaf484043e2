"""Property-based tests of the index family: normalise, known_good_index, capability_indices.

Populations are random: a handful of models, each holding a random subset of the ten
evaluations with random real scores (drawn partly from a small pool, so ties and
single-score evaluations are frequent). Example-based cases live in ``test_indices.py``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from bench_pipeline.core import settings as project_settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.indices.rules import (
    CAPABILITY_INDICES,
    KNOWN_GOOD_COMPONENTS,
    capability_indices,
    known_good_index,
    normalise,
)
from bench_pipeline.indices.store import compute
from bench_pipeline.ingest.catalog import evaluations

# The directions the pipeline uses, from sources/evaluations.toml.
DIRECTIONS = {spec.id: spec.direction for spec in evaluations()}
EVALUATIONS = tuple(DIRECTIONS)
CAPABILITY_COMPONENTS = frozenset(c for d in CAPABILITY_INDICES for c in d.components)
INDEX_COMPONENTS = CAPABILITY_COMPONENTS | set(KNOWN_GOOD_COMPONENTS)
# The methodology's eligibility rule, spelled out here rather than read from the module.
SCIENCE, MATHEMATICS = {"gpqa_diamond"}, {"math_aime"}
CODING = {"swe_bench_verified", "livebench", "terminal_bench"}
# Evaluations no index reads (today only hle_calibration_error).
OUTSIDE_EVERY_INDEX = tuple(e for e in EVALUATIONS if e not in INDEX_COMPONENTS)

PROPERTY_SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

Population = dict[str, dict[str, float]]

model_ids = st.text(alphabet="abcxyzAZ09-_:/.é", min_size=1, max_size=8)
scores = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 1.0, 12.5, 50.0, 99.99, 100.0]),  # ties
)
holdings = st.dictionaries(st.sampled_from(EVALUATIONS), scores, max_size=len(EVALUATIONS))
populations = st.dictionaries(model_ids, holdings, max_size=12)


def long_frame(population: Mapping[str, Mapping[str, float]]) -> pl.DataFrame:
    """The long score frame the pipeline reads: one row per (model, evaluation) held."""
    rows = [(m, e, s) for m, held in population.items() for e, s in held.items()]
    return pl.DataFrame(
        rows,
        schema={"model_id": pl.String, "evaluation_id": pl.String, "score": pl.Float64},
        orient="row",
    )


def family(scores_frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The whole index family, as ``index_store.compute`` chains it."""
    normalised = normalise(scores_frame, DIRECTIONS)
    return normalised, known_good_index(normalised), capability_indices(normalised)


def by_pair(normalised: pl.DataFrame) -> pl.DataFrame:
    return normalised.sort("model_id", "evaluation_id")


def lookup(normalised: pl.DataFrame) -> dict[tuple[str, str], float]:
    return {
        (m, e): v for m, e, v in normalised.select("model_id", "evaluation_id", "normalised").rows()
    }


def row_of(frame: pl.DataFrame, model_id: str) -> dict[str, object] | None:
    rows = frame.filter(pl.col("model_id") == model_id).to_dicts()
    assert len(rows) <= 1
    return rows[0] if rows else None


# --- adding a model that holds nothing ------------------------------------------


@PROPERTY_SETTINGS
@given(populations, model_ids)
def test_a_model_holding_no_evaluation_changes_nothing(population: Population, new: str) -> None:
    """In the long frame such a model has no rows at all, so this pins down that the family
    is a deterministic function of the rows (e.g. group-by output order never leaks)."""
    assume(new not in population)
    before = family(long_frame(population))
    after = family(long_frame({**population, new: {}}))
    for old, new_frame in zip(before, after, strict=True):
        assert_frame_equal(new_frame, old, check_exact=True)
        assert new not in new_frame.get_column("model_id").to_list()


@pytest.fixture(scope="module")
def warehouse() -> Iterator[duckdb.DuckDBPyConnection]:
    """One migrated in-memory warehouse for the module; each example empties what it uses."""
    conn = duckdb.connect()
    migrate(conn, project_settings.migrations_dir())
    yield conn
    conn.close()


def load(conn: duckdb.DuckDBPyConnection, population: Population, registered: list[str]) -> None:
    """Replace the registry with ``registered`` and the scores with ``population``."""
    conn.execute("DELETE FROM models")
    conn.execute("DELETE FROM evaluation_scores")
    models = [[m, f"name of {m}", m] for m in registered]
    rows = [
        [m, e, s, DIRECTIONS[e], m, f"{m}-{e}"]
        for m, held in population.items()
        for e, s in held.items()
    ]
    if models:  # executemany refuses an empty list
        conn.executemany("INSERT INTO models VALUES (?, ?, NULL, 'test', ?, NULL)", models)
    if rows:
        conn.executemany(
            "INSERT INTO evaluation_scores "
            "VALUES (?, ?, ?, ?, NULL, ?, NULL, ?, 'f.csv', 'run-1', 1)",
            rows,
        )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(populations, model_ids)
def test_registering_a_model_without_scores_changes_no_computation(
    warehouse: duckdb.DuckDBPyConnection, population: Population, new: str
) -> None:
    """The pipeline path: the model is in ``models`` but has no ``evaluation_scores`` row."""
    assume(new not in population)
    load(warehouse, population, list(population))
    before = compute(warehouse, DIRECTIONS)
    load(warehouse, population, [*population, new])
    after = compute(warehouse, DIRECTIONS)
    assert after.computation_id == before.computation_id
    assert after.inputs_sha256 == before.inputs_sha256
    for name in ("normalised", "known_good", "capability"):
        old, new_frame = getattr(before, name), getattr(after, name)
        assert_frame_equal(new_frame, old, check_exact=True)
        assert new not in new_frame.get_column("model_id").to_list()


@PROPERTY_SETTINGS
@given(
    populations,
    model_ids,
    st.dictionaries(st.sampled_from(OUTSIDE_EVERY_INDEX), scores, min_size=1),
)
def test_a_model_holding_only_unindexed_evaluations_changes_no_index(
    population: Population, new: str, held: dict[str, float]
) -> None:
    assume(new not in population)
    normalised, known_good, capability = family(long_frame(population))
    normalised_after, known_good_after, capability_after = family(
        long_frame({**population, new: held})
    )
    assert_frame_equal(known_good_after, known_good, check_exact=True)
    assert_frame_equal(capability_after, capability, check_exact=True)
    # Only the evaluations the newcomer holds can move; every other normalised value stays.
    kept = pl.col("evaluation_id").is_in(list(held)).not_()
    assert_frame_equal(
        by_pair(normalised_after.filter(kept)), by_pair(normalised.filter(kept)), check_exact=True
    )


# --- row order -----------------------------------------------------------------


@PROPERTY_SETTINGS
@given(populations, st.randoms(use_true_random=False))
def test_the_family_is_invariant_to_row_order(population: Population, rng: random.Random) -> None:
    frame = long_frame(population)
    order = list(range(frame.height))
    rng.shuffle(order)
    shuffled = frame[order]
    normalised, known_good, capability = family(frame)
    normalised_s, known_good_s, capability_s = family(shuffled)
    assert_frame_equal(by_pair(normalised_s), by_pair(normalised), check_exact=True)
    assert_frame_equal(known_good_s.sort("model_id"), known_good.sort("model_id"), check_exact=True)
    assert_frame_equal(capability_s.sort("model_id"), capability.sort("model_id"), check_exact=True)


# --- ranges and consistency with what each model holds -------------------------


@PROPERTY_SETTINGS
@given(populations)
def test_values_stay_in_range_and_follow_the_holdings(population: Population) -> None:
    normalised, known_good, capability = family(long_frame(population))

    values = normalised.get_column("normalised").to_list()
    assert normalised.height == sum(len(held) for held in population.values())
    assert all(v is not None and 0.0 <= v <= 1.0 for v in values)

    index_columns = [
        known_good.get_column("known_good_index"),
        *(capability.get_column(d.name) for d in CAPABILITY_INDICES),
    ]
    for column in index_columns:
        for v in column.drop_nulls().to_list():
            assert 0.0 <= v <= 100.0
            assert round(v, 2) == v

    kgi_holders = sorted(
        m for m, held in population.items() if set(held) & {*KNOWN_GOOD_COMPONENTS}
    )
    assert known_good.get_column("model_id").to_list() == kgi_holders
    for row in known_good.iter_rows(named=True):
        held = population[row["model_id"]]
        eligible = all(set(held) & domain for domain in (SCIENCE, MATHEMATICS, CODING))
        assert 0 <= row["index_components"] <= 6
        assert row["index_components"] == sum(e in held for e in KNOWN_GOOD_COMPONENTS)
        assert row["eligible"] is eligible
        assert (row["known_good_index"] is None) == (not row["eligible"])

    capability_holders = sorted(
        m for m, held in population.items() if set(held) & CAPABILITY_COMPONENTS
    )
    assert capability.get_column("model_id").to_list() == capability_holders
    for row in capability.iter_rows(named=True):
        held = population[row["model_id"]]
        for definition in CAPABILITY_INDICES:
            count = sum(e in held for e in definition.components)
            assert (row[definition.name] is None) == (count < definition.min_components)


# --- monotonicity --------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    populations,
    st.data(),
    st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False),
)
def test_improving_a_score_never_lowers_that_model(
    population: Population, data: st.DataObject, step: float
) -> None:
    held_pairs = sorted((m, e) for m, held in population.items() for e in held)
    assume(held_pairs)
    model, evaluation = data.draw(st.sampled_from(held_pairs), label="improved")
    better = population[model][evaluation] + (step if DIRECTIONS[evaluation] == "higher" else -step)
    improved = {**population, model: {**population[model], evaluation: better}}

    normalised, known_good, capability = family(long_frame(population))
    normalised_after, known_good_after, capability_after = family(long_frame(improved))

    assert lookup(normalised_after)[model, evaluation] >= lookup(normalised)[model, evaluation]
    # Evaluations are normalised separately: nothing else about the model moves...
    before_others = {k: v for k, v in lookup(normalised).items() if k[1] != evaluation}
    after_others = {k: v for k, v in lookup(normalised_after).items() if k[1] != evaluation}
    assert after_others == before_others
    # ...so none of its published indices can fall (nor appear or vanish).
    for frame, frame_after, columns in (
        (known_good, known_good_after, ["known_good_index"]),
        (capability, capability_after, [d.name for d in CAPABILITY_INDICES]),
    ):
        row, row_after = row_of(frame, model), row_of(frame_after, model)
        assert (row is None) == (row_after is None)
        for column in columns if row is not None and row_after is not None else []:
            assert (row[column] is None) == (row_after[column] is None)
            if row[column] is not None:
                assert row_after[column] >= row[column]
