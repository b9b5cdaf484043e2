"""Staging's fast paths give exactly what their references give: the JSON parse what Python's
`json` gives, the column helpers what their value-by-value definitions give.

`payload._parse_json` reads with msgspec and hands whatever msgspec refuses to Python's parser;
the reference is the same function with `fast=False` (`json.loads`, with its cut of nesting
too deep for Python), called from the same depth of the stack.
Every test compares the two outcomes: the same document (the same Python types, the same
float bits, the same key order) or the same error, on hostile bytes, on random documents
broken at random, on numbers of every kind and on nesting around the recursion limit.
"""

from __future__ import annotations

import json
import math
import random
import struct
import sys
from decimal import Decimal
from functools import partial
from itertools import repeat
from typing import Any
from unittest import mock

import polars as pl
import pytest

from bench_pipeline.ingest import payload, validation
from bench_pipeline.ingest.contract import TOO_DEEP
from bench_pipeline.ingest.payload import NESTING_CUT, PayloadError, RawFile

pytestmark = pytest.mark.unit


def same(a: Any, b: Any) -> bool:
    """Equal as documents: same types all the way down, floats bit for bit, keys in order
    (walked with a stack, not recursion: the documents nest up to the recursion limit)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            pending += [(x[k], y[k]) for k in x]
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            pending += zip(x, y, strict=True)
        elif isinstance(x, float):
            if struct.pack("<d", x) != struct.pack("<d", y):
                return False
        elif x != y:
            return False
    return True


# Called the same way, from the same depth of the stack (a call through `partial` counts one
# level of the recursion limit more than a direct call).
fast_parse = partial(payload._parse_json, fast=True)
by_python = partial(payload._parse_json, fast=False)


def outcome(parse: Any, content: bytes) -> tuple:
    try:
        return ("document", parse(RawFile("f.json", content)))
    except Exception as error:  # the engine turns any of these into the run's reason
        return ("error", type(error).__name__, str(error))


def assert_same_parse(content: bytes) -> tuple:
    fast, reference = (
        outcome(fast_parse, content),
        outcome(by_python, content),
    )
    if reference[0] == "error":
        assert fast == reference
    else:
        assert fast[0] == "document" and same(fast[1], reference[1]), content[:200]
    return reference


BASE = (
    b'[{"name": "a", "score": 0, "n": 1, "tags": ["x", {"k": null}], "ok": true},\n'
    b' {"name": "b\\u00e9\\"]", "score": 0.5, "n": -12, "nested": {"a": {"b": [1, 2.5e3]}}}]'
)
HOSTILE: dict[str, bytes] = {
    "plain": BASE,
    "NaN literal": BASE.replace(b": 0,", b": NaN,"),
    "Infinity literal": BASE.replace(b": 0,", b": Infinity,"),
    "minus Infinity": BASE.replace(b": 0,", b": -Infinity,"),
    "huge exponent": BASE.replace(b": 0,", b": 1e999,"),
    "signed exponent": BASE.replace(b": 0,", b": -2.5E+400,"),
    "largest float + 1 ulp": BASE.replace(b": 0,", b": 1.7976931348623159e308,"),
    "long digits": BASE.replace(b": 0,", b": 1" + b"0" * 400 + b".5,"),
    "tiny exponent": BASE.replace(b": 0,", b": 5e-400,"),
    "subnormal": BASE.replace(b": 0,", b": 2.4703282292062328e-324,"),
    "negative zero": BASE.replace(b": 0,", b': -0, "z": -0.0,'),
    "big integer": BASE.replace(b": 0,", b": 123456789012345678901234567890,"),
    "u64 max": BASE.replace(b": 0,", b": 18446744073709551615,"),
    "u64 max + 1": BASE.replace(b": 0,", b": 18446744073709551616,"),
    "i64 min - 1": BASE.replace(b": 0,", b": -9223372036854775809,"),
    "4300 digits": BASE.replace(b": 0,", b": 1" + b"0" * 4299 + b","),
    "4301 digits": BASE.replace(b": 0,", b": 1" + b"0" * 4300 + b","),
    "duplicate key": BASE.replace(b'"name": ', b'"name": "first", "n": 7, "name": '),
    "lone high surrogate": BASE.replace(b'"name": "', b'"name": "\\ud800'),
    "lone low surrogate": BASE.replace(b'"name": "', b'"name": "\\udc00'),
    "reversed pair": BASE.replace(b'"name": "', b'"name": "\\udc00\\ud800'),
    "high then letter": BASE.replace(b'"name": "', b'"name": "\\ud800\\u0041'),
    "surrogate pair": BASE.replace(b'"name": "', b'"name": "\\ud83d\\ude00'),
    "UTF-8 surrogate bytes": BASE.replace(b'"name": "', b'"name": "\xed\xa0\x80'),
    "not UTF-8": BASE.replace(b'"name": "', b'"name": "\xff'),
    "byte order mark": b"\xef\xbb\xbf" + BASE,
    "UTF-16": BASE.decode().encode("utf-16"),
    "UTF-16-BE": BASE.decode().encode("utf-16-be"),
    "UTF-32": BASE.decode().encode("utf-32"),
    "escaped NUL": BASE.replace(b'"name": "', b'"name": "\\u0000'),
    "raw control character": BASE.replace(b'"name": "', b'"name": "\x01'),
    "raw tab in string": BASE.replace(b'"name": "', b'"name": "\t'),
    "raw DEL in string": BASE.replace(b'"name": "', b'"name": "\x7f'),
    "line separator": BASE.replace(b'"name": "', b'"name": "\xe2\x80\xa8'),
    "vertical tab as space": BASE.replace(b", ", b",\x0b", 1),
    "form feed as space": BASE.replace(b", ", b",\x0c", 1),
    "no-break space as space": BASE.replace(b", ", b",\xc2\xa0", 1),
    "trailing comma": BASE.replace(b"]}]", b"],}]"),
    "trailing garbage": BASE + b" x",
    "trailing NUL": BASE + b"\x00",
    "leading zero": BASE.replace(b": 0,", b": 01,"),
    "bare fraction": BASE.replace(b": 0,", b": .5,"),
    "plus sign": BASE.replace(b": 0,", b": +1,"),
    "hex": BASE.replace(b": 0,", b": 0x10,"),
    "bad escape": BASE.replace(b'"name": "', b'"name": "\\x'),
    "single quotes": BASE.replace(b'"name"', b"'name'"),
    "truncated": BASE[: len(BASE) // 2],
    "empty": b"",
    "blank": b" \n\t ",
    "html": b"<!DOCTYPE html><html><body>502</body></html>",
    "scalar": b"  42  ",
    "deep": BASE.replace(b'"name": ', b'"zz": ' + b"[" * 60 + b"]" * 60 + b', "name": '),
    "too deep for Python": BASE.replace(
        b'"name": ', b'"zz": ' + b"[" * 100_000 + b"]" * 100_000 + b', "name": ', 1
    ),
    "unbalanced deep": b"[" * 100_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_bytes_parse_as_python_parses_them(name: str) -> None:
    assert_same_parse(HOSTILE[name])


def test_the_fast_parser_reads_an_ordinary_payload_by_itself() -> None:
    """Sameness must not come from always falling back: a plain file never reaches Python's
    parser, and its document is Python's."""
    expected = json.loads(BASE)
    with mock.patch.object(payload.json, "loads", side_effect=AssertionError):
        assert same(payload._parse_json(RawFile("f.json", BASE)), expected)


