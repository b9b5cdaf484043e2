"""The one way rows reach a warehouse table: as an Arrow table DuckDB reads in bulk.

DuckDB binds an `executemany` row by row (about 0.5 ms a row for 30 text columns), while an
Arrow table is scanned column by column in one statement; every writer of the pipeline goes
through `write_frame`, and `insert_rows` turns Python rows into Arrow typed after the target
table's own columns first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Literal

import duckdb
import polars as pl
import pyarrow as pa

WriteMode = Literal["append", "replace", "create"]
"""`append` adds the rows; `replace` empties the table first (same transaction as the
caller's); `create` makes (or remakes) the table with the frame's own columns."""

_names = itertools.count()


class RowsError(ValueError):
    """Rows that cannot be written to a table, with the table and column that refused them."""


def write_frame(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    frame: pl.DataFrame | pa.Table,
    *,
    mode: WriteMode = "append",
) -> int:
    """Write a frame's rows into `table`, matching columns by name.

    The caller owns the transaction: several writes inside one `transaction(conn)` land
    together or not at all.

    Args:
        conn: An open warehouse connection.
        table: The target table, optionally schema-qualified (`staging.x`).
        frame: The rows; a polars frame or an Arrow table.
        mode: See `WriteMode`.

    Returns:
        The number of rows written.
    """
    arrow = as_arrow(frame)
    with registered(conn, arrow) as view:
        if mode == "create":
            conn.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {view}")
        else:
            if mode == "replace":
                conn.execute(f"DELETE FROM {table}")
            if arrow.num_rows:
                conn.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view}")
    return arrow.num_rows


def as_arrow(frame: pl.DataFrame | pa.Table) -> pa.Table:
    """The frame as Arrow for DuckDB to scan, text as string views: polars' own layout, so
    no string is copied, and DuckDB reads views about twice as fast as the offset layout
    polars converts to by default (the table DuckDB makes is the same, type for type).

    The rows come as one chunk: DuckDB writes an insert into an existing table from a
    single-chunk Arrow table as it goes, but one from many chunks (a concatenation, a file
    read back in batches) only when the connection closes, at the checkpoint: at 1M rows,
    0.3-0.6 s at the close against about 0.05 s to join the chunks first."""
    if isinstance(frame, pa.Table):
        return frame.combine_chunks() if _chunked(frame) else frame
    if max(frame.n_chunks("all"), default=1) > 1:
        frame = frame.rechunk()
    return frame.to_arrow(compat_level=pl.CompatLevel.newest())


def _chunked(table: pa.Table) -> bool:
    return any(column.num_chunks > 1 for column in table.columns)


@contextmanager
def registered(conn: duckdb.DuckDBPyConnection, frame: pl.DataFrame | pa.Table) -> Iterator[str]:
    """Make a frame queryable under a fresh view name for the `with` block (an UPDATE … FROM).

    Yields:
        The view's name, unique within the process.
    """
    view = f"_bench_frame_{next(_names)}"
    conn.register(view, as_arrow(frame))
    try:
        yield view
    except BaseException:
        # In a failed transaction DuckDB refuses even the unregister; the caller's error is
        # the one to see, and the unique name cannot collide with a later view.
        with suppress(duckdb.Error):
            conn.unregister(view)
        raise
    conn.unregister(view)


def insert_rows(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str] | None,
    rows: Sequence[Sequence[Any]],
) -> int:
    """Append Python rows (values in `columns` order); nothing when there are none.

    Args:
        conn: An open warehouse connection.
        table: The target table.
        columns: The column each value position goes to (the rest take their defaults);
            None for every column of the table, in its order.
        rows: The rows, each a sequence of `len(columns)` values.

    Returns:
        The number of rows written.

    Raises:
        RowsError: A row has the wrong number of values, or a column's values are of no
            type Arrow can hold together (the message names the table and column).
    """
    if not rows:
        return 0
    return write_frame(conn, table, rows_to_arrow(conn, table, columns, rows))


def rows_to_arrow(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str] | None,
    rows: Sequence[Sequence[Any]],
) -> pa.Table:
    """Python rows as an Arrow table typed like `table`'s columns.

    A column whose values do not fit the table's type as they are (a float for a DECIMAL, a
    string for an INTEGER) keeps the type Arrow infers, and DuckDB casts it on insert exactly
    as it casts a bound parameter.
    """
    chosen = "*" if columns is None else ", ".join(f'"{c}"' for c in columns)
    schema = conn.sql(f"SELECT {chosen} FROM {table} LIMIT 0").to_arrow_table().schema
    names = schema.names
    width = len(names)
    if any(len(row) != width for row in rows):
        number = next(n for n, row in enumerate(rows) if len(row) != width)
        raise RowsError(
            f"{table}: row {number} has {len(rows[number])} values for {width} columns {names}"
        )
    arrays = [
        _array(table, field.name, values, field.type)
        for field, values in zip(schema, zip(*rows, strict=True), strict=True)
    ]
    return pa.Table.from_arrays(arrays, names=names)


def _array(table: str, column: str, values: Sequence[Any], target: pa.DataType) -> pa.Array:
    try:
        return pa.array(values, type=target)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    try:
        return pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
        raise RowsError(f"{table}.{column}: values of no single type ({error})") from error
