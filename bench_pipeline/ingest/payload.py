"""A source's raw payload (the files it returned) and the helpers parsers share."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from itertools import repeat
from operator import itemgetter
from typing import Any

import msgspec
import numpy as np
import polars as pl

from bench_pipeline.ingest.contract import MAX_DEPTH, TOO_DEEP, RepeatedKeys
from bench_pipeline.ingest.contract_screen import (
    delimiting_quotes,
    strict_json_colons,
    strict_json_depth,
)
from bench_pipeline.ingest.validation import (
    FILE_COLUMN,
    PROBLEM_COLUMN,
    PROBLEM_FIELD_COLUMN,
    RECORD_COLUMN,
)

RECORD_FAULTS = (
    AttributeError, TypeError, ValueError, KeyError, IndexError, OverflowError, OSError,
    ArithmeticError, RecursionError,
)  # fmt: skip
"""What building one staged row from an odd record can raise (a list where an object was
expected, a timestamp out of range); the record is quarantined, the run goes on."""


REFUSED_BY_POLARS = (
    TypeError, ValueError, OverflowError, RuntimeError, pl.exceptions.PanicException
)  # fmt: skip
"""What polars raises for a value it will not put in a text column: TypeError for most, but
an integer past 128 bits is an OverflowError, an exact number too large for it (`1E+999`) a
RuntimeError, and one too small (`5E-400`) a panic while it writes its own error message,
which is a BaseException."""


class PayloadError(ValueError):
    """The payload cannot be read at all (malformed JSON, an HTML page, a missing column)."""


def _read_json(raw: RawFile, *, fast: bool = True) -> tuple[Any, bool, bool]:
    """`_parse_json`, whether msgspec read the file (see `RawFile.numbers_finite`) and
    whether some object of it may repeat a key (see `RawFile.repeats_keys`).

    `RawFile` calls it directly (as its cached `_json`). Both parsers read `RawFile.readable`,
    the file with nesting past `NESTING_CUT` already cut, so neither meets its recursion
    limit. A file in which some object repeats a key is read again, each such object marked
    (see `RepeatedKeys`): whichever parser read it first, the same document comes out."""
    document, finite = _parsed(raw, fast=fast)
    repeats = _may_repeat_keys(raw.content, document)
    if repeats:
        document = _loads(raw, object_pairs_hook=_marking_repeats)
    return document, finite, repeats


def _parsed(raw: RawFile, *, fast: bool) -> tuple[Any, bool]:
    if fast:
        try:
            return msgspec.json.decode(raw.readable), True
        except (msgspec.DecodeError, RecursionError):
            pass
    return _loads(raw), False


def _loads(raw: RawFile, **options: Any) -> Any:
    """Python's parser on `RawFile.readable`; a file it cannot read is a `PayloadError`."""
    try:
        return json.loads(raw.readable, **options)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise PayloadError(not_json(raw, error)) from error


def not_json(raw: RawFile, error: Exception) -> str:
    """The reason a file is not JSON, with the file's first bytes."""
    preview = raw.content[:60].decode("utf-8", "replace")
    return f"{raw.name}: not valid JSON ({error}); starts with {preview!r}"


NESTING_CUT = 2 * MAX_DEPTH
"""How many levels of objects and arrays (counted from the top of a file) the parsers read.
Every value nested deeper is replaced by the `TOO_DEEP` marker before either parser runs
(see `within_nesting`), so the document never depends on which parser read it or on the
Python running it (`json.loads` alone reads 991 levels on 3.11, 1,494 on 3.12 and 9,995 on
3.13). Records sit at most 5 levels down (`leaderboards[].results[]`), so a record holding
the marker is deeper than `MAX_DEPTH` anyway: the contract quarantines it, naming it."""