def test_too_deep_records_are_still_cut_and_the_bad_payload_still_named() -> None:
    records = payload._parse_json(RawFile("f.json", HOSTILE["too deep for Python"]))
    assert records[1]["name"] == 'b\u00e9"]' and "zz" in records[0]
    with pytest.raises(PayloadError, match=r"f\.json: not valid JSON"):
        payload._parse_json(RawFile("f.json", HOSTILE["unbalanced deep"]))


def _levels(document: Any) -> tuple[int, Any]:
    """How many levels of lists and objects `document` holds down its first entries, and what
    it holds at the bottom."""
    levels = 0
    while isinstance(document, list | dict):
        levels += 1
        if not document:
            return levels, None
        document = document[0] if isinstance(document, list) else next(iter(document.values()))
    return levels, document


# Around the cut, and around the deepest `json.loads` reads by itself from a test on 3.11
# (991), 3.12 (1,494) and 3.13 (9,995): the pre-scan cuts before either parser, so every
# Python reads the same document.
DEPTHS = [1, 60, NESTING_CUT - 1, NESTING_CUT, NESTING_CUT + 1, 200, 990, 991, 992, 1_494]
DEPTHS += [1_495, 9_995, 9_996, 100_000]


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_documents_are_cut_at_one_level_on_every_python(depth: int) -> None:
    for content in (b"[" * depth + b"]" * depth, b'[{"a": ' * depth + b"1" + b"}]" * depth):
        reference = assert_same_parse(content)
        assert reference[0] == "document", reference
        levels, bottom = _levels(reference[1])
        written = content.count(b"[") + content.count(b"{")
        if written <= NESTING_CUT:
            assert levels == written
        else:
            assert (levels, bottom) == (NESTING_CUT, TOO_DEEP)


