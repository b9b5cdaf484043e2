"""Tables the site never holds whole: it asks their Parquet file for what a page shows.

The pairs of the item boards grow with the square of a board's entries (3.1 million rows at
50 times today's data, gigabytes as Python dicts), while a board's page shows only how many
pairs there are, how many differ significantly, and the pairs between the entries of its
matrix. For a table in `LARGE_TABLES` whose release lists a Parquet file with the expected
column types, `open_large` returns a `LargeTable` instead of reading its JSON; polars then
reads only the columns and rows asked for. The rows it hands out are the rows the JSON file
holds: the same frame wrote both (`release/build.py`), and `as_published` applies the rule the
JSON writer applies (`release.downloads.published_values`: exact decimals and timestamps as
text; a float that JSON cannot hold, NaN or infinite, is null there). A release without that
Parquet file, or with other column types, is read from its JSON as any other table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from bench_pipeline.release.downloads import published_values
from bench_pipeline.site.layout import Row, Schema, complete

LARGE_TABLES: Mapping[str, Mapping[str, type[pl.DataType]]] = {
    "item_board_pairs": {
        "board": pl.String,
        "entry_key_a": pl.String,
        "entry_key_b": pl.String,
        "significant": pl.Boolean,
    },
}
"""Each large table, with the columns the site filters or counts on and the types it needs
them to have (else the table is read from its JSON)."""
SIMULATED = "simulated"


@dataclass(frozen=True)
class LargeTable:
    """One large release table, read through its Parquet file."""

    name: str
    path: Path
    columns: list[Mapping[str, Any]]
    """The table's declared columns (`schema.json`), which every row handed out holds."""

    def scan(self) -> pl.LazyFrame:
        """The table, lazily: nothing is read until a query is collected."""
        return pl.scan_parquet(self.path)

    def count(self) -> int:
        """How many rows the table holds (from the file's metadata)."""
        return int(self.scan().select(pl.len()).collect().item())

    def rows(self, frame: pl.DataFrame) -> list[Row]:
        """`frame` (some of this table's rows) as the rows its JSON file holds."""
        return complete(self.columns, as_published(frame).to_dicts())

    @cached_property
    def simulated(self) -> tuple[bool, int, int]:
        """Whether rows of this table carry a `simulated` column, how many are marked
        simulated (as `markup.is_simulated` reads a JSON value) and how many rows it holds."""
        names = self.scan().collect_schema()
        declared = any(c["name"] == SIMULATED for c in self.columns)
        total = self.count()
        if SIMULATED not in names:
            return declared, 0, total
        column, dtype = pl.col(SIMULATED), names[SIMULATED]
        if dtype == pl.Boolean:
            marked = column
        elif dtype.is_numeric():
            marked = column == 1
        elif dtype == pl.String:
            marked = column.is_in(["true", "True"])
        else:  # a list or a struct is never `True`, 1 or "true"
            marked = pl.lit(False)
        simulated = self.scan().select(marked.fill_null(False).sum()).collect().item()
        return True, int(simulated), total


def as_published(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame`'s values as its JSON download writes them (see the module docstring)."""
    frame = published_values(frame)
    floats = [n for n, t in frame.schema.items() if t in (pl.Float32, pl.Float64)]
    return frame.with_columns(
        pl.when(pl.col(n).is_finite()).then(pl.col(n)).otherwise(None).alias(n) for n in floats
    )


def open_large(directory: Path, entry: Mapping[str, Any], schema: Schema) -> LargeTable | None:
    """The manifest `entry`'s table as a `LargeTable` when it is one the site reads through
    its Parquet file (see the module docstring); else None (read its JSON).

    Raises:
        ValueError: When the Parquet file the manifest lists cannot be read as Parquet.
    """
    needed = LARGE_TABLES.get(str(entry.get("name")))
    files = entry.get("files", {})
    described = files.get("parquet")
    if needed is None or not files.get("json") or not isinstance(described, Mapping):
        return None  # not large, or not a table the site reads at all (no JSON listed)
    if "path" not in described:
        return None
    path = directory / str(described["path"])
    if not path.is_file():
        return None
    try:
        found = pl.scan_parquet(path).collect_schema()
    except (pl.exceptions.PolarsError, OSError) as error:
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from error
    if any(found.get(column) != dtype for column, dtype in needed.items()):
        return None
    return LargeTable(str(entry["name"]), path, schema.columns(str(entry["name"])))
