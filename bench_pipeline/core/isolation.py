"""One inbox file at a time: a bad value in one file never stops the others.

The intakes (submitted runs, review files) check every file against its model before the
warehouse is opened, and those checks name the field at fault. What a check cannot foresee,
a value Python, Arrow or DuckDB refuses on the way in (a date no timestamp holds, a number
no column holds, text that is not Unicode), must still cost only that file: each file is
stored in a transaction of its own, and when storing it raises one of `RECORD_ERRORS` the
transaction is rolled back and the file is recorded as rejected instead, with the column
named where the error names one and the error's own words as the reason.

Faults of the machine, not of the file (a full disk, a lock held, no memory) are not in
`RECORD_ERRORS`: they propagate, nothing is recorded for the file, and the next run takes
it again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import duckdb
import pyarrow as pa

from bench_pipeline.core.warehouse import transaction

RECORD_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,  # UnicodeError, pydantic's ValidationError and the writer's RowsError too
    TypeError,
    ArithmeticError,  # OverflowError: a datetime moved out of range by its offset
    LookupError,
    RecursionError,
    pa.ArrowException,
    duckdb.DataError,  # a value DuckDB cannot convert or that is out of its range
    duckdb.IntegrityError,  # a NOT NULL or key constraint
    duckdb.InvalidInputException,
)
"""What one file's values can raise while it is checked or stored."""

MAX_REASON = 300
"""The longest error text, file name or field an intake records (its start, then its length)."""
MAX_STORED_REASON = 2_000
"""The longest rejection reason an intake records."""

Item = TypeVar("Item")


def storable(text: str, limit: int = MAX_REASON) -> str:
    """Text as an intake records it (a file name, a field, a reason): what no text column
    takes (a lone surrogate, a file name's bytes that are not UTF-8) written as an escape,
    and past `limit` characters its start and its length."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{text[:limit]}… ({len(text)} characters)" if len(text) > limit else text


def error_reason(error: BaseException) -> str:
    """An unforeseen error in a few words: its type and the start of its message."""
    return storable(f"{type(error).__name__}: {' '.join(str(error).split()) or 'no message'}")


def error_column(error: BaseException, table: str, columns: Sequence[str]) -> str | None:
    """The column of `table` an error names (`table.column: …` from the writer, DuckDB's
    `… column "x"` or `source column x`), if one of `columns`."""
    text = str(error)
    patterns = (
        rf"\b{re.escape(table)}\.(\w+)",
        r'column "?(\w+)"?',
    )
    for pattern in patterns:
        for name in re.findall(pattern, text):
            if name in columns:
                return name
    return None


def take_each(
    conn: duckdb.DuckDBPyConnection,
    items: Iterable[Item],
    take: Callable[[duckdb.DuckDBPyConnection, Item], None],
    refuse: Callable[[duckdb.DuckDBPyConnection, Item, BaseException], None],
) -> None:
    """Store each item in a transaction of its own (`take`); when it raises one of
    `RECORD_ERRORS`, roll that back and record the item as refused (`refuse`, in a
    transaction of its own), then go on with the next. Any other error propagates, leaving
    the items before it stored and the rest for a later run."""
    for item in items:
        try:
            with transaction(conn):
                take(conn, item)
        except RECORD_ERRORS as error:
            with transaction(conn):
                refuse(conn, item, error)