def test_the_cut_does_not_depend_on_the_recursion_limit() -> None:
    """3.11's `json.loads` counts its nesting against `sys.getrecursionlimit()`, 3.12's and
    3.13's against limits of their own: the document must come out the same under any."""
    content = b"[" * 1_200 + b'{"a": 1}' + b"]" * 1_200
    documents = []
    for limit in (400, 1_000, 20_000):
        before = sys.getrecursionlimit()
        sys.setrecursionlimit(limit)
        try:
            documents += [outcome(fast_parse, content), outcome(by_python, content)]
        finally:
            sys.setrecursionlimit(before)
    assert all(kind == "document" for kind, *_ in documents)
    assert all(same(d[1], documents[0][1]) for d in documents)
    assert _levels(documents[0][1]) == (NESTING_CUT, TOO_DEEP)


def test_one_scan_decides_the_cut_before_either_parser() -> None:
    """The parsers read the scanned bytes: a file the scan cuts never reaches a parser whole,
    and a file within the cut is handed over as it is (the same object, not a copy)."""
    deep = HOSTILE["too deep for Python"]
    raw = RawFile("f.json", deep)
    assert raw.readable.count(b"[") < 2 * NESTING_CUT and raw.nesting == 100_002
    assert json.dumps(TOO_DEEP).encode() in raw.readable
    within = RawFile("f.json", HOSTILE["deep"])
    assert within.readable is within.content
    utf16 = RawFile("f.json", deep.decode().encode("utf-16"))
    assert same(by_python(utf16), by_python(raw)) and same(fast_parse(utf16), fast_parse(raw))


def _random_float_text(rng: random.Random) -> str:
    choice = rng.randrange(4)
    if choice == 0:  # any bit pattern's shortest digits
        value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        return repr(value) if math.isfinite(value) else "1e400"
    if choice == 1:  # halfway between two neighbours: the rounding must be right
        value = abs(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
        if not math.isfinite(value) or value == 0:
            return "0.5"
        half = (Decimal(value) + Decimal(math.nextafter(value, math.inf))) / 2
        return str(half)
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 40)))
    digits = digits.lstrip("0") or "0"
    point = rng.randrange(len(digits) + 1)
    text = digits[:point] + ("." + digits[point:] if point < len(digits) else "")
    text = "0" + text if text.startswith(".") else text
    if choice == 3:
        text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randrange(330))
    return ("-" if rng.random() < 0.5 else "") + text


