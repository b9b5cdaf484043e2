"""The contract check column by column: the same report as checking record by record.

`contract.check_record` walks every value of every record (nesting depth, NaN) and looks up
every field path one record at a time: most of staging's time on a large payload. Here the
whole-file questions are answered once from the file's bytes, and each field path is read
as one column; only the records a column marks as possibly wrong (a value of an undeclared
type, a path through a non-object) go through `check_record`, which gives their reason.
A record no screen marks has no problem by construction, so the problems (and their order)
and the null counts are exactly those of the record-by-record check.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np

from bench_pipeline.ingest.contract import (
    _ABSENT,
    MAX_DEPTH,
    Contract,
    ContractReport,
    RecordProblem,
    RecordSpec,
    _csv_number,
    check_record,
    fnmatch,
    repeats_on_path,
    walk,
)

_BROKEN = object()
"""A path that passed through a value that is not an object (the record has a problem)."""

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),  # an integer is a number; a boolean is not (see `_fits`)
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
_SKIPPED = frozenset({type(None), object})  # None, and the `_ABSENT` / `_BROKEN` markers
DIGIT = np.zeros(256, dtype=bool)
DIGIT[ord("0") : ord("9") + 1] = True
LONG_RUN = 100
"""Digits in a row past which a number may overflow: a float needs an exponent of three
digits or about 210 integer digits to reach infinity; every run of 199 or more digits
holds an aligned block of 100, which is what is looked for (a safe over-approximation)."""


def delimiting_quotes(data: np.ndarray) -> np.ndarray:
    """Positions of the quotes that open or close strings (not those escaped inside one)."""
    quotes = np.flatnonzero(data == ord('"'))
    slashes = np.flatnonzero(data == ord("\\"))
    if slashes.size:  # a quote after an odd run of backslashes is escaped: not a delimiter
        breaks = np.diff(slashes) != 1
        starts = slashes[np.r_[True, breaks]]
        ends = slashes[np.r_[breaks, True]]
        escaped = ends[(ends - starts + 1) % 2 == 1] + 1
        at = np.searchsorted(quotes, escaped)
        at = at[at < quotes.size]
        hit = at[quotes[at] == escaped[: at.size]] if at.size else at
        quotes = np.delete(quotes, hit)
    return quotes


def _any_outside(quotes: np.ndarray, positions: np.ndarray) -> bool:
    """Whether any of the positions lies outside every string."""
    return bool((np.searchsorted(quotes, positions) % 2 == 0).any())


def max_depth(data: np.ndarray, quotes: np.ndarray) -> int:
    """The deepest nesting of objects and arrays (brackets inside strings do not count)."""
    brackets = np.flatnonzero(
        (data == ord("[")) | (data == ord("{")) | (data == ord("]")) | (data == ord("}"))
    )
    brackets = brackets[np.searchsorted(quotes, brackets) % 2 == 0]
    structural = data[brackets]
    steps = np.where((structural == ord("[")) | (structural == ord("{")), 1, -1)
    return int(np.cumsum(steps).max()) if steps.size else 0


def may_be_non_finite(content: bytes, data: np.ndarray, quotes: np.ndarray) -> bool:
    """True when some number outside the strings may parse to a NaN or an infinity: a `NaN`
    or `Infinity` literal, a digit before an exponent of three digits or more, or a long
    digit run (see `LONG_RUN`)."""
    for literal in (b"NaN", b"Infinity"):
        found, at = [], content.find(literal)
        while at != -1:
            found.append(at)
            at = content.find(literal, at + 1)
        if found and _any_outside(quotes, np.array(found)):
            return True
    n = data.size
    padded = np.concatenate([data, np.zeros(6, dtype=np.uint8)])
    digit = DIGIT[padded]
    letter_e = (padded[1 : n + 1] == ord("e")) | (padded[1 : n + 1] == ord("E"))
    marks = np.flatnonzero(digit[:n] & letter_e) + 1  # an `e` right after a digit

    def digit_at(offset: int) -> np.ndarray:
        return digit[marks + offset]

    unsigned = digit_at(1) & digit_at(2) & digit_at(3)
    signed = (padded[marks + 1] == ord("+")) & digit_at(2) & digit_at(3) & digit_at(4)
    big = marks[unsigned | signed]
    if big.size and _any_outside(quotes, big):
        return True
    blocks = digit[: n // LONG_RUN * LONG_RUN].reshape(-1, LONG_RUN).all(axis=1)
    starts = np.flatnonzero(blocks) * LONG_RUN
    return bool(starts.size) and _any_outside(quotes, starts)


def _escaped_quotes(content: bytes) -> list[int]:
    """Positions of the quotes escaped inside strings, in valid JSON.

    There every backslash starts an escape, so reading them left to right (an escape is the
    backslash and the next byte) finds each escaped quote, the ones that end no string."""
    escaped, at = [], content.find(b"\\")
    while at != -1:
        if content[at + 1 : at + 2] == b'"':
            escaped.append(at + 1)
        at = content.find(b"\\", at + 2)
    return escaped


def _outside_strings(content: bytes, kept: bytes) -> np.ndarray:
    """The bytes of `kept` (besides quotes) that lie outside every string of valid JSON.

    A couple of passes of C over the bytes, not numpy's many over an array: with the escaped
    quotes blanked, the bytes outside strings are those after an even number of quotes."""
    escaped = _escaped_quotes(content)
    text: bytes | bytearray = content
    if escaped:
        text = bytearray(content)
        for at in escaped:
            text[at] = ord(" ")
    dropped = bytes(sorted(set(range(256)) - set(b'"' + kept)))
    skeleton = np.frombuffer(text.translate(None, dropped), dtype=np.uint8)
    quote = skeleton == ord('"')
    inside = np.bitwise_xor.accumulate(quote.view(np.uint8))  # odd quotes so far: in a string
    return skeleton[(inside == 0) & ~quote]


def strict_json_depth(content: bytes) -> int:
    """`max_depth` of a file msgspec read (valid, strict JSON), from its quotes and brackets.

    Bytes that only Python's parser reads go through `max_depth`."""
    structural = _outside_strings(content, b"[]{}")
    steps = np.where((structural == ord("[")) | (structural == ord("{")), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max()) if steps.size else 0


