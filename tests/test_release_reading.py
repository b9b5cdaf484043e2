"""An analyst's reading of the release's CSV downloads: given only `datapackage.json`, polars
and pandas read every CSV with the types its schema declares (README "Releases" shows the
same few lines). On a real release of every recorded snapshot (`built`, shared with
tests/test_release_analysts.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest
from test_release_analysts import built

__all__ = ["built"]

pytestmark = pytest.mark.assets

POLARS = {"integer": pl.Int64, "number": pl.Float64, "boolean": pl.Boolean, "date": pl.Date,
          "datetime": pl.Datetime("us", "UTC")}  # fmt: skip
PANDAS = {"integer": "Int64", "number": "Float64", "boolean": "boolean", "string": "string"}


def _csvs(release: Path) -> list[dict[str, Any]]:
    package = json.loads((release / "datapackage.json").read_text("utf-8"))
    return [r for r in package["resources"] if r.get("format") == "csv"]


def read_polars(release: Path, resource: dict[str, Any]) -> pl.DataFrame:
    fields = resource["schema"]["fields"]
    schema = {f["name"]: POLARS.get(f["type"], pl.String) for f in fields}
    return pl.read_csv(release / resource["path"], schema=schema)


def read_pandas(release: Path, resource: dict[str, Any]) -> pd.DataFrame:
    fields = resource["schema"]["fields"]
    frame = pd.read_csv(
        release / resource["path"],
        dtype={f["name"]: PANDAS.get(f["type"], "string") for f in fields},
        keep_default_na=False, na_values=[""],
    )  # fmt: skip
    for f in fields:
        if f["type"] == "datetime":
            frame[f["name"]] = pd.to_datetime(frame[f["name"]], utc=True, format="ISO8601")
        elif f["type"] == "date":
            frame[f["name"]] = pd.to_datetime(frame[f["name"]], format="ISO8601").dt.date
    return frame


def test_polars_reads_every_csv_with_its_declared_types(built: dict) -> None:
    release, compared = built["release"], 0
    for resource in _csvs(release):
        frame = read_polars(release, resource)
        parquet = pl.read_parquet(release / resource["path"].replace(".csv", ".parquet"))
        assert frame.height == parquet.height, resource["path"]
        for f in resource["schema"]["fields"]:
            name, dtype = f["name"], POLARS.get(f["type"], pl.String)
            assert frame.schema[name] == dtype, (resource["path"], name, frame.schema[name])
            if f["type"] == "string" or not parquet.height:
                continue
            # the same values as the typed Parquet rendering (exact decimals: as floats)
            read, typed = frame[name], parquet[name].cast(dtype)
            if f["type"] == "number":
                assert (
                    ((read - typed).abs() <= 1e-9 * typed.abs().clip(1.0))
                    .fill_null(read.is_null() & typed.is_null())
                    .all()
                ), (resource["path"], name)
            else:
                assert read.equals(typed), (resource["path"], name)
            compared += 1
    assert compared > 100


def test_pandas_reads_every_csv_with_its_declared_types(built: dict) -> None:
    release, typed = built["release"], set()
    for resource in _csvs(release):
        frame = read_pandas(release, resource)
        for f in resource["schema"]["fields"]:
            dtype = str(frame[f["name"]].dtype)
            expected = {"integer": "Int64", "number": "Float64", "boolean": "boolean",
                        "datetime": "datetime64", "date": "object", "string": "str"}  # fmt: skip
            assert dtype.startswith(expected[f["type"]]) or (
                f["type"] == "string" and dtype == "string"
            ), (resource["path"], f["name"], dtype)
            typed.add(f["type"])
    assert {"integer", "number", "boolean", "datetime"} <= typed
