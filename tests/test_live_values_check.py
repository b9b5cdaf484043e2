"""The `values_valid` check of a live table, on real rows stored in a real warehouse: it passes
on what publish stored, fails on a stored value the table's spec forbids, and counts what
writing every value out as text and reading it back (its former way) counted."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import polars as pl
import pytest

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, fetch_frame, migrate
from bench_pipeline.core.writer import registered
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.ingest.tables import TABLES, TableSpec
from bench_pipeline.ingest.validation import stored_failures, validate_records
from bench_pipeline.resources.sources import RecordedSnapshotClient

pytestmark = pytest.mark.store

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
SOURCES = ("arena", "swebench", "openrouter_models", "models_dev")
"""Between them, every column type a live table holds: dates, times, booleans, exact and
binary numbers, integers, text."""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """A warehouse whose live tables hold the valid rows of the recorded snapshots."""
    client = RecordedSnapshotClient(snapshots_dir=str(SNAPSHOTS))
    path = tmp_path_factory.mktemp("live") / "bench.duckdb"
    with connect(path) as conn:
        migrate(conn, settings.migrations_dir())
        for source in SOURCES:
            frames = PARSERS[source](client.fetch(source_definitions()[source]))
            for table, staged in frames.items():
                valid = validate_records(TABLES[table], staged).valid
                with registered(conn, valid) as view:  # as publish inserts
                    conn.execute(
                        f"INSERT INTO {table} BY NAME SELECT *, 'run-1' AS source_run_id "
                        f"FROM {view}"
                    )
        yield conn


def _stored(conn: duckdb.DuckDBPyConnection, table: str) -> pl.DataFrame:
    return fetch_frame(conn, f"SELECT * EXCLUDE (source_run_id) FROM {table}")


def _through_text(table: str, stored: pl.DataFrame) -> int:
    """The former check: every column written out as text, then validated as staged text."""
    text = stored.with_columns(pl.col(name).cast(pl.Utf8) for name in stored.columns)
    return validate_records(TABLES[table], text).rows_quarantined


LIVE_TABLES = [table for source in SOURCES for table in source_definitions()[source].tables]


@pytest.mark.parametrize("table", LIVE_TABLES)
def test_what_publish_stored_passes_as_it_did_through_text(warehouse, table: str) -> None:
    stored = _stored(warehouse, table)
    assert stored.height > 0
    assert stored_failures(TABLES[table], stored) == 0 == _through_text(table, stored)


def _tampered(conn: duckdb.DuckDBPyConnection, table: str, sql: str) -> pl.DataFrame:
    """The table's stored rows after `sql` ran on a copy of it, `{t}` (the table is kept)."""
    conn.execute(f"CREATE OR REPLACE TABLE tampered AS SELECT * FROM {table}")
    try:
        conn.execute(sql.format(t="tampered"))
        return _stored(conn, "tampered")
    finally:
        conn.execute("DROP TABLE tampered")


TAMPERING = {
    "a rating that is not a number": (
        "arena_ratings",
        "UPDATE {t} SET rating = 'NaN'::DOUBLE WHERE rowid IN (SELECT rowid FROM {t} LIMIT 2)",
        2,
    ),
    "a required value missing": (
        "swebench_entries",
        "UPDATE {t} SET resolved_percent = NULL WHERE rowid IN (SELECT rowid FROM {t} LIMIT 3)",
        3,
    ),
    "one key stored twice": (
        "openrouter_models",
        "INSERT INTO {t} SELECT * FROM {t} LIMIT 1",
        2,
    ),
    "a share above 100 percent": (
        "swebench_entries",
        "UPDATE {t} SET resolved_percent = 250 WHERE rowid IN (SELECT rowid FROM {t} LIMIT 1)",
        1,
    ),
}


@pytest.mark.parametrize("case", list(TAMPERING))
def test_a_stored_value_the_spec_forbids_fails_the_check(warehouse, case: str) -> None:
    table, sql, expected = TAMPERING[case]
    stored = _tampered(warehouse, table, sql)
    assert stored_failures(TABLES[table], stored) == expected == _through_text(table, stored)


def test_a_column_stored_as_another_type_is_read_from_its_text() -> None:
    """Counts stored as floats where the spec wants integers: read as their text (`2.5` is no
    integer), as staging would read them, not cast (which would keep 2 of 2.5)."""
    spec = TableSpec(name="counts", columns={"k": pl.Utf8, "n": pl.Int64}, key=("k",))
    stored = pl.DataFrame({"k": ["a", "b", "c"], "n": [2.5, None, 7.25]})
    assert stored_failures(spec, stored) == 2
    assert stored_failures(spec, stored.with_columns(pl.col("n").cast(pl.Int64))) == 0
