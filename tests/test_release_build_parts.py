"""Parts of a release build that need no warehouse: the key check's fast path agrees with
hashing every key, and the ledger's overlapped writing stores and digests every part in
order."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.release.build import _check_keys
from bench_pipeline.release.ledger import Ledger
from bench_pipeline.release.schema import Column, PublishedTable

pytestmark = pytest.mark.unit

KEY = ("a", "b")
TABLE = PublishedTable("t", "T", "SELECT 1", KEY, "m", tuple(Column(n, "string", n) for n in KEY))
cells = st.one_of(st.none(), st.sampled_from(["", "x", "xy", "y"]))


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(cells, cells), max_size=8), ordered=st.booleans())
def test_the_key_check_refuses_exactly_the_repeated_keys(
    rows: list[tuple[str | None, str | None]], ordered: bool
) -> None:
    frame = pl.DataFrame(rows, schema={"a": pl.Utf8, "b": pl.Utf8}, orient="row")
    if ordered:  # the fast path's case: rows in key order
        frame = frame.sort(KEY, nulls_last=True)
    repeated = len(set(rows)) < len(rows)
    if repeated:
        with pytest.raises(ValueError, match="is not unique"):
            _check_keys(TABLE, frame)
    else:
        _check_keys(TABLE, frame)


def test_the_ledger_writes_and_digests_every_part_in_order(tmp_path: Path) -> None:
    parts = [bytes([i % 251]) * (i * 997) for i in range(40)]
    written = Ledger(tmp_path).write("data/t.json", iter(parts))
    whole = b"".join(parts)
    assert (tmp_path / "data" / "t.json").read_bytes() == whole
    assert written.sha256 == hashlib.sha256(whole).hexdigest() and written.size == len(whole)


def test_a_failing_part_leaves_no_entry(tmp_path: Path) -> None:
    def parts():
        yield b"a" * 10_000
        raise RuntimeError("render failed")

    ledger = Ledger(tmp_path)
    with pytest.raises(RuntimeError, match="render failed"):
        ledger.write("t.csv", parts())
    assert "t.csv" not in ledger._files
