"""A release's diff and manifest check, run with the cycle collector paused, and the privacy
check, searching a file's columns together and reading a database a table at a time, give
byte for byte what the earlier code gave (its rules are the oracles here)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stages import materialize_recorded

from bench_pipeline.core.warehouse import connect
from bench_pipeline.release import verify
from bench_pipeline.release.build import DATABASE, DIFF, build_release
from bench_pipeline.release.diff import MANIFEST, load_manifest
from bench_pipeline.release.published import METHODOLOGY_VERSIONS


def old_count(path: Path) -> int:
    return len(json.loads(path.read_text(encoding="utf-8")))


def old_first_diff(release_dir: Path) -> dict[str, Any]:
    """`diff_releases(None, release_dir)` as it was: every table's rows parsed."""
    new = load_manifest(release_dir)
    tables, added = {}, []
    for entry in new["tables"]:
        parsed = json.loads((release_dir / entry["files"]["json"]["path"]).read_text("utf-8"))
        tables[entry["name"]] = {"added_table": True, "rows": len(parsed)}
        if entry["name"] == "models":
            added = [r["model_id"] for r in parsed]
    return {
        "from": None,
        "to": new["release_id"],
        "models_added": added,
        "models_removed": [],
        "tables": tables,
        "caused_by": {"source_runs": list(new["source_runs"]), "case_versions": []},
    }


def old_count_rows(path: Path) -> int | None:
    if path.suffix == ".json" and path.parent.name == "data":
        return old_count(path)
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            return max(sum(1 for _ in csv.reader(handle)) - 1, 0)
    if path.suffix == ".parquet":
        return pl.scan_parquet(path).select(pl.len()).collect().item()
    if path.name == DATABASE:
        with duckdb.connect(str(path), read_only=True) as conn:
            names = conn.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
            return sum(
                conn.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for (t,) in names
            )
    return None


@pytest.fixture(scope="module")
def first_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("release")
    with connect(materialize_recorded(root / "home")) as conn:
        return build_release(conn, root / "releases", METHODOLOGY_VERSIONS).path


@pytest.mark.assets
def test_first_release_diff_is_byte_identical_to_the_row_by_row_one(first_release: Path) -> None:
    expected = json.dumps(old_first_diff(first_release), ensure_ascii=False, indent=1) + "\n"
    assert (first_release / DIFF).read_bytes() == expected.encode()
    assert sum(t["rows"] for t in json.loads(expected)["tables"].values()) > 0


@pytest.mark.assets
def test_manifest_check_counts_every_file_as_before(first_release: Path) -> None:
    counted = 0
    for path in sorted(p for p in first_release.rglob("*") if p.is_file() and p.name != MANIFEST):
        assert verify._count_rows(path) == old_count_rows(path), path.name
        counted += old_count_rows(path) is not None
    assert counted > 3 * 10  # every table's CSV, JSON and Parquet, and the database
    assert verify.verify_release(first_release) == []


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