def within_nesting(name: str, content: bytes) -> tuple[bytes, int]:
    """The bytes both parsers read, and an upper bound of the file's nesting.

    One scan of the brackets outside strings decides: a file nested at most `NESTING_CUT`
    levels is read as it is; in a deeper one each value at level `NESTING_CUT + 1` (with
    all it holds) becomes the `TOO_DEEP` string. Unbalanced brackets in a deep file are a
    `PayloadError`. The scan reads strings as valid JSON does; where a file is not valid
    JSON, both parsers stop at its first fault, before any bracket the scan may misread."""
    openings = content.count(b"[") + content.count(b"{")
    if openings <= NESTING_CUT:  # too few brackets to nest that deep: no scan
        return content, openings
    encoding = json.detect_encoding(content[:4])
    if encoding not in ("utf-8", "utf-8-sig"):  # UTF-16 or 32: scanned and cut as UTF-8
        try:
            utf8 = content.decode(encoding, "surrogatepass").encode("utf-8", "surrogatepass")
        except (UnicodeError, LookupError):  # undecodable: both parsers refuse it anyway
            return content, openings
        readable, nesting = within_nesting(name, utf8)
        return (content if readable is utf8 else readable), nesting
    nesting = strict_json_depth(content)
    if nesting <= NESTING_CUT:
        return content, nesting
    return _cut_too_deep(name, content, NESTING_CUT), nesting


def _marking_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """One object as both parsers build it (a repeated key keeps its last value at its first
    place), marked as `RepeatedKeys` when some key came more than once."""
    built = dict(pairs)
    if len(built) == len(pairs):
        return built
    counts: dict[str, int] = {}
    for key, _ in pairs:
        counts[key] = counts.get(key, 0) + 1
    return RepeatedKeys(built, repeated=tuple(k for k, n in counts.items() if n > 1))


def _may_repeat_keys(content: bytes, document: Any) -> bool:
    """False only when no object of the file repeats a key: the file's colons outside strings
    (one per key written) are as many as the entries of the document's objects (one per
    distinct key). Counted in C: the document written again by msgspec and both texts
    screened for colons; a document msgspec cannot write (an integer past 64 bits, a lone
    surrogate) is walked instead. A file in another encoding than UTF-8 is always read again."""
    if not isinstance(document, dict | list):
        return False
    if json.detect_encoding(content[:4]) not in ("utf-8", "utf-8-sig"):
        return True
    written = strict_json_colons(content)
    try:
        entries = strict_json_colons(msgspec.json.encode(document))
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError, RecursionError):
        entries = _entries(document)
    return written != entries


