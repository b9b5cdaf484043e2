"""Every live source table's columns are described in the catalogue, from the table's own
rules (`ingest/tables.py`): type, record key or required, dates, intervals and checks."""

from __future__ import annotations

import pytest

from bench_pipeline.ingest.tables import TABLES

pytestmark = pytest.mark.unit


def test_every_column_of_every_live_table_is_described() -> None:
    for name, spec in TABLES.items():
        for column, dtype in spec.columns.items():
            described = spec.describe(column)
            assert described.startswith(str(dtype)), (name, column, described)
            assert ("record key" in described) == (column in spec.key), (name, column)


def test_a_description_states_the_rules_its_values_pass() -> None:
    arena = TABLES["arena_ratings"]
    assert arena.describe("rating") == (
        "Float64; required; within its own rating_low..rating_high; in_range(0, 5000)"
    )
    listing = TABLES["openrouter_models"]
    assert "a date no later than the run's day" in listing.describe("created_at")
    assert listing.describe("name") == "String; required; length at most 4,096 characters"