def test_random_numbers_parse_as_python_parses_them() -> None:
    rng = random.Random(11)
    numbers = [_random_float_text(rng) for _ in range(60_000)]
    numbers += [str(rng.randrange(-(2**70), 2**70)) for _ in range(5_000)]
    numbers += [str(b + d) for b in (2**63, -(2**63), 2**64) for d in range(-3, 4)]
    assert_same_parse(("[" + ",".join(numbers) + "]").encode())
    for text in numbers[:3_000]:  # one at a time too: an overflow refuses the whole file
        assert_same_parse(f'{{"v": {text}}}'.encode())


SCALARS: list[Any] = [
    None, True, False, 0, -1, 1.5, -0.0, 10**20, -(10**19), 1e-7, 1e300, "", "x", "é",
    "\u2028", "\x00", '"\\', "gр\u200bt", "\U0001f600", "\ud800",
]  # fmt: skip
PIECES = [
    b"[", b"]", b"{", b"}", b'"', b"\\", b",", b":", b" ", b"\n", b"\x0b", b"\x00", b"0",
    b"-", b".", b"e", b"NaN", b"Infinity", b"\\ud800", b"\\udc00", b"\xed\xa0\x80", b"\xff",
    b"\xef\xbb\xbf", b"9" * 25, b"1e400", b"\\u", b"tru", b"null",
]  # fmt: skip


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.45:
        return rng.choice(SCALARS) if rng.random() < 0.7 else rng.uniform(-1e6, 1e6)
    if roll < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["a", "b", "", "é", "a"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_random_documents_broken_at_random_parse_as_python_parses_them() -> None:
    rng = random.Random(5)
    kinds = {"document": 0, "error": 0}
    for _ in range(6_000):
        text = json.dumps(_random_value(rng), ensure_ascii=rng.random() < 0.5)
        content = text.encode("utf-8", "surrogatepass")  # a lone surrogate as Python reads it
        if rng.random() < 0.3:  # a repeated key, by text
            content = content.replace(b'{"a": ', b'{"a": 1, "b": 2, "a": ', 1)
        for _ in range(rng.randrange(3)):
            at = rng.randrange(len(content) + 1)
            cut = rng.choice([0, 0, 1, 3])
            content = content[:at] + rng.choice(PIECES) + content[at + cut :]
        kinds[assert_same_parse(content)[0]] += 1
    assert min(kinds.values()) > 500, kinds  # both readable and broken files were tried


# --- the column helpers ---------------------------------------------------------------------


def test_field_columns_are_each_records_get() -> None:
    rng = random.Random(3)
    names = ["a", "b", "c", "a"]
    full = [{n: rng.choice(SCALARS) for n in "cab"} for _ in range(500)]
    size = payload.FIELD_CHUNK
    cases = [full, [*full, {"a": 1}], [{}, *full], [], full[:1]]
    cases += [full * 5, full * 5 + [{"b": 2}], (full * 5)[: 2 * size], (full * 5)[: size + 1]]
    for records in cases:
        for chosen in (names, names[:1], ["zz"], []):
            expected = {n: list(map(dict.get, records, repeat(n))) for n in chosen}
            got = payload.field_columns(records, chosen)
            assert list(got) == list(expected)
            for n in expected:
                assert type(got[n]) is list and same(got[n], expected[n])


NOT_OBJECTS: list[Any] = [None, [], ["a", 1], "a", 0, 1.5, True]


def test_field_columns_read_a_record_that_is_not_an_object_as_an_empty_one() -> None:
    """Wherever it sits (alone, first, last, across a chunk's edge), as `obj` reads it."""
    rng = random.Random(4)
    size = payload.FIELD_CHUNK
    full = [{n: rng.choice(SCALARS) for n in "cab"} for _ in range(2 * size + 3)]
    for odd in NOT_OBJECTS:
        for at in (0, 5, size - 1, size, len(full)):
            records = [*full[:at], odd, *full[at:]]
            for chosen in (["a", "b"], ["c"], ["zz", "a"]):
                expected = {n: [payload.obj(r).get(n) for r in records] for n in chosen}
                got = payload.field_columns(records, chosen)
                assert list(got) == chosen and all(same(got[n], expected[n]) for n in chosen)


MIXED_POOL: list[Any] = [
    "x", "", "1e-07", "nan", " 12 ", "true", "1.5", None, True, False, 0, -7, 10**30,
    -(2**63) - 1, 2**64, 10**400, -(10**400), 0.0, -0.0, 2.5, 31.0, 1e-5, 1e-4, 1e16,
    9999999999999998.0, 1e300, float("nan"), float("inf"), float("-inf"),
]  # fmt: skip


def _random_float(rng: random.Random) -> float:
    return struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]


