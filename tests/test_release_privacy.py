"""The private-text check as one multi-pattern search gives exactly the findings of checking
every string for every text, on release-shaped files (CSV, JSON, Parquet, DuckDB, other)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from bench_pipeline.release.downloads import write_download
from bench_pipeline.release.verify import found_texts, private_text_findings
from benchmarks.release_checks import old_private_text_findings

pytestmark = pytest.mark.store

SECRETS = [
    'Private case 17: "What is the boiling point", answer 42°',
    "boiling point",  # inside the first
    'point", answer',  # overlapping it, with a quote CSV and JSON escape
    "",  # empty: never a finding
    "boiling point",  # the same text twice: both numbers reported
    "naïve café ✓",  # beyond ASCII
    "never published anywhere",
    "line one\nline two",  # a newline, escaped in JSON
]


def _release(folder: Path) -> Path:
    """A release-shaped folder with the secrets planted in some cells of every format."""
    frame = pl.DataFrame(
        {
            "model_id": [f"m{i}" for i in range(2_000)],
            "name": [
                SECRETS[0] if i == 7 else SECRETS[5] + " and more" if i == 1_500 else f"model {i}"
                for i in range(2_000)
            ],
            "note": [SECRETS[7] if i == 3 else None for i in range(2_000)],
        }
    )
    data = folder / "data"
    write_download(frame, "models", data)
    frame.write_parquet(data / "models.parquet")
    clean = frame.with_columns(pl.lit("clean").alias("name"), pl.lit(None).alias("note"))
    write_download(clean, "market", data)
    with duckdb.connect(str(folder / "bench.duckdb")) as conn:
        conn.execute("CREATE TABLE models AS SELECT * FROM frame")
        conn.execute("CREATE VIEW named AS SELECT name FROM models WHERE name LIKE '%boil%'")
    (folder / "notes.txt").write_text("copied: boiling point (end)", encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps({"k": {"deep": [SECRETS[6][:5]]}}))
    return folder


def test_one_search_finds_exactly_what_checking_every_pair_finds(tmp_path: Path) -> None:
    folder = _release(tmp_path / "release")
    expected = old_private_text_findings(folder, SECRETS)
    found = private_text_findings(folder, SECRETS)
    assert found == expected
    where = {(f["file"], f["where"]) for f in found}
    assert ("data/models.csv", None) in where and ("bench.duckdb", "named.name") in where
    assert ("data/models.parquet", "name") in where and ("notes.txt", "bytes") in where
    numbers = {f["text_number"] for f in found}
    assert {0, 1, 2, 4, 5, 7} <= numbers and not {3, 6} & numbers
    assert not [f for f in found if f["file"].startswith("data/market")]


def test_nested_and_overlapping_texts_are_each_found() -> None:
    texts = ["abcde", "bcd", "cdef", "c", "zz"]
    assert found_texts(["xxabcdefxx"], texts) == {"abcde", "bcd", "cdef", "c"}
    assert found_texts(pl.Series(["aaa", None]), ["aa", "aaa"]) == {"aa", "aaa"}
    assert found_texts([], texts) == set() and found_texts(["abc"], []) == set()


def test_a_lone_surrogate_in_json_does_not_stop_the_search(tmp_path: Path) -> None:
    (tmp_path / "odd.json").write_text('["\\ud800 boiling point"]', encoding="utf-8")
    assert private_text_findings(tmp_path, ["boiling point"]) == [
        {"file": "odd.json", "where": None, "text_number": 0},
        {"file": "odd.json", "where": "bytes", "text_number": 0},
    ]


def test_a_column_of_mixed_json_values_is_read_as_a_reader_would(tmp_path: Path) -> None:
    """polars reads a column of numbers and text as text ("12"); a text that could be found
    in a number's digits makes the check walk the values instead, as the old check did."""
    (tmp_path / "mixed.json").write_text('[{"a": 123}, {"a": "x"}]', encoding="utf-8")
    for texts in (["12"], ["true"], ["x"], ["123", "nothing"]):
        assert private_text_findings(tmp_path, texts) == old_private_text_findings(
            tmp_path, texts
        ), texts
    assert {f["where"] for f in private_text_findings(tmp_path, ["12"])} == {"bytes"}


def test_a_text_hidden_by_escapes_is_found_in_the_cells(tmp_path: Path) -> None:
    """The raw text of these files does not show the texts; their cells do."""
    (tmp_path / "escaped.json").write_text(json.dumps([{"n": SECRETS[5]}]), encoding="utf-8")
    (tmp_path / "quoted.csv").write_text('n\n"say ""boiling point"", answer"\n', encoding="utf-8")
    (tmp_path / "bare.csv").write_text('n\nsay "hi there\n', encoding="utf-8")  # unquoted
    texts = [SECRETS[5], 'say "boiling', "answer", 'say "hi']
    found = private_text_findings(tmp_path, texts)
    assert found == old_private_text_findings(tmp_path, texts)
    assert {"file": "escaped.json", "where": None, "text_number": 0} in found
    assert {"file": "quoted.csv", "where": None, "text_number": 1} in found
    assert {"file": "quoted.csv", "where": "bytes", "text_number": 1} not in found
    assert {"file": "bare.csv", "where": None, "text_number": 3} in found


def test_repeated_values_empty_tables_and_odd_names_are_searched_as_before(
    tmp_path: Path,
) -> None:
    """Parquet and DuckDB columns are searched by their distinct values: a secret repeated
    over many rows, in a column whose name has a quote, and an empty table give the same
    findings as every string one by one."""
    folder = tmp_path / "release"
    (folder / "data").mkdir(parents=True)
    pairs = pl.DataFrame(
        {
            "entry_a": [f"entry {i % 40}" for i in range(6_000)],
            'odd "name"': [SECRETS[6] if i % 3 == 0 else f"e{i % 7}" for i in range(6_000)],
            "items": list(range(6_000)),
        }
    )
    pairs.write_parquet(folder / "data" / "pairs.parquet")
    with duckdb.connect(str(folder / "bench.duckdb")) as conn:
        conn.execute("CREATE TABLE pairs AS SELECT * FROM pairs")
        conn.execute("CREATE TABLE empty (name VARCHAR, other VARCHAR)")
        conn.execute("CREATE VIEW nothing AS SELECT name FROM empty")
    expected = old_private_text_findings(folder, SECRETS)
    found = private_text_findings(folder, SECRETS)
    assert found == expected
    columns = {(f["file"], f["where"]) for f in found if f["where"] != "bytes"}
    assert columns == {("data/pairs.parquet", 'odd "name"'), ("bench.duckdb", 'pairs.odd "name"')}