def strict_json_colons(content: bytes) -> int:
    """The colons outside strings of valid JSON in UTF-8: one per key written."""
    return int(_outside_strings(content, b":").size)


def whole_file_clean(
    content: bytes, csv: bool, *, finite: bool = False, nesting: int | None = None
) -> bool:
    """True when no record of the file can be too deep, hold the `TOO_DEEP` marker or a
    non-finite number; False means: check every record one by one. `finite`: msgspec read
    the document (`RawFile.numbers_finite`): it refuses NaN and infinities, so the bytes need
    no search for them (the costliest part of the screen), and it read them as strict JSON,
    so `strict_json_depth` measures their nesting, unless `nesting` (at least the file's
    deepest nesting, `RawFile.nesting`) is given."""
    if csv:
        return b"\x00" not in content  # the marker holds NUL characters
    if b"\\u0000" in content:  # the marker's NUL characters, escaped
        return False
    if finite:
        return (strict_json_depth(content) if nesting is None else nesting) <= MAX_DEPTH
    data = np.frombuffer(content, dtype=np.uint8)
    quotes = delimiting_quotes(data)
    if may_be_non_finite(content, data, quotes):
        return False
    return max_depth(data, quotes) <= MAX_DEPTH


def path_column(
    records: Sequence[Any], path: str, known: dict[str, list[Any]] | None = None
) -> list[Any]:
    """Each record's value at `path`: `_ABSENT` when missing, `_BROKEN` when a step on the
    way is not an object (as `contract.lookup` sees it). `known` holds the columns of paths
    already read (`cost` for `cost.input`), and gains this one's."""
    known = {} if known is None else known
    steps = path.split(".")
    values: list[Any] = list(records)
    for depth in range(len(steps)):
        prefix = ".".join(steps[: depth + 1])
        if prefix in known:
            values = known[prefix]
            continue
        step = steps[depth]
        if set(map(type, values)) == {dict}:
            values = list(map(dict.get, values, repeat(step), repeat(_ABSENT)))
        else:
            values = [
                v.get(step, _ABSENT)
                if isinstance(v, dict)  # (a marked object too: `RepeatedKeys`)
                else (v if v is _ABSENT or v is _BROKEN else _BROKEN)
                for v in values
            ]
        known[prefix] = values
    return values