def test_columns_mixing_text_booleans_and_numbers_are_text_of_each_value() -> None:
    """Polars writes such a column in one go; every value must read as `text` writes it:
    floats of any bit pattern, integers past every machine size, text that looks like a
    number, blanks."""
    rng = random.Random(12)
    for _ in range(300):
        pool = rng.sample(MIXED_POOL, rng.randrange(2, 8))
        values = []
        for _ in range(rng.randrange(1, 200)):
            roll = rng.random()
            if roll < 0.2:
                values.append(_random_float(rng))
            elif roll < 0.3:
                values.append(round(rng.uniform(-1e6, 1e6), rng.randrange(0, 8)))
            else:
                values.append(rng.choice(pool))
        expected = [payload.text(v) for v in values]
        assert payload.staged_text("c", values).to_list() == expected, values


def test_field_texts_are_the_staged_text_of_field_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunk by chunk (a tiny chunk, so records cross many edges) the same text as whole
    columns; a record that is not an object reads as an empty one."""
    monkeypatch.setattr(payload, "TEXT_CHUNK", 7)
    rng = random.Random(5)
    pool = [v for v in VALUE_POOL if not isinstance(v, Decimal)] + [Decimal("2.50")]
    for _ in range(120):
        kinds = {n: rng.sample(pool, rng.randrange(1, 4)) for n in "abc"}
        records: list[Any] = []
        for _ in range(rng.randrange(0, 60)):
            if rng.random() < 0.05:
                records.append(rng.choice(NOT_OBJECTS))
            else:
                records.append({n: rng.choice(kinds[n]) for n in "abc" if rng.random() < 0.9})
        chosen = rng.sample(["a", "b", "c", "zz"], rng.randrange(0, 4))
        columns = payload.field_columns(records, chosen)
        texts = payload.field_texts(records, chosen)
        assert list(texts) == chosen
        for name in chosen:
            assert texts[name].to_list() == payload.staged_text(name, columns[name]).to_list()


def test_field_texts_leave_text_utf8_cannot_hold_to_be_quarantined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lone surrogate in one chunk: its column comes back as values, and the staged frame
    escapes the text and quarantines that record alone, as record by record."""
    monkeypatch.setattr(payload, "TEXT_CHUNK", 4)
    records: list[Any] = [{"name": f"n{i}", "note": i} for i in range(10)]
    records[6] = {"name": "b\ud800c", "note": 6}
    texts = payload.field_texts(records, ["name", "note"])
    assert isinstance(texts["name"], list) and isinstance(texts["note"], pl.Series)
    staged = payload.StagedColumns(["name", "note"])
    staged.add_columns("f.json", texts, range(1, 11))
    rows = [("f.json", i + 1, r) for i, r in enumerate(records)]
    assert staged.frame().equals(payload.staged_frame_by_record(["name", "note"], rows))


