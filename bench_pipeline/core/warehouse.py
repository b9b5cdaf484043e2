"""The DuckDB warehouse: short-lived connections, versioned migrations, table checksums.

DuckDB lets one process hold a read-write connection, and while it does every other open
fails at once with a lock error. Writers therefore open late, close early, and retry a busy
file for a bounded time instead of failing a run because an analyst briefly held the file.
`bench run` is the exception: it holds the file for the whole run (see `held`).
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl

from bench_pipeline.core.files import replacing
from bench_pipeline.core.writer import write_frame

LOCK_MESSAGE = "Could not set lock on file"
STORAGE_VERSION = "v1.2.0"
"""The storage format of every file handed to readers (the analyst copy, a release's DuckDB
file): DuckDB 2.x writes its own format by default, which DuckDB 1.x (1.2 and later, many
analysts' installs and the `duckdb` CLI) refuses to open; both read this one. A new warehouse
is created in it too, so its analyst copy can be a copy of its bytes."""
MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class WarehouseBusyError(RuntimeError):
    """Another process kept the warehouse file locked for longer than we were willing to wait."""


@contextmanager
def connect(
    path: Path, *, read_only: bool = False, wait_seconds: float = 60.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse, retrying while another process holds its lock; always close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_seconds
    delay = 0.05
    # Applies only to a file this opening creates; an existing one keeps its format.
    config: dict[str, str | bool | int | float | list[str]] = {
        "storage_compatibility_version": STORAGE_VERSION
    }
    while True:
        try:
            conn = duckdb.connect(str(path), read_only=read_only, config=config)
            break
        except duckdb.IOException as error:
            if LOCK_MESSAGE not in str(error):
                raise
            if time.monotonic() >= deadline:
                raise WarehouseBusyError(f"{path} stayed locked for {wait_seconds:.0f}s") from error
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Keep the warehouse open in this process until the block ends, so that every `connect`
    inside it joins the open database (DuckDB keeps one per file and process) instead of
    starting one and checkpointing at its close: about 17 ms each, and a `bench run` connects
    some 290 times. Meanwhile other processes wait for the file, as they would for a step."""
    with connect(path):
        yield


@contextmanager
def transaction(conn: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN … COMMIT that re-raises on failure.

    DuckDB quietly turns COMMIT into a rollback after a failed statement, so the error must be
    propagated explicitly or the caller would believe the work was saved.
    """
    conn.execute("BEGIN TRANSACTION")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def migration_files(directory: Path) -> list[tuple[int, Path]]:
    """The numbered `NNNN_name.sql` files of a migrations folder, in order."""
    found = []
    for path in sorted(directory.iterdir()):
        match = MIGRATION_NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    versions = [version for version, _ in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"two migrations share a number in {directory}")
    return found


def migrate(conn: duckdb.DuckDBPyConnection, directory: Path) -> list[int]:
    """Apply every migration not yet recorded in `schema_migrations`; return those applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for version, path in migration_files(directory):
        if version in done:
            continue
        with transaction(conn):
            conn.execute(path.read_text())
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, now()::TIMESTAMP)",
                [version, path.name],
            )
        applied.append(version)
    return applied


def table_checksum(conn: duckdb.DuckDBPyConnection, table: str) -> tuple[int, str]:
    """Row count and an order-independent digest of every value in a table."""
    ((count, digest),) = conn.execute(
        f"SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), '') "
        f"FROM (SELECT md5(CAST(t AS VARCHAR)) AS h FROM {table} AS t)"
    ).fetchall()
    return int(count), str(digest)


def database_file(conn: duckdb.DuckDBPyConnection) -> Path:
    """The file the connection's database lives in (absolute: every process resolves it the
    same way). Raises ValueError for an in-memory database, which has none."""
    rows = conn.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    path = rows[0][0] if rows else None
    if not path:
        raise ValueError("the connection's database is in memory: it has no file")
    return Path(path).resolve()


def fetch_frame(
    conn: duckdb.DuckDBPyConnection, sql: str, params: list | None = None
) -> pl.DataFrame:
    """A query's result as a polars frame (through Arrow, keeping DECIMAL and dates).

    Runs on its own cursor, so a half-read result elsewhere on `conn` does not get in the way.
    """
    with conn.cursor() as cursor:
        result = pl.from_arrow(cursor.sql(sql, params=params).to_arrow_table())
    assert isinstance(result, pl.DataFrame)
    return result


def publish_read_only_copy(
    conn: duckdb.DuckDBPyConnection,
    target: Path,
    describe: Callable[[duckdb.DuckDBPyConnection, str], object] | None = None,
) -> Path:
    """Copy the open warehouse into a fresh file and move it over `target`.

    Analysts open `target` read-only. The rename is atomic, and a reader that already has the
    old file open keeps reading it undisturbed, so readers never hold the writer's lock. The
    copy is in `STORAGE_VERSION`, so DuckDB 1.x opens it too: a warehouse kept in that format
    is checkpointed and copied byte for byte (at 50x the recorded data, 1.5 s against 9.8 s
    for copying every table), any other one table by table.

    Args:
        conn: The open warehouse.
        target: Where the copy goes.
        describe: Called with `conn` and the copy's catalog name before the copy is closed
            (the release adds its table and column comments there).
    """
    with replacing(target) as partial:
        copied = _copy_checkpointed_file(conn, partial)
        options = "" if copied else f" (STORAGE_VERSION '{STORAGE_VERSION}')"
        conn.execute(f"ATTACH '{partial}' AS analyst_copy{options}")
        try:
            with transaction(conn):  # one commit, not one per table and comment
                if not copied:
                    conn.execute(f"COPY FROM DATABASE {_catalog(conn)} TO analyst_copy")
                if describe is not None:
                    describe(conn, "analyst_copy")
        finally:
            conn.execute("DETACH analyst_copy")
    return target


def _catalog(conn: duckdb.DuckDBPyConnection) -> str:
    return str(conn.execute("SELECT current_database()").fetchall()[0][0])


def _copy_checkpointed_file(conn: duckdb.DuckDBPyConnection, partial: Path) -> bool:
    """Copy the warehouse's file to `partial` when that is a complete copy in
    `STORAGE_VERSION`: the file is in that format and a checkpoint (which writes committed
    rows only) left nothing in its write-ahead log. False, copying nothing, otherwise. The
    caller is the warehouse's one writer while it copies (`bench run` runs one step at a
    time, and other processes cannot open the file)."""
    ((path, tags),) = conn.execute(
        "SELECT path, tags FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    if not path or tags.get("storage_version") != f"{STORAGE_VERSION}+":
        return False
    try:
        conn.execute("CHECKPOINT")
    except duckdb.Error:  # e.g. a transaction elsewhere holds changes a checkpoint cannot take
        return False
    source = Path(path)
    if Path(f"{source}.wal").exists():
        return False
    shutil.copyfile(source, partial)
    return True


def replace_tables(conn: duckdb.DuckDBPyConnection, frames: dict[str, pl.DataFrame]) -> None:
    """Replace the whole content of each table with its frame, all in one transaction."""
    with transaction(conn):
        for table, frame in frames.items():
            write_frame(conn, table, frame, mode="replace")