def _suspects(values: list[Any], kinds: set[type], declared: str, csv: bool) -> list[int]:
    """Positions whose value may break the declared type (or whose path is broken); `kinds`:
    the classes of the values."""
    if csv:
        if declared.rstrip("?") != "number":
            return [i for i, v in enumerate(values) if v is _BROKEN]
        return [
            i
            for i, v in enumerate(values)
            if v is _BROKEN or (v is not None and v is not _ABSENT and not _csv_number(v))
        ]
    allowed: set[type] = set()
    for name in declared.rstrip("?").split("|"):
        allowed.update(_PYTHON_TYPES.get(name, ()))
    if kinds <= allowed | _SKIPPED and _BROKEN not in values:
        return []
    return [
        i
        for i, v in enumerate(values)
        if v is _BROKEN or (v is not None and v is not _ABSENT and v.__class__ not in allowed)
    ]


SCREEN_CHUNK = 1024
"""Records screened together: their values are read while the records are in the CPU caches
(a pass over a million records per field misses them at every record)."""


def _empties(values: list[Any], kinds: set[type]) -> int:
    """Values the null-share check counts as null: None, absent, a broken path or ""
    (`kinds`: the classes of the values)."""
    empty = values.count(None) if type(None) in kinds else 0
    if object in kinds:  # the markers
        empty += values.count(_ABSENT) + values.count(_BROKEN)
    if str in kinds:
        empty += values.count("")
    return empty


def check_records(
    spec: RecordSpec,
    name: str,
    records: Sequence[Any],
    clean: bool,
    report: ContractReport,
    held: dict[int, tuple[str, str]] | None = None,
) -> None:
    """Add one file's record problems and null counts to `report` (see the module); `held`:
    the records whose problem is already known (`contract.repeats_on_path`)."""
    held = held or {}
    csv = spec.records == "csv"
    suspects: set[int] = set(range(len(records))) if not clean else set()
    if clean and not csv:
        suspects.update(i for i, r in enumerate(records) if r.__class__ is not dict)
    counted = [path for path, declared in spec.fields.items() if not declared.endswith("?")]
    nulls = dict.fromkeys(counted, 0)
    for start in range(0, len(records), SCREEN_CHUNK):
        part = records[start : start + SCREEN_CHUNK]
        known: dict[str, list[Any]] = {}
        for path, declared in spec.fields.items():
            values = path_column(part, path, known)
            kinds = set(map(type, values))
            if len(suspects) < len(records):
                suspects.update(start + i for i in _suspects(values, kinds, declared, csv))
            if path in nulls:
                nulls[path] += _empties(values, kinds)
    for path in counted if records else ():
        key = f"{spec.files}:{path}"
        total, empty = report.fields.get(key, (0, 0))
        report.fields[key] = (total + len(records), empty + nulls[path])
    for number in sorted(suspects | held.keys()):
        problem = held.get(number) or check_record(records[number], spec)
        if problem is not None:
            report.problems.append(RecordProblem(name, number + 1, *problem))


def check_document(
    contract: Contract,
    name: str,
    document: Any,
    content: bytes,
    report: ContractReport,
    *,
    finite: bool = False,
    repeats: bool = True,
    nesting: int | None = None,
) -> None:
    """`contract.check_document`, column by column (one record spec per file: the first);
    `finite` as for `whole_file_clean`; `repeats`: some object of the file may repeat a key
    (`payload.RawFile.repeats_keys`), so every record is walked for one; `nesting` as for
    `whole_file_clean`."""
    for spec in contract.records:
        if not fnmatch.fnmatchcase(name, spec.files):
            continue
        csv = spec.records == "csv"
        records = document if csv else list(walk(document, spec.records))
        held = {} if csv or not repeats else repeats_on_path(document, spec.records)
        report.records += len(records)
        clean = not (repeats and not csv) and whole_file_clean(
            content, csv, finite=finite, nesting=nesting
        )
        check_records(spec, name, records, clean, report, held)
        return