def _entries(document: Any) -> int:
    """How many entries the document's objects hold, all together (walked with a stack)."""
    count, stack = 0, [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            count += len(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


@dataclass(frozen=True)
class RawFile:
    """One file as received: its name inside the source folder and its exact bytes."""

    name: str
    content: bytes

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def document(self) -> Any:
        """The parsed JSON, parsed once however often it is asked for (the contract check
        and the parser read the same file); see `load_json`. Read it, never change it."""
        return self._json[0]

    @property
    def readable(self) -> bytes:
        """The bytes the JSON parsers read: `content`, with any value nested deeper than
        `NESTING_CUT` levels cut (see `within_nesting`)."""
        return self._scanned[0]

    @property
    def nesting(self) -> int:
        """At least the file's deepest nesting of objects and arrays (see `within_nesting`)."""
        return self._scanned[1]

    @cached_property
    def _scanned(self) -> tuple[bytes, int]:
        return within_nesting(self.name, self.content)

    @property
    def numbers_finite(self) -> bool:
        """True when `document` can hold no NaN or infinite number: msgspec read it, and it
        refuses both (only Python's parser, the fallback, reads them)."""
        return self._json[1]

    @property
    def repeats_keys(self) -> bool:
        """False when no object of `document` repeats a key; True when some object may (each
        one that does is a `RepeatedKeys`)."""
        return self._json[2]

    _json = cached_property(_read_json)

    @cached_property
    def csv_records(self) -> tuple[list[dict[str, str | None]], frozenset[str]]:
        """The CSV records and header, read once (see `read_csv`). Read them, never change them."""
        return _parse_csv(self)


def content_sha256(files: Sequence[RawFile]) -> str:
    """One digest for a whole payload: the names and digests of its files, in name order."""
    digest = hashlib.sha256()
    for raw in sorted(files, key=lambda f: f.name):
        digest.update(f"{raw.name}\0{raw.sha256}\n".encode())
    return digest.hexdigest()


def text(value: Any) -> str | None:
    """A value as staged text: JSON scalars keep their spelling, nested values become JSON,
    and a blank string is no value at all."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Decimal):  # a parser reading exact numbers: its published digits
        return str(value)
    return json.dumps(value, sort_keys=True, default=_exact_number)


def _exact_number(value: Any) -> float:
    """A Decimal nested in a value, written as the JSON number a float parser would read."""
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"cannot stage a {type(value).__name__} as JSON")


def load_json(raw: RawFile) -> Any:
    """The parsed file (parsed once per `RawFile`: see `RawFile.document`)."""
    return raw.document


def _parse_json(raw: RawFile, *, fast: bool = True) -> Any:
    """The parsed file. Nesting past `NESTING_CUT` (JSON 100,000 levels deep) is cut before
    parsing, so only the record holding it is quarantined (the contract sees the `TOO_DEEP`
    marker) and the others are read.

    `fast` reads with msgspec first, about twice as fast as `json.loads`; on everything it
    accepts it gives the same objects (integers of any size stay integers, floats are
    correctly rounded, a repeated key keeps its last value at its first place). It refuses
    what only Python's parser reads (NaN and Infinity literals, numbers that overflow to
    infinity, lone surrogates, a byte order mark, UTF-16, invalid UTF-8 that `surrogatepass`
    decodes) and malformed JSON: those files go on to Python's parser, which gives its own
    document or its own error, as with `fast=False` (the reference the fast path is tested
    against).
    """
    return _read_json(raw, fast=fast)[0]


_EXACT_NUMBERS = msgspec.json.Decoder(float_hook=Decimal)


def decoded_exactly(raw: RawFile) -> Any:
    """`json.loads(raw.readable, parse_float=Decimal)` (a number with a fraction or an
    exponent becomes the Decimal of its digits) as msgspec reads it, about twice as fast.
    Raises `msgspec.DecodeError` on whatever msgspec refuses (see `_parse_json`): the caller
    then reads the file with `json.loads`, which gives its own document or error."""
    return _EXACT_NUMBERS.decode(raw.readable)


def _cut_too_deep(name: str, content: bytes, limit: int) -> bytes:
    """The content with every value nested deeper than `limit` replaced by the `TOO_DEEP`
    string (brackets inside strings do not count). Only reached for pathological payloads."""
    data = np.frombuffer(content, dtype=np.uint8)
    brackets = np.flatnonzero(
        (data == ord("[")) | (data == ord("{")) | (data == ord("]")) | (data == ord("}"))
    )
    brackets = brackets[np.searchsorted(delimiting_quotes(data), brackets) % 2 == 0]
    opening = (data[brackets] == ord("[")) | (data[brackets] == ord("{"))
    levels = np.cumsum(np.where(opening, 1, -1))
    if levels.size and (levels[-1] != 0 or levels.min() < 0):
        raise PayloadError(f"{name}: not valid JSON (unbalanced brackets)")
    starts = brackets[opening & (levels == limit + 1)].tolist()
    ends = brackets[~opening & (levels == limit)].tolist()  # each closes the start before it
    marker = json.dumps(TOO_DEEP).encode()
    parts, position = [], 0
    for start, end in zip(starts, ends, strict=True):
        parts += [content[position:start], marker]
        position = end + 1
    parts.append(content[position:])
    return b"".join(parts)


def read_csv(raw: RawFile, required: Iterable[str]) -> list[dict[str, str | None]]:
    """CSV records as dicts (quoted newlines allowed); every required column must be present."""
    rows, header = raw.csv_records
    missing = [name for name in required if name not in header]
    if missing:
        raise PayloadError(f"{raw.name}: column(s) {', '.join(missing)} missing")
    return rows


CSV_FIELD_LIMIT = 64 * 1024 * 1024
"""The longest CSV field read (Python's default, 128 KiB, made one long cell in one record
an unreadable payload; validation judges such a value, record by record)."""


def _parse_csv(raw: RawFile) -> tuple[list[dict[str, str | None]], frozenset[str]]:
    if csv.field_size_limit() < CSV_FIELD_LIMIT:  # process-wide: every reader here wants it
        csv.field_size_limit(CSV_FIELD_LIMIT)
    try:
        reader = csv.DictReader(io.StringIO(raw.content.decode("utf-8-sig")))
        rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as error:
        raise PayloadError(f"{raw.name}: not a readable CSV ({error})") from error
    names = list(reader.fieldnames or ())
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:  # a repeated column name: each row would keep its last cell silently
        shown = ", ".join(repr(name) for name in repeated)
        raise PayloadError(f"{raw.name}: column(s) {shown} appear more than once in the header")
    header = frozenset(names)  # a header without rows: a readable, empty file
    records = [
        {k: (v if v != "" else None) for k, v in row.items() if k is not None} for row in rows
    ]
    return records, header


def require_keys(raw: RawFile, records: Sequence[Mapping[str, Any]], keys: Iterable[str]) -> None:
    """A field absent from every record means the upstream format changed: reject the run."""
    for key in keys:
        if records and not any(key in record for record in records):
            raise PayloadError(f"{raw.name}: field {key!r} is missing from every record")


def isolated(
    build: Callable[[Any], dict[str, Any]], record: Any, keys: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """`build(record)`, or, when the record is too odd to build a row from, a row holding only
    `keys` and the problem, so validation quarantines it and the run goes on."""
    try:
        return build(record)
    except RECORD_FAULTS as error:
        return dict(keys or {}) | {
            PROBLEM_FIELD_COLUMN: "record",
            PROBLEM_COLUMN: f"unreadable record ({type(error).__name__}: {str(error)[:120]})",
        }


def obj(value: Any) -> dict[str, Any]:
    """A nested object, or an empty one when absent or of another type (the contract reports
    the wrong type; the row is still built, so the record can be quarantined by name)."""
    return value if isinstance(value, dict) else {}


StagedColumn = Sequence[Any] | pl.Series
"""A column of one file's records for `StagedColumns`: the values as read, or the Utf8
series `field_texts` wrote them as."""


def staged_frame(
    columns: Sequence[str], rows: Iterable[tuple[str, int, Mapping[str, Any]]]
) -> pl.DataFrame:
    """Staging rows as text columns, each with the file and record number it came from (and
    the problem that quarantines it, if its row could not be built)."""
    return StagedColumns(columns).add_rows(rows).frame()


class StagedColumns:
    """A staging frame gathered a column at a time: whole columns of a file's records
    (`add_columns`) or rows one dict per record (`add_rows`), in record order. `frame()` is
    the frame `staged_frame_by_record` builds from the same rows."""

    def __init__(self, columns: Iterable[str]) -> None:
        self.names = [*(n for n in columns if n not in _PROBLEM_COLUMNS), *_PROBLEM_COLUMNS]
        self.parts: dict[str, list[StagedColumn]] = {n: [] for n in self.names}
        """Each column's values file by file: as given (written as text by `frame`), or a
        Utf8 series already written by `field_texts`."""
        self.files: list[pl.Series] = []
        self.numbers: list[pl.Series] = []

    def add_columns(
        self,
        file_name: str,
        columns: Mapping[str, StagedColumn],
        numbers: Sequence[int],
    ) -> StagedColumns:
        """One file's records as columns (as `record.get` would give them, or as `field_texts`
        wrote them; a column left out is null), numbered `numbers`. The columns are taken as
        they are, not copied: the caller must not change them afterwards."""
        count = len(numbers)
        for name in self.names:
            column = columns.get(name)
            if column is None:
                column = [None] * count
            elif name in _PROBLEM_COLUMNS and isinstance(column, pl.Series):
                column = column.to_list()  # kept as values: a text column may add to them
            self.parts[name].append(column)
        self.files.append(pl.repeat(file_name, count, dtype=pl.Utf8, eager=True))
        self.numbers.append(_int_series(numbers))
        return self

    def add_rows(self, rows: Iterable[tuple[str, int, Mapping[str, Any]]]) -> StagedColumns:
        rows = rows if isinstance(rows, list) else list(rows)
        for name in self.names:
            self.parts[name].append([record.get(name) for _, _, record in rows])
        self.files.append(pl.Series([file_name for file_name, _, _ in rows], dtype=pl.Utf8))
        self.numbers.append(pl.Series([number for _, number, _ in rows], dtype=pl.Int64))
        return self

    def frame(self) -> pl.DataFrame:
        series = []
        for name in self.names:  # the problem columns last: a text column may add to them
            try:
                series.append(self._text(name))
            except UnicodeEncodeError:
                series.append(staged_text(name, self._unencodable_marked(name)))
        series += [
            _joined(FILE_COLUMN, self.files, pl.Utf8),
            _joined(RECORD_COLUMN, self.numbers, pl.Int64),
        ]
        return pl.DataFrame(series)

    def _text(self, name: str) -> pl.Series:
        """Column `name` as staged text: the values of consecutive files written together."""
        written: list[pl.Series] = []
        pending: list[Sequence[Any]] = []
        for part in [*self.parts[name], None]:
            if (part is None or isinstance(part, pl.Series)) and pending:
                values = pending[0] if len(pending) == 1 else [v for p in pending for v in p]
                written.append(staged_text(name, values))
                pending = []
            if isinstance(part, pl.Series):
                written.append(part.alias(name))
            elif part is not None:
                pending.append(part)
        if len(written) == 1:
            return written[0]
        return _joined(name, written, pl.Utf8)

    def _values(self, name: str) -> list[Any]:
        """Column `name` as one list of this object's own, to change in place."""
        values = [
            v for p in self.parts[name] for v in (p.to_list() if isinstance(p, pl.Series) else p)
        ]
        self.parts[name] = [values]
        return values

    def _unencodable_marked(self, name: str) -> list[Any]:
        """Column `name` with each text that UTF-8 cannot hold escaped (see `unencodable`),
        and its record marked for quarantine unless it already has a problem."""
        values = list(self._values(name))
        fields, reasons = (self._values(c) for c in _PROBLEM_COLUMNS)
        for at, value in enumerate(values):
            escaped = unencodable(value)
            if escaped is not None:
                values[at] = escaped
                if reasons[at] is None:
                    fields[at], reasons[at] = name, UNENCODABLE
        return values


