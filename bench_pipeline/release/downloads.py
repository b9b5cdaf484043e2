"""Published downloads: one CSV and one JSON file per table, written one way everywhere.

A missing value is an empty CSV cell and a JSON `null`, never 0. Exact decimals (prices,
costs) are written as strings in JSON so no reader's float parser rounds them. Timestamps are
ISO 8601 with their offset (UTC) in both.

CSV text cells that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a
tab or a carriage return; OWASP's rule for CSV injection) get a leading apostrophe, since
model names come from outside sources and submitters. Only text columns are touched, never a
number; JSON and Parquet keep the exact value.
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import polars as pl

from bench_pipeline.core.files import write_bytes

ISO_TIMESTAMP = "%Y-%m-%dT%H:%M:%S%.f%:z"
"""ISO 8601 with the offset (`2026-08-14T09:30:00.5+00:00`); the fraction only as long as
needed."""


def _plain_decimals(column: pl.Expr) -> pl.Expr:
    """`core.money.plain` for a whole column: every digit, no trailing zeros, zero as `0`.

    Trailing zeros, then a bare point, are stripped from text with a point (a decimal's text
    has no exponent): a character strip, not a regular expression, which took 2.4 times as
    long (three price columns of 155,000 rows, 50× the recorded data)."""
    text = column.cast(pl.Utf8)
    stripped = text.str.strip_chars_end("0").str.strip_chars_end(".")
    text = pl.when(text.str.contains(".", literal=True)).then(stripped).otherwise(text)
    return pl.when(text == "-0").then(pl.lit("0")).otherwise(text)


def published_values(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame as a download writes it: exact decimals as plain text (3.437500000000 →
    3.4375), timestamps as ISO 8601 text in UTC with their offset (a timestamp without a
    zone is UTC, as the warehouse keeps every one), dates as `YYYY-MM-DD`; one vectorised
    pass per column, no row loop. Its result is its own: every converted column is text."""
    converted = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Decimal):
            converted.append(_plain_decimals(pl.col(name)).alias(name))
        elif isinstance(dtype, pl.Datetime):
            utc = (
                pl.col(name).dt.convert_time_zone("UTC")
                if dtype.time_zone
                else pl.col(name).dt.replace_time_zone("UTC")
            )
            converted.append(utc.dt.to_string(ISO_TIMESTAMP).alias(name))
        elif dtype == pl.Date:
            converted.append(pl.col(name).dt.to_string("%Y-%m-%d").alias(name))
    return frame.with_columns(converted) if converted else frame


CHUNK_ROWS = 20_000
"""Rows a large file is rendered in at a time (written and digested a chunk at a time, never
held whole): at 50× the recorded data `item_board_pairs.json` is 670 MB, and writing it in
chunks of this many rows took 4.9–6.5 s against 8.4–10.9 s whole (three pairs, one process,
a loaded machine), as no gigabyte of fresh memory has to be found for it."""


RENDER_AHEAD = 2
"""Chunks of a file rendered at once, each by its own thread (polars renders without the
GIL), while the chunk before them is stored: one rendering thread left the second core idle
while `item_board_pairs.json` (670 MB at 50× the recorded data) was rendered."""

Part = bytes | memoryview
Render = Callable[[pl.DataFrame, int, bool], Part]
"""Renders one chunk of rows, given its number and whether it is the last."""


def _chunks(frame: pl.DataFrame) -> Iterator[tuple[pl.DataFrame, bool]]:
    """The frame `CHUNK_ROWS` rows at a time (one empty chunk when it has none), each with
    whether it is the last."""
    starts = range(0, max(frame.height, 1), CHUNK_ROWS)
    for start in starts:
        yield frame.slice(start, CHUNK_ROWS), start == starts[-1]


def _rendered(frame: pl.DataFrame, render: Render) -> Iterator[Part]:
    """Every chunk of the frame rendered, in order: up to `RENDER_AHEAD` are rendered at
    once by other threads, and no more wait than that (memory stays flat)."""
    with ThreadPoolExecutor(max_workers=RENDER_AHEAD) as pool:
        pending: deque[Future[Part]] = deque()
        for number, (chunk, last) in enumerate(_chunks(frame)):
            pending.append(pool.submit(render, chunk, number, last))
            if len(pending) == RENDER_AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _json_lines(chunk: pl.DataFrame, _: int, last: bool) -> Part:
    """A chunk's rows as the lines of a JSON array, the separator after every row but the
    file's last."""
    buffer = io.BytesIO()
    chunk.write_ndjson(buffer)  # each row one line ending in "\n"; JSON has no raw newline
    lines = buffer.getvalue().replace(b"\n", b",\n")
    return memoryview(lines)[:-2] if last else lines


def json_parts(frame: pl.DataFrame) -> Iterator[Part]:
    """The bytes of `<name>.json` for this frame, in parts that joined are `json_bytes` (a
    large table's file is written and digested a chunk of rows at a time)."""
    values = published_values(frame)
    if not values.height:
        yield b"[]\n"
        return
    yield b"[\n"
    yield from _rendered(values, _json_lines)
    yield b"\n]\n"


def json_bytes(frame: pl.DataFrame) -> bytes:
    """The bytes of `<name>.json` for this frame: an array of objects, one row per line,
    written by polars' own JSON writer (no Python object per value, nor per row)."""
    return b"".join(json_parts(frame))


FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formulas(frame: pl.DataFrame, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """Text cells starting like a formula, prefixed with an apostrophe (for CSV only), in
    `columns` (default: every text column). Only a column holding such a cell is rewritten:
    most hold none, and rewriting copies every cell."""
    pattern = "^[" + "".join("\\" + c if c in "-+" else c for c in FORMULA_LEADS) + "]"
    texts = [n for n, dtype in frame.schema.items() if dtype == pl.Utf8]
    texts = texts if columns is None else [n for n in columns if n in texts]
    if not texts or not frame.height:
        return frame
    leads = frame.select(pl.col(n).str.contains(pattern).any() for n in texts).row(0)
    return frame.with_columns(
        pl.when(pl.col(name).str.contains(pattern))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name, led in zip(texts, leads, strict=True)
        if led
    )


def _csv_rows(chunk: pl.DataFrame, number: int, _: bool) -> Part:
    """A chunk's rows as CSV records, after the header if it is the first."""
    buffer = io.BytesIO()
    chunk.write_csv(buffer, null_value="", include_header=number == 0)
    return buffer.getvalue()


def csv_parts(frame: pl.DataFrame, published: pl.DataFrame | None = None) -> Iterator[Part]:
    """The bytes of `<name>.csv` for this frame, a chunk of rows at a time (the header with
    the first), joined `csv_bytes`.

    Args:
        frame: The rows.
        published: `published_values(frame)` when already made (for the JSON), so it is not
            made twice; only the columns that are text in `frame` are neutralised in it.
    """
    values = published_values(frame) if published is None else published
    texts = [name for name, dtype in frame.schema.items() if dtype == pl.Utf8]
    yield from _rendered(neutralise_formulas(values, texts), _csv_rows)


def csv_bytes(frame: pl.DataFrame) -> bytes:
    """The bytes of `<name>.csv` for this frame (formulas neutralised, missing values empty)."""
    return b"".join(csv_parts(frame))


def write_download(frame: pl.DataFrame, name: str, directory: Path) -> dict[str, Path]:
    """Write `<name>.csv` and `<name>.json` (an array of objects, same columns) atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = directory / f"{name}.csv", directory / f"{name}.json"
    write_bytes(csv_path, csv_bytes(frame))
    write_bytes(json_path, json_bytes(frame))
    return {"csv": csv_path, "json": json_path}