def test_staged_columns_join_written_and_unwritten_parts_in_record_order() -> None:
    """Files given as values, as written text, as rows, and one missing a column: the frame
    record by record gives."""
    files = {
        "f": [{"x": 1, "y": "p"}, {"x": "a", "y": ""}],
        "g": [{"x": 2.5, "y": True}, {"y": None}],
        "h": [{"x": [1, {"b": 2}], "y": "q"}],
        "i": [{"y": "r"}],
    }
    staged = payload.StagedColumns(["x", "y"])
    staged.add_columns("f", payload.field_columns(files["f"], ["x", "y"]), range(1, 3))
    staged.add_columns("g", payload.field_texts(files["g"], ["x", "y"]), range(1, 3))
    staged.add_rows([("h", 1, files["h"][0])])
    staged.add_columns("i", payload.field_texts(files["i"], ["y"]), range(1, 2))
    rows = [(name, n, r) for name, rs in files.items() for n, r in enumerate(rs, 1)]
    reference = payload.staged_frame_by_record(["x", "y"], rows)
    assert staged.frame().equals(reference) and staged.frame().schema == reference.schema


class Text(str):
    """A str subclass: staged as its text, like any string."""


VALUE_POOL: list[Any] = [
    "a", "", "é", Text("sub"), Text(""), None, True, False, 0, 7, -5, 10**30, -(2**63), 2**64,
    0.0, -0.0, 31.0, 2.5, 1e-7, 1e16, 9999999999999998.0, 1e-4, float("nan"), float("inf"),
    {"b": 1, "a": [1, 2]}, ["x", 1], Decimal("1.50"),
    Decimal("1E+999"), Decimal("5E-400"),  # polars: a RuntimeError, and a panic
]  # fmt: skip


def test_staged_text_is_text_of_each_value_on_random_mixtures() -> None:
    """Every mixture of kinds (one kind, two, many; nulls or none), against `text` of each."""
    rng = random.Random(9)
    for _ in range(400):
        pool = rng.sample(VALUE_POOL, rng.randrange(1, 6))
        values = [rng.choice(pool) for _ in range(rng.randrange(0, 60))]
        expected = [payload.text(v) for v in values]
        column = payload.staged_text("c", values)
        assert column.to_list() == expected and column.name == "c", values


def test_staged_text_fails_as_before_on_text_polars_cannot_hold() -> None:
    """A lone surrogate (which Python's parser reads) cannot be UTF-8: the same error as a
    column built value by value (the staged frame then quarantines its record, below)."""
    with pytest.raises(UnicodeEncodeError):
        payload.staged_text("c", ["a", "\ud800"])
    with pytest.raises(UnicodeEncodeError):
        payload.staged_text("c", [1, "\ud800"])


def test_a_lone_surrogate_quarantines_its_record_with_the_text_escaped() -> None:
    staged = payload.StagedColumns(["name", "note"])
    staged.add_columns(
        "f.json", {"name": ["a", "b\ud800c", "d"], "note": [1, 2, "\udfff"]}, range(1, 4)
    )
    frame = staged.frame()
    assert frame["name"].to_list() == ["a", "b\\ud800c", "d"]
    assert frame["note"].to_list() == ["1", "2", "\\udfff"]
    problems = frame.select(validation.PROBLEM_FIELD_COLUMN, validation.PROBLEM_COLUMN).rows()
    assert problems[0] == (None, None)
    assert problems[1] == ("name", "text that is not valid Unicode (a lone surrogate)")
    assert problems[2] == ("note", "text that is not valid Unicode (a lone surrogate)")


def test_a_csv_cell_of_a_megabyte_is_read_not_an_unreadable_payload() -> None:
    content = ("id,text\n1,short\n2," + "x" * 1_000_000 + "\n").encode()
    assert [r["text"] for r in payload.read_csv(RawFile("f.csv", content), ["id"])] == [
        "short",
        "x" * 1_000_000,
    ]


def test_staged_columns_leave_the_callers_columns_as_they_were() -> None:
    """The first file's columns are taken without a copy; later files must not grow them."""
    first = {"x": [1, "a"], "y": ["p", "q"]}
    kept = {name: list(values) for name, values in first.items()}
    staged = payload.StagedColumns(["x", "y"]).add_columns("f", first, range(1, 3))
    staged.add_columns("g", {"x": [2.5]}, range(1, 2))
    staged.add_rows([("h", 7, {"y": True})])
    assert first == kept
    rows = [("f", 1, {"x": 1, "y": "p"}), ("f", 2, {"x": "a", "y": "q"})]
    rows += [("g", 1, {"x": 2.5}), ("h", 7, {"y": True})]
    reference = payload.staged_frame_by_record(["x", "y"], rows)
    assert staged.frame().equals(reference) and staged.frame().schema == reference.schema


