"""A large table read through its Parquet file answers what its rows in memory answer (pair
counts, the matrix's pairs, simulated counts) on random and hostile rows; a release without
that file, or with other column types, is read from its JSON; a damaged file fails by name."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from bench_pipeline.site.boards import simulated_label
from bench_pipeline.site.item_boards import board_pairs
from bench_pipeline.site.large_tables import LargeTable, open_large
from bench_pipeline.site.layout import Schema, complete

pytestmark = pytest.mark.store

COLUMNS = [{"name": n} for n in ("board", "entry_key_a", "entry_key_b", "significant",
                                 "p_value", "wins_a", "note")]  # fmt: skip


def _pairs(rng: random.Random, count: int) -> list[dict[str, Any]]:
    keys = ["a", "b", "c", "<d>", "é", None]
    return [
        {"board": rng.choice(["one", "two", None, "None", "<three>"]),
         "entry_key_a": rng.choice(keys), "entry_key_b": rng.choice(keys),
         "significant": rng.choice([True, False, None]),
         "p_value": rng.choice([0.5, 1e-9, float("nan"), None, 1.0]),
         "wins_a": rng.randint(0, 9), "note": rng.choice(["x", None])}
        for _ in range(count)
    ]  # fmt: skip


def _table(tmp_path: Path, rows: list[dict[str, Any]], name: str = "t") -> LargeTable:
    path = tmp_path / f"{name}.parquet"
    pl.DataFrame(rows, schema={"board": pl.String, "entry_key_a": pl.String,
                               "entry_key_b": pl.String, "significant": pl.Boolean,
                               "p_value": pl.Float64, "wins_a": pl.Int64,
                               "note": pl.String}).write_parquet(path)  # fmt: skip
    return LargeTable("item_board_pairs", path, COLUMNS)


def _as_json_reads(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as the JSON download holds them (NaN is null there)."""
    return [{k: None if v != v else v for k, v in r.items()} for r in rows]


@pytest.mark.parametrize("seed", range(4))
def test_pair_counts_and_matrix_pairs_match_the_rows_in_memory(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    rows = _pairs(rng, rng.randint(0, 300))
    shown = {b: set(rng.sample(["a", "b", "c", "<d>", "é", None], rng.randint(0, 6)))
             for b in ("one", "None", "<three>", "absent")}  # fmt: skip
    from_file = board_pairs(_table(tmp_path, rows), shown)
    in_memory = board_pairs(complete(COLUMNS, _as_json_reads(rows)), shown)
    assert from_file == in_memory
    assert sum(p.total for p in from_file.values()) == len(rows)


def test_simulated_counts_match_the_rows_in_memory(tmp_path: Path) -> None:
    rng = random.Random(9)
    cases: list[tuple[pl.DataType, list[Any]]] = [
        (pl.Boolean(), [True, False, None]), (pl.Int64(), [1, 0, 2, None]),
        (pl.Float64(), [1.0, 0.5, None]), (pl.String(), ["true", "True", "yes", "1", None]),
    ]  # fmt: skip
    for number, (dtype, values) in enumerate(cases * 3):
        rows = [{"x": n, "simulated": rng.choice(values)} for n in range(rng.randint(0, 40))]
        path = tmp_path / f"s{number}.parquet"
        pl.DataFrame(rows, schema={"x": pl.Int64, "simulated": dtype}).write_parquet(path)
        table = LargeTable("t", path, [{"name": "x"}, {"name": "simulated"}])
        expected = simulated_label("t", {"t": rows})
        assert simulated_label("t", {}, {"t": table}) == expected, (dtype, rows)
    path = tmp_path / "none.parquet"  # declared, but no such column in the file
    pl.DataFrame({"x": [1, 2]}).write_parquet(path)
    table = LargeTable("t", path, [{"name": "x"}, {"name": "simulated"}])
    assert table.simulated == (True, 0, 2) and simulated_label("t", {}, {"t": table}) == ""


def _entry(directory: Path, parquet: str | None = "data/item_board_pairs.parquet") -> dict:
    files = {"json": {"path": "data/item_board_pairs.json"}}
    if parquet:
        files["parquet"] = {"path": parquet}
    return {"name": "item_board_pairs", "files": files}


def test_a_release_without_the_expected_parquet_file_is_read_from_its_json(
    tmp_path: Path,
) -> None:
    schema = Schema({"tables": []})
    data = tmp_path / "data"
    data.mkdir()
    assert open_large(tmp_path, _entry(tmp_path), schema) is None  # listed, not there
    assert open_large(tmp_path, _entry(tmp_path, None), schema) is None  # not listed
    frame = pl.DataFrame({"board": ["b"], "entry_key_a": ["a"], "entry_key_b": ["c"],
                          "significant": ["true"]})  # fmt: skip
    frame.write_parquet(data / "item_board_pairs.parquet")
    assert open_large(tmp_path, _entry(tmp_path), schema) is None  # text, not a boolean
    assert open_large(tmp_path, {"name": "market", "files": {}}, schema) is None
    frame.with_columns(pl.col("significant") == "true").write_parquet(
        data / "item_board_pairs.parquet"
    )
    assert isinstance(open_large(tmp_path, _entry(tmp_path), schema), LargeTable)
    no_json = {"name": "item_board_pairs", "files": {"parquet": {"path": "x.parquet"}}}
    assert open_large(tmp_path, no_json, schema) is None  # the site never read it


def test_a_damaged_parquet_file_fails_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    damaged = tmp_path / "data" / "item_board_pairs.parquet"
    damaged.write_bytes(b"PAR1 not really a parquet file")
    with pytest.raises(ValueError, match=re.escape("item_board_pairs.parquet: not a readable")):
        open_large(tmp_path, _entry(tmp_path), Schema({"tables": []}))
