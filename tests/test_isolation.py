"""`core.isolation`: each inbox file stored in a transaction of its own, so a value no column
holds rejects that file alone, and a fault of the machine stops the intake without recording
the file."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from bench_pipeline.core.isolation import error_column, error_reason, storable, take_each
from bench_pipeline.core.writer import insert_rows

pytestmark = pytest.mark.store


@pytest.fixture
def conn(tmp_path: Path):
    with duckdb.connect(str(tmp_path / "t.duckdb")) as connection:
        connection.execute(
            "CREATE TABLE runs (name VARCHAR NOT NULL, turns INTEGER NOT NULL, "
            "cost DECIMAL(38, 18))"
        )
        connection.execute("CREATE TABLE fates (name VARCHAR, column_name VARCHAR, reason VARCHAR)")
        yield connection


def test_a_value_no_column_holds_rejects_only_its_own_item(conn) -> None:
    items = [
        ("a", 3, Decimal("0.5")),
        ("b", 10**400, None),  # no INTEGER holds it
        ("c", 4, Decimal("1E+20")),  # no DECIMAL(38, 18) holds it (DuckDB says so)
        ("d\ud800", 5, None),  # not text a column takes
        ("e", 6, None),
    ]

    def take(conn, item) -> None:
        insert_rows(conn, "runs", ("name", "turns", "cost"), [list(item)])
        insert_rows(conn, "fates", ("name",), [[item[0]]])

    def refuse(conn, item, error) -> None:
        column = error_column(error, "runs", ("name", "turns", "cost"))
        insert_rows(conn, "fates", None, [[storable(item[0]), column, error_reason(error)]])

    take_each(conn, items, take, refuse)
    assert conn.execute("SELECT name FROM runs ORDER BY name").fetchall() == [("a",), ("e",)]
    fates = {n: (c, r) for n, c, r in conn.execute("SELECT * FROM fates").fetchall()}
    assert fates.keys() == {"a", "b", "c", "d\\ud800", "e"}
    assert fates["a"] == (None, None)
    assert fates["b"][0] == "turns" and "RowsError" in fates["b"][1]
    assert fates["c"][0] == "cost" and "out of range" in fates["c"][1]
    assert fates["d\\ud800"][0] == "name" and "surrogate" in fates["d\\ud800"][1]


def test_a_fault_of_the_machine_is_not_a_rejection(conn) -> None:
    """Anything but a bad value propagates: nothing is recorded for that item (a later run
    takes it again), and the items before it stay stored."""
    seen: list[str] = []

    def take(conn, item: str) -> None:
        if item == "disk":
            raise OSError(28, "No space left on device")
        insert_rows(conn, "runs", ("name", "turns"), [[item, 1]])

    def refuse(conn, item, error) -> None:
        seen.append(item)

    with pytest.raises(OSError):
        take_each(conn, ["first", "disk", "never"], take, refuse)
    assert conn.execute("SELECT name FROM runs").fetchall() == [("first",)]
    assert seen == []


def test_recorded_text_is_storable_and_bounded() -> None:
    assert storable("bad\udcff.json") == "bad\\udcff.json"
    long = storable("x" * 5_000)
    assert long.endswith("… (5000 characters)") and len(long) < 340
    assert error_reason(ValueError("a\nb  c")) == "ValueError: a b c"
