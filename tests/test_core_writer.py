"""The one warehouse writer: Python rows and frames into real DuckDB tables through Arrow."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from bench_pipeline.core.warehouse import connect, migrate, transaction
from bench_pipeline.core.writer import RowsError, as_arrow, insert_rows, registered, write_frame
from bench_pipeline.runs.store import RUN_COLUMNS, store_failures, store_runs

pytestmark = pytest.mark.store

MIGRATIONS = Path(__file__).resolve().parents[1] / "warehouse" / "migrations"

TYPED = (
    "CREATE TABLE t (name VARCHAR, price DECIMAL(24, 12), seen TIMESTAMP, day DATE, n INTEGER,"
    " big BIGINT, ratio DOUBLE, ok BOOLEAN, tags VARCHAR[], details JSON, note VARCHAR DEFAULT 'd')"
)
COLUMNS = ("name", "price", "seen", "day", "n", "big", "ratio", "ok", "tags", "details")


def _rows() -> list[list]:
    return [
        ["a", Decimal("0.000000150000"), datetime(2026, 11, 3, 4, 5, 6, 789), date(2026, 1, 2),
         3, 2**40, 0.25, True, ["x", "y"], '{"k": 1}'],
        [None, None, None, None, None, None, None, None, None, None],
        ["ü", Decimal("123456789012.123456789012"), datetime(2026, 1, 1), date(2020, 2, 29),
         -1, -(2**40), 1, False, [], "[]"],
    ]  # fmt: skip


def _same_as_executemany(rows: list[list], create: str = TYPED) -> tuple[list, list]:
    """The table `insert_rows` fills and the one `executemany` fills, row for row."""
    conn = duckdb.connect()
    conn.execute(create)
    conn.execute(create.replace("CREATE TABLE t", "CREATE TABLE u"))
    insert_rows(conn, "t", COLUMNS, rows)
    names = ", ".join(COLUMNS)
    conn.executemany(f"INSERT INTO u ({names}) VALUES ({', '.join('?' * len(COLUMNS))})", rows)
    return (
        conn.execute("SELECT * FROM t ORDER BY ALL").fetchall(),
        conn.execute("SELECT * FROM u ORDER BY ALL").fetchall(),
    )


def test_rows_land_exactly_as_executemany_lands_them_for_every_column_type() -> None:
    ours, theirs = _same_as_executemany(_rows())
    assert ours == theirs
    assert len(ours) == 3
    assert Decimal("123456789012.123456789012") in [row[1] for row in ours]
    assert {row[-1] for row in ours} == {"d"}  # an unnamed column takes its default


def test_values_of_another_type_are_cast_by_duckdb_as_a_bound_parameter_would_be() -> None:
    # a float for a DECIMAL, text for an INTEGER, an int for a DOUBLE, a timezone-aware time
    rows = [["b", 0.1, datetime(2026, 1, 1, tzinfo=UTC), date(2026, 1, 1), "7", 5, 2, True,
             None, None]]  # fmt: skip
    ours, theirs = _same_as_executemany(rows)
    assert ours == theirs
    assert ours[0][1] == Decimal("0.100000000000") and ours[0][4] == 7


def test_a_row_of_the_wrong_width_is_refused_naming_the_table_and_row() -> None:
    conn = duckdb.connect()
    conn.execute(TYPED)
    rows = _rows()
    rows[1] = rows[1][:-1]
    with pytest.raises(RowsError, match=r"^t: row 1 has 9 values for 10 columns"):
        insert_rows(conn, "t", COLUMNS, rows)
    assert conn.execute("SELECT count(*) FROM t").fetchall() == [(0,)]


def test_a_column_whose_values_mix_types_names_the_column() -> None:
    conn = duckdb.connect()
    conn.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
    with pytest.raises(RowsError, match=r"^t\.a: values of no single type"):
        insert_rows(conn, "t", ("a", "b"), [[{"x": 1}, "p"], [[2], "q"]])


def test_no_rows_write_nothing_and_none_columns_mean_every_column_in_order() -> None:
    conn = duckdb.connect()
    conn.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
    assert insert_rows(conn, "t", ("a", "b"), []) == 0
    assert insert_rows(conn, "t", None, [[1, "p"], [2, "q"]]) == 2
    assert conn.execute("SELECT * FROM t ORDER BY a").fetchall() == [(1, "p"), (2, "q")]


def test_write_frame_appends_replaces_and_creates_by_column_name(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
        frame = pl.DataFrame({"b": ["x", "y"], "a": [1, 2]})  # names, not positions, match
        assert write_frame(conn, "t", frame) == 2
        assert write_frame(conn, "t", frame.head(1), mode="append") == 1
        assert conn.execute("SELECT count(*) FROM t").fetchall() == [(3,)]
        write_frame(conn, "t", frame.tail(1), mode="replace")
        assert conn.execute("SELECT a, b FROM t").fetchall() == [(2, "y")]
        write_frame(conn, "made", frame.to_arrow(), mode="create")
        assert conn.execute("SELECT b, a FROM made ORDER BY a").fetchall() == [("x", 1), ("y", 2)]
        assert not conn.execute("SELECT * FROM duckdb_views() WHERE NOT internal").fetchall()


def _every_dtype() -> pl.DataFrame:
    """One column of each polars type the pipeline writes (nulls, NaN, non-ASCII included)."""
    return pl.DataFrame(
        {
            "text": ["a", None, "ü" * 20, ""],
            "blob": [b"x", None, b"", b"yz"],
            "i64": [1, None, -(2**62), 0],
            "i32": pl.Series([1, None, -3, 0], dtype=pl.Int32),
            "u32": pl.Series([1, None, 3, 0], dtype=pl.UInt32),
            "f64": [1.5, None, float("nan"), float("-inf")],
            "flag": [True, None, False, True],
            "day": [date(2020, 1, 1), None, date(1, 1, 1), date(2026, 12, 2)],
            "seen": [datetime(2020, 1, 1, 1, 2, 3, 4), None, datetime(2020, 1, 1), None],
            "utc": pl.Series([datetime(2020, 1, 1)] * 4).dt.replace_time_zone("UTC"),
            "money": pl.Series(
                [Decimal("1.5"), None, Decimal("2"), Decimal("-0.000000000001")],
                dtype=pl.Decimal(24, 12),
            ),
            "texts": [["a"], None, [], ["", None]],
            "ints": [[1], None, [2, 3], []],
            "pair": [{"a": 1, "b": "x"}, None, {"a": 2, "b": None}, {"a": None, "b": ""}],
            "cat": pl.Series(["a", None, "b", "a"], dtype=pl.Categorical),
            "enum": pl.Series(["a", None, "b", "a"], dtype=pl.Enum(["a", "b"])),
            "none": [None, None, None, None],
        }
    )


def test_frames_written_as_string_views_make_the_table_the_offset_layout_made() -> None:
    """`write_frame` hands DuckDB polars' string views; the older offset layout (polars'
    default `to_arrow()`) is the oracle: same column types, same values, for every type."""
    frame = _every_dtype()
    conn = duckdb.connect()
    write_frame(conn, "views", frame, mode="create")
    write_frame(conn, "offsets", frame.to_arrow(), mode="create")  # Arrow goes as it is
    assert conn.execute("DESCRIBE views").fetchall() == conn.execute("DESCRIBE offsets").fetchall()
    views, offsets = (
        repr(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in ("views", "offsets")
    )
    assert views == offsets  # repr: NaN equals itself
    write_frame(conn, "offsets", frame, mode="append")  # appending by name, too
    assert conn.execute(
        "SELECT count(*) FROM (SELECT * FROM offsets EXCEPT ALL "
        "SELECT * FROM views EXCEPT ALL SELECT * FROM views)"
    ).fetchall() == [(0,)]


def test_a_chunked_frame_reaches_duckdb_as_one_chunk_in_its_order(tmp_path: Path) -> None:
    """A concatenation or a file read back in batches goes to DuckDB as one chunk (see
    `as_arrow`), row order kept, whether it comes as a polars frame or an Arrow table."""
    parts = [pl.DataFrame({"n": range(k, k + 1000), "s": [f"v{k}"] * 1000}) for k in (0, 1000)]
    chunked = pl.concat(parts, rechunk=False)
    assert chunked.n_chunks() == 2
    for frame in (chunked, chunked.to_arrow()):
        arrow = as_arrow(frame)
        assert {column.num_chunks for column in arrow.columns} == {1}
        assert arrow.to_pydict() == chunked.to_arrow().to_pydict()
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t (n BIGINT, s VARCHAR)")
        with transaction(conn):
            write_frame(conn, "t", chunked)
        assert conn.execute("SELECT n FROM t").fetchall() == [(n,) for n in range(2000)]


def test_a_failed_write_inside_a_transaction_leaves_the_table_as_it_was(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t (a INTEGER NOT NULL)")
        insert_rows(conn, "t", ("a",), [[1]])
        with pytest.raises(duckdb.ConstraintException), transaction(conn):
            write_frame(conn, "t", pl.DataFrame({"a": [5]}), mode="replace")
            insert_rows(conn, "t", ("a",), [[None]])
        assert conn.execute("SELECT a FROM t").fetchall() == [(1,)]


def test_registered_views_are_gone_after_the_block_even_on_error() -> None:
    conn = duckdb.connect()
    with pytest.raises(RuntimeError), registered(conn, pl.DataFrame({"a": [1]})) as view:
        assert conn.execute(f"SELECT a FROM {view}").fetchall() == [(1,)]
        raise RuntimeError("boom")
    with pytest.raises(duckdb.CatalogException):
        conn.execute(f"SELECT * FROM {view}")


def _run(run_id: str, output: str) -> dict:
    row: dict = {c: None for c in RUN_COLUMNS}
    row.update(
        run_id=run_id, partition_key="p", setup_id="s", suite="su", case_id="c",
        case_version="v", input_id="i", repeat=0, run_date=date(2026, 11, 1),
        request_hash="h", output=output, simulated=True, cost_usd=Decimal("0.0000015"),
        cost_warnings="", wall_seconds=0.5, retries=0, provider="sim", evidence_sha256="e",
        recorded_at=datetime(2026, 11, 1, 12),
    )  # fmt: skip
    return row


def test_store_runs_replaces_a_run_and_clears_its_failure(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as conn:
        migrate(conn, MIGRATIONS)
        store_failures(conn, {"r1": "timeout: no answer", "r2": "timeout: again"})
        store_runs(conn, [_run("r1", "first"), _run("r3", "other")])
        store_runs(conn, [_run("r1", "second")])
        assert conn.execute(
            "SELECT run_id, output, cost_usd FROM model_runs ORDER BY 1"
        ).fetchall() == [
            ("r1", "second", Decimal("0.000001500000000000")),
            ("r3", "other", Decimal("0.000001500000000000")),
        ]
        assert conn.execute("SELECT run_id FROM run_failures").fetchall() == [("r2",)]
