"""Published downloads: one CSV and one JSON file per table, written one way everywhere.

A missing value is an empty CSV cell and a JSON `null`, never 0. Exact decimals (prices,
costs) are written as strings in JSON so no reader's float parser rounds them.

CSV text cells that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a
tab or a carriage return; OWASP's rule for CSV injection) get a leading apostrophe, since
model names come from outside sources and submitters. Only text columns are touched, never a
number; JSON and Parquet keep the exact value.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from bench_pipeline.core.files import write_bytes
from bench_pipeline.core.money import plain


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return plain(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _decimal_text(frame: pl.DataFrame) -> pl.DataFrame:
    """Decimal columns as plain text without trailing zeros (3.437500000000 → 3.4375)."""
    decimals = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Decimal)]
    return frame.with_columns(
        pl.col(name).map_elements(lambda v: _json_value(v), return_dtype=pl.Utf8)
        for name in decimals
    )


FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formulas(frame: pl.DataFrame) -> pl.DataFrame:
    """Text cells starting like a formula, prefixed with an apostrophe (for CSV only)."""
    pattern = "^[" + "".join("\\" + c if c in "-+" else c for c in FORMULA_LEADS) + "]"
    texts = [name for name, dtype in frame.schema.items() if dtype == pl.Utf8]
    return frame.with_columns(
        pl.when(pl.col(name).str.contains(pattern))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name in texts
    )


def write_download(frame: pl.DataFrame, name: str, directory: Path) -> dict[str, Path]:
    """Write `<name>.csv` and `<name>.json` (an array of objects, same columns) atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    published = _decimal_text(frame)
    csv_path, json_path = directory / f"{name}.csv", directory / f"{name}.json"
    write_bytes(
        csv_path, neutralise_formulas(frame).pipe(_decimal_text).write_csv(null_value="").encode()
    )
    records = [
        {k: _json_value(v) for k, v in row.items()} for row in published.iter_rows(named=True)
    ]
    write_bytes(json_path, (json.dumps(records, ensure_ascii=False, indent=1) + "\n").encode())
    return {"csv": csv_path, "json": json_path}