def _as_date_reference(column: pl.Series) -> pl.Series:
    """`validation._as_date` as it was for text: every value through the month-only choice."""
    text = column.cast(pl.Utf8).str.slice(0, 10)
    month_only = text.str.len_chars() == 7
    return text.zip_with(month_only.fill_null(False).not_(), text + "-01").str.to_date(
        "%Y-%m-%d", strict=False
    )


@pytest.mark.parametrize(
    "values",
    [
        ["2024-01-02", None, "x", "2024-01-02T10:00:00Z", ""],
        ["2025-06", "2024-01-02", None, "202-1-1", "2025-13", "abcdefg", "2024-1-2"],
        ["202-1-1", "2024-1-2", "1-1-1"],  # seven characters that are no month: as before
        [None, None],
        [],
    ],
)
def test_dates_are_read_as_before(values: list[Any]) -> None:
    column = pl.Series("d", values, pl.Utf8)
    assert validation._as_date(column).equals(_as_date_reference(column))


def _swebench_document_as_it_was(raw: RawFile) -> Any:
    """The SWE-bench parser's read before msgspec (the oracle of `swebench._document`), of
    the bytes the pre-scan hands over (`RawFile.readable`)."""
    try:
        return json.loads(raw.readable, parse_float=Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        preview = raw.content[:60].decode("utf-8", "replace")
        raise PayloadError(
            f"{raw.name}: not valid JSON ({error}); starts with {preview!r}"
        ) from error


def _same_digits(a: Any, b: Any) -> bool:
    """`same`, and every Decimal with the same digits and exponent (`1.0` is not `1.00`)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if isinstance(x, Decimal) and (type(y) is not Decimal or x.as_tuple() != y.as_tuple()):
            return False
        if isinstance(x, dict) and isinstance(y, dict):
            pending += [(x[k], y[k]) for k in x if k in y]
        elif isinstance(x, list) and isinstance(y, list):
            pending += zip(x, y, strict=False)
    return same(a, b)


def assert_same_exact_parse(content: bytes) -> None:
    from bench_pipeline.ingest.parsers import swebench

    fast = outcome(swebench._document, content)
    reference = outcome(_swebench_document_as_it_was, content)
    if reference[0] == "error":
        assert fast == reference
    else:
        assert fast[0] == "document" and _same_digits(fast[1], reference[1]), content[:200]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_exact_numbers_parse_as_python_parses_them(name: str) -> None:
    """SWE-bench reads numbers as Decimals: msgspec with a Decimal float hook, else Python."""
    assert_same_exact_parse(HOSTILE[name])


def test_exact_numbers_read_an_ordinary_payload_by_msgspec_alone() -> None:
    from bench_pipeline.ingest.parsers import swebench

    content = (
        b'{"a": [1.50, 1e5, -0.0, 2E-3, 1.000000000000000000001, 12345678901234567890, 1e400]}'
    )
    expected = _swebench_document_as_it_was(RawFile("f.json", content))
    with mock.patch.object(swebench.json, "loads", side_effect=AssertionError):
        assert _same_digits(swebench._document(RawFile("f.json", content)), expected)


def test_random_numbers_parse_exactly_as_python_parses_them() -> None:
    rng = random.Random(13)
    numbers = [_random_float_text(rng) for _ in range(20_000)] + ["1e400", "-2.5E+400"]
    assert_same_exact_parse(("[" + ",".join(numbers) + "]").encode())
    for depth in (10, 900, 2_000):  # past the cut too
        assert_same_exact_parse(b'[{"a": ' * depth + b"1.25" + b"}]" * depth)
