"""Warehouse access patterns: one writer, retried locks, transactions, the analyst copy."""

import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from bench_pipeline.core.warehouse import (
    WarehouseBusyError,
    connect,
    held,
    publish_read_only_copy,
    table_checksum,
    transaction,
)

pytestmark = pytest.mark.store

HOLD_WRITER = """
import sys, time, duckdb
conn = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.close()
"""


def hold_writer(path: Path, seconds: float) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITER, str(path), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_reader_cannot_open_the_file_a_writer_holds(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    duckdb.connect(str(path)).close()
    writer = hold_writer(path, 3)
    try:
        with pytest.raises(duckdb.IOException, match="lock"):
            duckdb.connect(str(path), read_only=True)
    finally:
        writer.wait()


def test_connect_waits_for_a_briefly_held_lock_then_gives_up(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    duckdb.connect(str(path)).close()
    writer = hold_writer(path, 1.5)
    started = time.monotonic()
    with connect(path, wait_seconds=30) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert time.monotonic() - started >= 0.5
    writer.wait()
    writer = hold_writer(path, 5)
    try:
        with pytest.raises(WarehouseBusyError), connect(path, wait_seconds=0.5):
            pass
    finally:
        writer.wait()


def _memory_limit(path: Path) -> str:
    with connect(path) as conn:
        return conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def test_held_keeps_one_database_open_for_every_connect_inside_it(tmp_path: Path) -> None:
    # A global setting lives as long as the database does: it outlasts each `connect`
    # block inside `held`, and is gone once the block ends and the file is closed.
    path = tmp_path / "w.duckdb"
    default = _memory_limit(path)
    with held(path):
        with connect(path) as conn:
            conn.execute("SET GLOBAL memory_limit = '123MB'")
            conn.execute("CREATE TABLE t AS SELECT 1 AS x")
        assert _memory_limit(path) != default
        other = subprocess.run(  # another process finds the file locked
            [sys.executable, "-c", f"import duckdb; duckdb.connect({str(path)!r})"],
            capture_output=True,
            text=True,
        )
        assert other.returncode != 0 and "lock" in other.stderr
    assert _memory_limit(path) == default
    with duckdb.connect(str(path), read_only=True) as conn:  # what was written is kept
        assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_transaction_rolls_back_and_reraises(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1), (2)")
        before = table_checksum(conn, "t")
        with pytest.raises(duckdb.Error), transaction(conn):
            conn.execute("DELETE FROM t")
            conn.execute("INSERT INTO t VALUES ('not a number')")
        assert table_checksum(conn, "t") == before


def test_checksum_sees_any_change(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t (x INTEGER, y VARCHAR)")
        conn.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        before = table_checksum(conn, "t")
        conn.execute("UPDATE t SET y = 'c' WHERE x = 2")
        assert table_checksum(conn, "t") != before


def test_analyst_copy_replaces_atomically_under_an_open_reader(tmp_path: Path) -> None:
    target = tmp_path / "analyst" / "bench.duckdb"
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t AS SELECT range AS x FROM range(1000)")
        publish_read_only_copy(conn, target)
    reader = duckdb.connect(str(target), read_only=True)
    try:
        with connect(tmp_path / "w.duckdb") as conn:
            conn.execute("INSERT INTO t SELECT range FROM range(1000, 1500)")
            publish_read_only_copy(conn, target)  # the writer is never blocked by the reader
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (1000,)  # its snapshot
    finally:
        reader.close()
    with duckdb.connect(str(target), read_only=True) as fresh:
        assert fresh.execute("SELECT count(*) FROM t").fetchone() == (1500,)
    assert not list(target.parent.glob(".*partial"))


def test_a_failed_description_leaves_the_last_analyst_copy_whole(tmp_path: Path) -> None:
    """The copy and its comments are one transaction: a description that fails half-way
    leaves the previous copy in place, and no partial file."""
    target = tmp_path / "analyst" / "bench.duckdb"

    def half_then_fail(conn: duckdb.DuckDBPyConnection, catalog: str) -> None:
        conn.execute(f"COMMENT ON TABLE {catalog}.t IS 'rows of t'")
        raise RuntimeError("describing failed")

    def describe(conn: duckdb.DuckDBPyConnection, catalog: str) -> None:
        conn.execute(f"COMMENT ON TABLE {catalog}.t IS 'rows of t'")

    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t AS SELECT range AS x FROM range(10)")
        publish_read_only_copy(conn, target, describe=describe)
        conn.execute("INSERT INTO t SELECT range FROM range(10, 15)")
        with pytest.raises(RuntimeError, match="describing failed"):
            publish_read_only_copy(conn, target, describe=half_then_fail)
        conn.execute("SELECT 1")  # the warehouse connection is usable after the rollback
    with duckdb.connect(str(target), read_only=True) as copy:
        assert copy.execute("SELECT count(*) FROM t").fetchone() == (10,)
        assert copy.execute("SELECT comment FROM duckdb_tables()").fetchone() == ("rows of t",)
    assert not list(target.parent.glob(".*partial*"))


def _storage_version(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as conn:
        ((tags,),) = conn.execute(
            "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
    return tags["storage_version"]


def _contents(path: Path) -> tuple[list, list]:
    with duckdb.connect(str(path), read_only=True) as conn:
        rows = conn.execute("SELECT * FROM t ORDER BY x").fetchall()
        comments = conn.execute(
            "SELECT table_name, comment FROM duckdb_tables() ORDER BY table_name"
        ).fetchall()
    return rows, comments


def _describe(conn: duckdb.DuckDBPyConnection, catalog: str) -> None:
    conn.execute(f"COMMENT ON TABLE {catalog}.t IS 'rows of t'")


def test_a_new_warehouse_is_kept_in_the_readers_format(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t AS SELECT range AS x FROM range(10)")
    assert _storage_version(tmp_path / "w.duckdb") == "v1.2.0+"


@pytest.mark.parametrize("warehouse_format", ["readers", "newer"])
def test_analyst_copy_is_whole_and_readable_from_either_warehouse_format(
    tmp_path: Path, warehouse_format: str
) -> None:
    """A warehouse in the readers' format is copied byte for byte, a newer one table by
    table: either way the copy holds every committed row (none left in the write-ahead log)
    and the comments, in the readers' format."""
    path, target = tmp_path / "w.duckdb", tmp_path / "analyst" / "bench.duckdb"
    if warehouse_format == "newer":
        duckdb.connect(str(path)).close()  # DuckDB's own default format
    with connect(path) as conn:
        conn.execute("CREATE TABLE t AS SELECT range AS x FROM range(1000)")
        conn.execute("INSERT INTO t VALUES (1000)")  # in the WAL until a checkpoint
        publish_read_only_copy(conn, target, describe=_describe)
    expected = "v1.2.0+" if warehouse_format == "readers" else "v2.0.0+"
    assert _storage_version(path) == expected
    assert _storage_version(target) == "v1.2.0+"
    rows, comments = _contents(target)
    assert rows == [(x,) for x in range(1001)]
    assert comments == [("t", "rows of t")]


def test_analyst_copy_with_another_transaction_open_copies_only_committed_rows(
    tmp_path: Path,
) -> None:
    """Another cursor's open transaction: the checkpoint writes only committed rows, so the
    byte copy shows none of that transaction's (and a failed checkpoint would copy table by
    table, with the same result)."""
    target = tmp_path / "analyst" / "bench.duckdb"
    with connect(tmp_path / "w.duckdb") as conn:
        conn.execute("CREATE TABLE t AS SELECT range AS x FROM range(10)")
        other = conn.cursor()
        other.execute("BEGIN TRANSACTION")
        other.execute("INSERT INTO t VALUES (99)")
        publish_read_only_copy(conn, target, describe=_describe)
        other.execute("ROLLBACK")
        other.close()
    rows, comments = _contents(target)
    assert rows == [(x,) for x in range(10)]
    assert comments == [("t", "rows of t")]
