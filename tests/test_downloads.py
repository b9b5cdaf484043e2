"""Downloads: missing stays missing (empty CSV cell, JSON null), decimals stay exact."""

import csv
import json
from decimal import Decimal

import polars as pl
import pytest

from bench_pipeline.release.downloads import write_download

pytestmark = pytest.mark.unit


def test_missing_values_are_empty_in_csv_and_null_in_json(tmp_path) -> None:
    frame = pl.DataFrame(
        {
            "model_id": ["a/x", "b/y"],
            "known_good_index": [71.5, None],
            "index_components": [4, 0],
            "price": pl.Series([Decimal("3.4375"), None], dtype=pl.Decimal(24, 12)),
        }
    )
    paths = write_download(frame, "t", tmp_path)
    rows = list(csv.DictReader(paths["csv"].open()))
    assert rows[1]["known_good_index"] == "" and rows[1]["price"] == ""
    assert rows[0]["price"] == "3.4375" and rows[1]["index_components"] == "0"
    records = json.loads(paths["json"].read_text())
    assert records[1]["known_good_index"] is None and records[1]["price"] is None
    assert records[0]["price"] == "3.4375"  # exact, as a string
    assert list(records[0]) == frame.columns
    assert not list(tmp_path.glob(".*partial"))


def test_same_frame_gives_byte_identical_files(tmp_path) -> None:
    frame = pl.DataFrame({"a": [1, 2], "b": ["x", None]})
    first = {k: p.read_bytes() for k, p in write_download(frame, "t", tmp_path / "1").items()}
    second = {k: p.read_bytes() for k, p in write_download(frame, "t", tmp_path / "2").items()}
    assert first == second