UNENCODABLE = "text that is not valid Unicode (a lone surrogate)"


def unencodable(value: Any) -> str | None:
    r"""A text UTF-8 cannot hold (a lone surrogate, which Python's parser reads from
    `\ud800`), escaped as the six characters `\ud800`; None for any other value. Its record
    is quarantined rather than the whole run rejected."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return None


def _int_series(numbers: Sequence[int]) -> pl.Series:
    """Record numbers as Int64 (a range without a Python int per number)."""
    if isinstance(numbers, range):
        return pl.int_range(numbers.start, numbers.stop, numbers.step, dtype=pl.Int64, eager=True)
    return pl.Series(list(numbers), dtype=pl.Int64)


def _joined(name: str, parts: list[pl.Series], dtype: type[pl.DataType]) -> pl.Series:
    if not parts:
        return pl.Series(name, [], dtype)
    return pl.concat(parts, rechunk=True).alias(name)


_PROBLEM_COLUMNS = (PROBLEM_FIELD_COLUMN, PROBLEM_COLUMN)


FIELD_CHUNK = 1024
"""Records read together by `field_columns` (their rows stay in the CPU caches)."""


def field_columns(records: Sequence[Any], names: Iterable[str]) -> dict[str, list[Any]]:
    """`obj(record).get(name)` of every record, one column per name: a record that is not an
    object reads as an empty one, as `obj` reads it.

    The records are read `FIELD_CHUNK` at a time, every name of a chunk before the next
    chunk: visiting every record once per name costs about twice as much on a large file
    (each visit misses the CPU caches). A chunk whose records are all objects holding every
    name is read with one `itemgetter` call per record; any other chunk, with `dict.get` a
    name at a time over `objects` of the chunk.
    """
    names = list(names)
    if len(names) == 1:  # one pass over the records whatever the chunking
        try:
            return {names[0]: list(map(dict.get, records, repeat(names[0])))}
        except TypeError:  # some record is not an object
            return {names[0]: list(map(dict.get, objects(records), repeat(names[0])))}
    columns: list[list[Any]] = [[] for _ in names]
    getter = itemgetter(*names) if names else None
    for start in range(0, len(records), FIELD_CHUNK):
        part = records[start : start + FIELD_CHUNK]
        if getter is not None:
            try:
                rows = list(map(getter, part))
            except (KeyError, TypeError):  # a record lacks a field, or is not an object
                pass
            else:
                for column, values in zip(columns, zip(*rows, strict=True), strict=True):
                    column += values
                continue
        part = objects(part)
        for column, name in zip(columns, names, strict=True):
            column += map(dict.get, part, repeat(name))
    return dict(zip(names, columns, strict=True))


TEXT_CHUNK = 4096
"""Records `field_texts` reads and writes as text together: small enough that a chunk's
records are still in the CPU caches when their values are written, large enough that
the calls into polars per chunk cost nothing next to the values."""


def field_texts(records: Sequence[Any], names: Iterable[str]) -> dict[str, StagedColumn]:
    """`staged_text` of each of `field_columns(records, names)`, for `StagedColumns` to take
    as it is, read and written `TEXT_CHUNK` records at a time: each value is written while
    its record is still in the CPU caches, where reading whole columns first and writing
    them afterwards visits every value twice more from memory (about a fifth faster on
    a million records). A column holding text UTF-8 cannot hold (see `unencodable`) is
    handed back as its values instead, for `StagedColumns` to escape and quarantine."""
    names = list(names)
    parts: dict[str, list[pl.Series]] = {name: [] for name in names}
    raw: set[str] = set()
    for start in range(0, len(records), TEXT_CHUNK):
        chunk = field_columns(records[start : start + TEXT_CHUNK], names)
        for name, values in chunk.items():
            if name not in raw:
                try:
                    parts[name].append(staged_text(name, values))
                except UnicodeEncodeError:
                    raw.add(name)
    texts: dict[str, StagedColumn] = {}
    for name in names:
        if name in raw:
            texts[name] = field_columns(records, [name])[name]
        else:
            texts[name] = _joined(name, parts[name], pl.Utf8)
    return texts


def objects(values: Iterable[Any]) -> list[dict[str, Any]]:
    """`obj` of every value, a whole column at once. When every value is a plain dict (the
    usual case) that list is returned as it is, not copied: read it, never change it."""
    values = values if isinstance(values, list) else list(values)
    if set(map(type, values)) <= {dict}:  # one pass in C, no Python call per value
        return values
    return [obj(v) for v in values]


def staged_text(name: str, values: Sequence[Any]) -> pl.Series:
    """`text` of every value as one Utf8 column, converted a whole column at a time: text,
    booleans and numbers each by one call into polars (a column mixing them too, see
    `_mixed_text`), Decimals by their `str`; a column holding nested or other values is
    written value by value."""
    first = next((v for v in values if v is not None), None)
    if first is None or first.__class__ is str:
        try:  # text and nulls only, the common case: polars refuses any other value
            column = pl.Series(name, values, pl.Utf8)
        except REFUSED_BY_POLARS:
            pass
        else:
            return column.set(column == "", None)  # a blank is no value
    return _kinds_text(name, values, set(map(type, values)) - {type(None)})


def _kinds_text(name: str, values: Sequence[Any], kinds: set[type]) -> pl.Series:
    """`staged_text` of values whose classes (None aside) are exactly `kinds`."""
    if kinds <= {str}:
        column = pl.Series(name, values, pl.Utf8)
        return column.set(column == "", None) if kinds else column
    if kinds == {Decimal}:  # a parser reading exact numbers (costs): their digits
        return pl.Series(name, [None if v is None else str(v) for v in values], pl.Utf8)
    if kinds == {bool}:
        flags = pl.Series(name, values, pl.Boolean)
        return flags.replace_strict({True: "true", False: "false"}, return_dtype=pl.Utf8)
    if kinds <= {int, float}:
        try:
            return _number_text(name, values, kinds)
        except (OverflowError, TypeError):  # an integer beyond 64 bits: Python's digits, below
            pass
    elif kinds <= {str, bool, int, float}:
        mixed = _mixed_text(name, values)
        if mixed is not None:
            return mixed
    return pl.Series(name, [text(value) for value in values], pl.Utf8)


def _mixed_text(name: str, values: Sequence[Any]) -> pl.Series | None:
    """`text` of a column mixing text, booleans and numbers. Polars writes every value as
    `text` does (booleans as `true`, integers in full, floats as `repr` in the plain range);
    the values that read as floats outside that range are then written by `text` itself
    (text that reads as one too: `text` keeps it as it is). None when polars leaves a value
    out (an integer past its range): the caller writes the column value by value."""
    try:
        column = pl.Series(name, values, pl.Utf8, strict=False)
        if column.null_count() != values.count(None):
            return None
        numbers = pl.Series(name, values, pl.Float64, strict=False)
    except REFUSED_BY_POLARS:  # (text UTF-8 cannot hold fails the same way value by value)
        return None
    odd = (numbers.is_not_null() & ~_plain(numbers)).arg_true()
    if odd.len():
        column = column.scatter(odd, [text(values[i]) for i in odd.to_list()])
    return column.set(column == "", None)


PLAIN_FLOATS = (1e-4, 1e16)
"""The magnitudes whose `repr` is plain decimal notation, which polars writes the same way
(shortest round-trip digits); zero too. Others (`1e-07`, `nan`) are written by `repr`."""


def _plain(floats: pl.Series) -> pl.Series:
    """Which floats polars writes as `repr` does (see `PLAIN_FLOATS`)."""
    size = floats.abs()
    return floats.is_finite() & (
        ((size >= PLAIN_FLOATS[0]) & (size < PLAIN_FLOATS[1])) | (size == 0)
    )


def _number_text(name: str, values: Sequence[Any], kinds: set[type]) -> pl.Series:
    """`text` (that is, `repr`) of a column of integers and floats, whole columns at a time."""
    if kinds == {int}:
        return pl.Series(name, values, pl.Int64).cast(pl.Utf8)
    ints = None
    if int in kinds:  # (beyond 64 bits: OverflowError, and the caller writes Python's digits)
        ints = pl.Series(name, [v if v.__class__ is int else None for v in values], pl.Int64)
    floats = pl.Series(name, values, pl.Float64)  # integers too: their own text replaces it
    written = floats.cast(pl.Utf8)
    odd = floats.is_not_null() & ~_plain(floats)
    if ints is not None:
        odd = odd & ints.is_null()
    odd = odd.arg_true()
    if odd.len():
        written = written.scatter(odd, [repr(values[i]) for i in odd.to_list()])
    if ints is not None:
        written = written.zip_with(ints.is_null(), ints.cast(pl.Utf8))
    return written


def staged_frame_by_record(
    columns: Sequence[str], rows: Iterable[tuple[str, int, Mapping[str, Any]]]
) -> pl.DataFrame:
    """The record-by-record `staged_frame` (the reference the columnar one is tested against)."""
    extra = (PROBLEM_FIELD_COLUMN, PROBLEM_COLUMN)
    names = (*columns, *extra, FILE_COLUMN)
    data: dict[str, list[Any]] = {name: [] for name in (*names, RECORD_COLUMN)}
    for file_name, record_number, record in rows:
        field, reason = (text(record.get(name)) for name in extra)
        for name in columns:
            value = text(record.get(name))
            escaped = unencodable(value)
            if escaped is not None:
                value = escaped
                if reason is None:
                    field, reason = name, UNENCODABLE
            data[name].append(value)
        data[PROBLEM_FIELD_COLUMN].append(field)
        data[PROBLEM_COLUMN].append(reason)
        data[FILE_COLUMN].append(file_name)
        data[RECORD_COLUMN].append(record_number)
    schema = {name: pl.Utf8 for name in names} | {RECORD_COLUMN: pl.Int64}
    return pl.DataFrame(data, schema=schema)
