"""The privacy check, searching a file's columns together first and reading a database a
table at a time, finds exactly what searching every string for every text found (the
benchmark's copy of the earlier check is the oracle), on random cells and views."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any
from unittest.mock import patch

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.release import verify
from bench_pipeline.release.build import DATABASE
from bench_pipeline.release.downloads import csv_bytes, json_bytes

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
    """Searching a file's columns together first, reading a database a table at a time, and
    a file's bytes as text without a Python string, finds what searching every string for
    every text found (Parquet, DuckDB, JSON, CSV and bytes that are not UTF-8)."""
    from benchmarks.release_checks import old_private_text_findings

    folder = tmp_path_factory.mktemp("release")
    height = max(len(c) for c in columns)
    frame = pl.DataFrame(
        {f"c{i}": c + [None] * (height - len(c)) for i, c in enumerate(columns)},
        schema={f"c{i}": pl.Utf8 for i in range(len(columns))},
    )
    frame.write_parquet(folder / "t.parquet")
    (folder / "t.json").write_bytes(json_bytes(frame))
    (folder / "t.csv").write_bytes(csv_bytes(frame))
    cell = next((c for c in frame.row(0) if c), "")  # raw bytes, one not UTF-8: decoded lossily
    (folder / "blob.bin").write_bytes(b"\xff" + cell.encode() + b"\xc3(" + cell.encode()[:3])
    with duckdb.connect(str(folder / DATABASE)) as conn:
        conn.execute("CREATE TABLE t AS SELECT * FROM frame")
        conn.execute("CREATE TABLE empty (a VARCHAR, b VARCHAR)")
        column = f"c{view_of % len(columns)}"
        conn.execute(f"CREATE VIEW v AS SELECT {column} AS seen FROM t WHERE {column} <> 'x'")
    expected = old_private_text_findings(folder, SECRETS)
    assert verify.private_text_findings(folder, SECRETS) == expected  # text by text
    few = verify.FEW_TEXTS
    try:
        verify.FEW_TEXTS = 0  # every text at once (Aho-Corasick), as for a larger bank
        assert verify.private_text_findings(folder, SECRETS) == expected
    finally:
        verify.FEW_TEXTS = few


def _earlier_rows(path: Path) -> int:
    """How the manifest check counted rows before: every value parsed, every record read."""
    if path.suffix == ".json":
        return len(json.loads(path.read_text(encoding="utf-8")))
    with path.open(newline="", encoding="utf-8") as handle:
        return max(sum(1 for _ in csv.reader(handle)) - 1, 0)


texts = st.none() | st.text(max_size=6) | st.sampled_from(
    ["},\n{", "\r", "a\r\nb", '"', '""', ",", "\n", "[", "]\n"])  # fmt: skip


@pytest.mark.store
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(texts, texts, st.none() | st.integers(-(2**63), 2**63 - 1)), max_size=8),
    st.integers(0, 2),
)
def test_row_counts_are_those_of_parsing_every_value(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple], width: int
) -> None:
    """A download's rows counted from its lines (JSON) or by polars (CSV) are the rows
    `json.loads` and `csv.reader` count, on hostile cells, one column (a null is an empty
    line), no rows, no columns; and JSON laid out another way is parsed."""
    folder = tmp_path_factory.mktemp("data")
    frame = pl.DataFrame(rows, schema={"a": pl.Utf8, "b": pl.Utf8, "n": pl.Int64}, orient="row")
    frame = frame.select(frame.columns[: width + 1]) if width < 2 else frame
    for name, part in (("t", frame), ("none", pl.DataFrame())):
        (folder / f"{name}.json").write_bytes(json_bytes(part))
        (folder / f"{name}.csv").write_bytes(csv_bytes(part))
    (folder / "pretty.json").write_text(json.dumps(frame.to_dicts(), indent=1))
    (folder / "crlf.csv").write_bytes(csv_bytes(frame).replace(b"\n", b"\r\n"))
    for path in sorted(folder.iterdir()):
        counted = (
            verify.json_array_rows(path.read_bytes())
            if path.suffix == ".json"
            else verify.csv_rows(path)
        )
        assert counted == _earlier_rows(path), path.name
        if path.suffix == ".json":  # mapped, its line breaks found a few bytes at a time
            with verify._mapped(path) as raw, patch.object(verify, "_BLOCK_BYTES", 5):
                assert verify.json_array_rows(raw) == counted, path.name


RAW_TEXTS = [*SECRETS[:-1], "é", "\ufffd", "a\ufffd", "€"]
pieces = st.binary(max_size=6) | st.sampled_from(RAW_TEXTS).map(str.encode)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(
    st.lists(pieces, max_size=8).map(b"".join),
    st.lists(st.sampled_from([*RAW_TEXTS, "\ud800"]), min_size=1, max_size=5, unique=True),
)
def test_texts_in_raw_bytes_are_those_the_decoded_bytes_hold(raw: bytes, texts: list[str]) -> None:
    """A file's bytes searched without decoding find what searching them decoded (U+FFFD for
    what is not UTF-8) found, on random bytes, broken sequences and texts holding U+FFFD or a
    lone surrogate; and so does the search of every text at once (no bank text has a lone
    surrogate: polars cannot hold one)."""
    decoded = raw.decode("utf-8", errors="replace")
    expected = {t for t in texts if t in decoded}
    assert verify._raw_found(raw, texts) == expected
    few, verify.FEW_TEXTS = verify.FEW_TEXTS, 0
    try:
        valid = [t for t in texts if t != "\ud800"]
        assert verify._raw_found(raw, valid) == expected - {"\ud800"}
    finally:
        verify.FEW_TEXTS = few
