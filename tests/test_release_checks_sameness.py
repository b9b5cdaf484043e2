"""The privacy check, searching a file's columns together first and reading a database a
table at a time, finds exactly what searching every string for every text found (the
benchmark's copy of the earlier check is the oracle), on random cells and views."""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.release import verify
from bench_pipeline.release.build import DATABASE

SECRETS = ["boiling point", 'point", 42', "naïve ✓", "x", "line\none", ""]
cells = st.none() | st.sampled_from(SECRETS) | st.text(max_size=6) | st.sampled_from(
    [f"see {s} here" for s in SECRETS])  # fmt: skip


@pytest.mark.store
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(cells, min_size=1, max_size=4), min_size=1, max_size=4),
    st.integers(0, 3),
)
def test_private_texts_are_found_per_column_as_one_by_one(
    tmp_path_factory: pytest.TempPathFactory, columns: list[list[Any]], view_of: int
) -> None:
    """Searching a file's columns together first, and reading a database a table at a time,
    finds what searching every string for every text found."""
    from benchmarks.release_checks import old_private_text_findings

    folder = tmp_path_factory.mktemp("release")
    height = max(len(c) for c in columns)
    frame = pl.DataFrame(
        {f"c{i}": c + [None] * (height - len(c)) for i, c in enumerate(columns)},
        schema={f"c{i}": pl.Utf8 for i in range(len(columns))},
    )
    frame.write_parquet(folder / "t.parquet")
    with duckdb.connect(str(folder / DATABASE)) as conn:
        conn.execute("CREATE TABLE t AS SELECT * FROM frame")
        conn.execute("CREATE TABLE empty (a VARCHAR, b VARCHAR)")
        column = f"c{view_of % len(columns)}"
        conn.execute(f"CREATE VIEW v AS SELECT {column} AS seen FROM t WHERE {column} <> 'x'")
    expected = old_private_text_findings(folder, SECRETS)
    assert verify.private_text_findings(folder, SECRETS) == expected
