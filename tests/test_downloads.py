"""Downloads: missing stays missing (empty CSV cell, JSON null), decimals stay exact."""

import csv
import json
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal

import polars as pl
import pytest
from earlier_release import earlier_csv, earlier_json
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.core.money import plain
from bench_pipeline.release import downloads
from bench_pipeline.release.downloads import (
    csv_bytes,
    json_bytes,
    write_download,
)

pytestmark = pytest.mark.unit


def test_missing_values_are_empty_in_csv_and_null_in_json(tmp_path) -> None:
    frame = pl.DataFrame(
        {
            "model_id": ["a/x", "b/y"],
            "known_good_index": [71.5, None],
            "index_components": [4, 0],
            "price": pl.Series([Decimal("3.4375"), None], dtype=pl.Decimal(24, 12)),
        }
    )
    paths = write_download(frame, "t", tmp_path)
    rows = list(csv.DictReader(paths["csv"].open()))
    assert rows[1]["known_good_index"] == "" and rows[1]["price"] == ""
    assert rows[0]["price"] == "3.4375" and rows[1]["index_components"] == "0"
    records = json.loads(paths["json"].read_text())
    assert records[1]["known_good_index"] is None and records[1]["price"] is None
    assert records[0]["price"] == "3.4375"  # exact, as a string
    assert list(records[0]) == frame.columns
    assert not list(tmp_path.glob(".*partial"))


def test_same_frame_gives_byte_identical_files(tmp_path) -> None:
    frame = pl.DataFrame({"a": [1, 2], "b": ["x", None]})
    first = {k: p.read_bytes() for k, p in write_download(frame, "t", tmp_path / "1").items()}
    second = {k: p.read_bytes() for k, p in write_download(frame, "t", tmp_path / "2").items()}
    assert first == second


def test_decimals_are_published_as_plain_text_and_timestamps_with_their_offset(tmp_path) -> None:
    values = ["3.437500000000", "30", "0", "-0.000", "-0.5", "0.00000015", "123456789012.5"]
    decimals = [Decimal(v) for v in values]
    naive = [datetime(2026, 8, 14, 9, 30), datetime(2026, 8, 14, 9, 30, 1, 250_000)]
    frame = pl.DataFrame(
        {
            "price": pl.Series([*decimals, None], dtype=pl.Decimal(24, 12)),
            "seen": pl.Series([*naive, *[None] * 6]),
            "zoned": pl.Series([*naive, *[None] * 6]).dt.replace_time_zone("Europe/Paris"),
        }
    )
    paths = write_download(frame, "t", tmp_path)
    records = json.loads(paths["json"].read_text())
    assert [r["price"] for r in records] == [*(plain(d) for d in decimals), None]
    assert [datetime.fromisoformat(r["seen"]) for r in records[:2]] == [
        t.replace(tzinfo=UTC) for t in naive
    ]
    assert records[0]["zoned"] == "2026-08-14T07:30:00+00:00"  # 09:30 in Paris, in UTC
    cells = list(csv.DictReader(paths["csv"].open()))
    assert [c["seen"] for c in cells[:2]] == [r["seen"] for r in records[:2]]
    assert [c["price"] for c in cells] == [r["price"] or "" for r in records]


hostile_text = st.none() | st.text(max_size=8) | st.sampled_from(
    ["=1+1", "-x", "\n", "a\r\nb", '"', "é✓", "\\u0041", ",\n", "]", "\t@"])  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            hostile_text,
            st.none() | st.integers(-(2**40), 2**40),
            st.none() | st.floats(allow_nan=False),
            st.none() | st.decimals(places=12, min_value=-(10**6), max_value=10**6),
            st.none() | st.datetimes(timezones=st.just(UTC)),
            st.none() | st.booleans(),
        ),
        max_size=12,
    )
)
def test_renderings_are_the_earlier_bytes(rows: list[tuple]) -> None:
    """The JSON and CSV bytes (written without a Python string per row) are those the
    earlier rendering wrote, on hostile text, every type, nulls and no rows at all."""
    frame = pl.DataFrame(
        rows,
        schema={
            "text": pl.Utf8,
            "count": pl.Int64,
            "score": pl.Float64,
            "price": pl.Decimal(24, 12),
            "at": pl.Datetime("us", "UTC"),
            "flag": pl.Boolean,
        },
        orient="row",
    )
    for part in (frame, frame.select("text"), frame.select("price", "at")):
        assert json_bytes(part) == earlier_json(part)
        assert csv_bytes(part) == earlier_csv(part)
    assert json_bytes(pl.DataFrame()) == earlier_json(pl.DataFrame())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.none() | st.text(), max_size=9), st.integers(1, 4))
def test_renderings_in_chunks_are_the_earlier_bytes(
    texts: list[str | None], chunk_rows: int
) -> None:
    """A file rendered a chunk of rows at a time (here 1 to 4 rows, so most frames span
    several chunks, the last one partial or full) is byte for byte the earlier rendering."""
    frame = pl.DataFrame(
        {"text": texts, "n": list(range(len(texts)))}, schema={"text": pl.Utf8, "n": pl.Int64}
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(downloads, "CHUNK_ROWS", chunk_rows)
        assert json_bytes(frame) == earlier_json(frame)
        assert csv_bytes(frame) == earlier_csv(frame)
        assert len(list(downloads.csv_parts(frame))) == max(1, -(-len(texts) // chunk_rows))


def test_chunks_rendered_at_once_come_out_in_order() -> None:
    """Chunks rendered by several threads are yielded in row order, although a later chunk
    finishes first, and no more than `RENDER_AHEAD` are rendered at once."""
    running, most = 0, 0
    lock = threading.Lock()

    def render(chunk: pl.DataFrame, number: int, last: bool) -> bytes:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02 if number % 2 == 0 else 0.0)  # the next chunk overtakes this one
        with lock:
            running -= 1
        return f"{number}:{chunk['n'].to_list()}:{last};".encode()

    frame = pl.DataFrame({"n": list(range(7))})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(downloads, "CHUNK_ROWS", 2)
        parts = list(downloads._rendered(frame, render))
    assert b"".join(parts) == b"0:[0, 1]:False;1:[2, 3]:False;2:[4, 5]:False;3:[6]:True;"
    assert most <= downloads.RENDER_AHEAD


def test_csv_from_the_json_values_neutralises_only_what_was_text() -> None:
    """The CSV written from the values already converted for the JSON is the CSV written
    from the rows: a negative decimal (text once converted) gets no apostrophe, a text
    cell starting like a formula does."""
    frame = pl.DataFrame(
        {
            "name": ["-x", "ok", None],
            "price": [Decimal("-3.5"), Decimal("2"), None],
            "quiet": ["a", "b", "c"],
        },
        schema={"name": pl.Utf8, "price": pl.Decimal(24, 12), "quiet": pl.Utf8},
    )
    published = downloads.published_values(frame)
    text = b"".join(downloads.csv_parts(frame, published))
    assert text == csv_bytes(frame) == earlier_csv(frame)
    assert text.splitlines()[1] == b"'-x,-3.5,a"
