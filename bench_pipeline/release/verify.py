"""Checks on a published release: its manifest matches its files, and it holds no private text.

Private texts (the wording of private evaluation cases, once there are any) must never reach
a release. `private_texts` lists them; `private_text_findings` searches every file of a
release, reading each format as a reader would (JSON and CSV cells, Parquet and DuckDB
string columns, any other file as text), so escaping or compression cannot hide a match.
Every file is searched a column at a time, never string by string: for up to `FEW_TEXTS`
texts, each text on its own (a C substring search, which skips ahead by the text's length);
for more, all at once (Aho-Corasick, whose cost does not grow with their number).
"""

from __future__ import annotations

import csv
import hashlib
import json
import mmap
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from itertools import groupby
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

from bench_pipeline.core.files import sha256_file
from bench_pipeline.release.build import DATABASE, LATEST, MANIFEST, read_latest
from bench_pipeline.release.database import quoted_name
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank import private_texts as bank_private_texts


def private_texts() -> list[str]:
    """Every text that must never be published: the private (held-out) cases of the task
    bank, whole and paragraph by paragraph (see `taskbank.private_texts`)."""
    return bank_private_texts(load_bank())


Raw = bytes | mmap.mmap
"""A file's bytes: read, or mapped (`_mapped`)."""


@contextmanager
def _mapped(path: Path) -> Iterator[Raw]:
    """A file's bytes mapped read-only, so a download of hundreds of megabytes is searched
    where the page cache holds it, not copied first (an empty file, which cannot be mapped,
    is `b""`)."""
    with path.open("rb") as handle:
        if not os.fstat(handle.fileno()).st_size:
            yield b""
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as raw:
            yield raw


def json_array_rows(raw: Raw) -> int:
    """The number of elements of a JSON file's top-level array (`raw`: its bytes, or mapped).

    A download (`downloads.json_bytes`) holds one object a line between a `[` line and a `]`
    line, each line but the last ending in `},` (JSON text has no raw newline): its rows are
    counted from its lines (`_row_breaks`), without parsing every value into Python objects.
    A file laid out any other way is parsed whole.
    """
    if len(raw) == 3 and raw[:] == b"[]\n":
        return 0
    if raw[:3] == b"[\n{" and raw[-4:] == b"}\n]\n":
        breaks = _row_breaks(raw)
        if breaks is not None:
            return breaks + 1
    return len(json.loads(str(raw[:], "utf-8")))


_BLOCK_BYTES = 1 << 24
"""Bytes of a file compared at a time in `_row_breaks` (each comparison makes an array of
this many flags)."""


def _row_breaks(raw: Raw) -> int | None:
    """The line breaks between a download's brackets, if every one falls between two rows
    (`},` before it, `{` after), else None. numpy finds the breaks in the bytes where they
    lie and checks their neighbours, without copying the file: at 50× the recorded data (a
    670 MB file) in 0.25 s against 0.6 s for counting the breaks and the separators between
    rows with `bytes.count`."""
    data = np.frombuffer(raw, dtype=np.uint8)
    breaks, end = 0, len(data) - 3  # the body: from the first `{` to the last `}`
    for start in range(2, end, _BLOCK_BYTES):
        at = np.flatnonzero(data[start : min(start + _BLOCK_BYTES, end)] == ord("\n")) + start
        between = (
            (data[at - 2] == ord("}")) & (data[at - 1] == ord(",")) & (data[at + 1] == ord("{"))
        )
        if not between.all():
            return None
        breaks += at.size
    return breaks


def csv_rows(path: Path) -> int:
    """The number of records of a CSV file after its header, as `csv.reader` counts them:
    by polars' CSV reader (every column as text), else by `csv.reader` itself."""
    try:
        return pl.scan_csv(path, infer_schema=False).select(pl.len()).collect().item()
    except pl.exceptions.PolarsError:  # e.g. a file with no header at all
        with path.open(newline="", encoding="utf-8") as handle:
            return max(sum(1 for _ in csv.reader(handle)) - 1, 0)


def _is_download_json(path: Path) -> bool:
    return path.suffix == ".json" and path.parent.name == "data"


def _count_rows(path: Path, raw: Raw | None = None) -> int | None:
    """A file's rows (None: not a table); `raw`, a download JSON's bytes if already mapped."""
    if _is_download_json(path):
        if raw is None:
            with _mapped(path) as mapped:
                return json_array_rows(mapped)
        return json_array_rows(raw)
    if path.suffix == ".csv":
        return csv_rows(path)
    if path.suffix == ".parquet":
        return pl.scan_parquet(path).select(pl.len()).collect().item()
    if path.name == DATABASE:
        with duckdb.connect(str(path), read_only=True) as conn:
            tables = [  # its tables, not its views (they show some of the same rows)
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                    "current_database()"
                ).fetchall()
            ]
            return sum(conn.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for t in tables)
    return None


def _workers() -> int:
    """Threads for checking a release's files: one per core (their reading, digesting and
    parsing run outside the GIL)."""
    return os.cpu_count() or 1


def _file_problems(release_dir: Path, path: str, entry: dict[str, Any]) -> list[str]:
    """How one listed file differs from its manifest entry (sha256, bytes, rows)."""
    file = release_dir / path
    if not file.is_file():
        return [f"{path}: listed but missing"]
    problems = []
    with ExitStack() as stack:  # a download JSON is mapped once for its digest and rows
        raw = stack.enter_context(_mapped(file)) if _is_download_json(file) else None
        digest = sha256_file(file) if raw is None else hashlib.sha256(raw).hexdigest()
        if digest != entry["sha256"]:
            problems.append(f"{path}: sha256 differs from the manifest")
        if file.stat().st_size != entry["bytes"]:
            problems.append(f"{path}: size differs from the manifest")
        if entry.get("rows") is not None and _count_rows(file, raw) != entry["rows"]:
            problems.append(f"{path}: row count differs from the manifest")
    return problems


def verify_release(release_dir: Path) -> list[str]:
    """Problems with a release folder: a listed file missing or different from its manifest
    entry (sha256, bytes, rows), or a file the manifest does not list. Empty when sound."""
    manifest_path = release_dir / MANIFEST
    if not manifest_path.is_file():
        return [f"{release_dir.name}: no {MANIFEST}"]
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    problems = []
    if manifest.get("release_id") != release_dir.name:
        problems.append(f"manifest names {manifest.get('release_id')}, folder {release_dir.name}")
    listed = {entry["path"]: entry for entry in manifest["files"]}
    present = {
        p.relative_to(release_dir).as_posix() for p in release_dir.rglob("*") if p.is_file()
    } - {MANIFEST}
    problems += [f"{path}: not in the manifest" for path in sorted(present - set(listed))]
    with ThreadPoolExecutor(max_workers=_workers()) as pool:  # reads and digests free the GIL
        checked = pool.map(lambda item: _file_problems(release_dir, *item), sorted(listed.items()))
        problems += [problem for found in checked for problem in found]
    for table in manifest["tables"]:
        for fmt, file_entry in table["files"].items():
            if listed.get(file_entry["path"], {}).get("sha256") != file_entry["sha256"]:
                problems.append(f"{table['name']} {fmt}: table entry disagrees with files")
    return problems


def verify_latest(releases_root: Path) -> tuple[str | None, list[str]]:
    """The release `latest` names and its problems (a missing pointer or folder is one)."""
    pointer = releases_root / LATEST
    if not pointer.is_file():
        return None, [f"{pointer}: missing"]
    named = pointer.read_text(encoding="utf-8").strip()
    if read_latest(releases_root) is None:
        return named or None, [f"latest names {named!r}, which is not a release folder"]
    return named, verify_release(releases_root / named)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


Strings = Sequence[str] | pl.Series
_FLAT = (pl.Utf8, pl.Int64, pl.Float64, pl.Boolean, pl.Null)


# The characters of a JSON number, as polars writes one when it reads a mixed column as text.
_NUMBER_TEXT = re.compile(r"[0-9eE.+\-]*")


def _scalar_safe(patterns: Sequence[str]) -> bool:
    """Whether no pattern could be found inside the text of a JSON number or boolean (then
    polars' reading of a mixed column as text cannot add a finding)."""
    return not any(_NUMBER_TEXT.fullmatch(p) or p in "true" or p in "false" for p in patterns)


def _json_strings(path: Path, tabular: bool) -> Strings:
    """Every key and string value of a JSON file. With `tabular`, a download (an array of flat
    objects) is read by polars, a column at a time; anything else (an object, nested values,
    what polars cannot read) is walked value by value."""
    raw = path.read_bytes()
    frame = None
    if tabular and raw.lstrip()[:1] == b"[":
        try:
            frame = pl.read_json(raw, infer_schema_length=None)
        except Exception:  # whatever polars cannot read as a table is walked
            frame = None
    if frame is not None and all(dtype in _FLAT for dtype in frame.schema.values()):
        if not frame.height:
            return []
        texts = [frame[c].drop_nulls() for c in frame.columns if frame.schema[c] == pl.Utf8]
        return pl.concat([pl.Series(frame.columns, dtype=pl.Utf8), *texts])
    return list(_strings(json.loads(raw.decode("utf-8"))))


def _file_strings(path: Path, tabular_json: bool = True) -> Iterator[tuple[str, Strings]]:
    """(where, texts) for every string a reader of this file would see, a column at a time
    (its raw bytes are searched apart, see `private_text_findings`); a Parquet or DuckDB
    column's distinct values only, each once (whether a column holds a text is the same)."""
    if path.suffix == ".json":
        yield "", _json_strings(path, tabular_json)
    elif path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            yield "", [cell for row in csv.reader(handle) for cell in row]
    elif path.suffix == ".parquet":  # only its text columns are read
        texts = [name for name, dtype in pl.read_parquet_schema(path).items() if dtype == pl.Utf8]
        frame = pl.read_parquet(path, columns=texts) if texts else pl.DataFrame()
        for column in frame.columns:
            yield column, frame[column].drop_nulls().unique()
    elif path.name == DATABASE:
        with duckdb.connect(str(path), read_only=True) as conn:
            columns = conn.execute(
                "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
                "WHERE NOT internal AND data_type = 'VARCHAR' ORDER BY ALL"
            ).fetchall()
            for (schema, table), group in groupby(columns, key=lambda row: row[:2]):
                # one scan per table or view, each column's distinct values (a pair table
                # repeats a few thousand names over millions of rows)
                names = [column for _, _, column in group]
                distinct = ", ".join(f"list(DISTINCT {quoted_name(c)})" for c in names)
                source = f"{quoted_name(schema)}.{quoted_name(table)}"
                values = conn.sql(f"SELECT {distinct} FROM {source}").to_arrow_table()
                for number, column in enumerate(names):
                    lists = pl.Series(values.column(number))  # no rows: one null list
                    yield f"{table}.{column}", lists.explode().drop_nulls()


def _series(texts: Strings) -> pl.Series:
    if isinstance(texts, pl.Series):
        return texts
    try:
        return pl.Series(texts, dtype=pl.Utf8)
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape; no private text has one
        return pl.Series(
            [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for t in texts],
            dtype=pl.Utf8,
        )


FEW_TEXTS = 16
"""Up to this many texts are searched one by one, more all at once. The bank's private texts
are paragraphs, which a substring search skips through: on a 641 MB download (50× the
recorded data) its 8 texts took 0.46 s one by one and 1.4 s in one Aho-Corasick pass."""


def found_texts(texts: Strings, patterns: Sequence[str]) -> set[str]:
    """Which of `patterns` occur in any of `texts`, the same answer as `pattern in text` for
    every pair: for up to `FEW_TEXTS` patterns a literal search of the column for each, for
    more one Aho-Corasick pass over all of them (polars `extract_many`, overlapping, so a
    pattern inside another is found too)."""
    if not len(texts) or not patterns:
        return set()
    series, patterns = _series(texts), list(patterns)
    if len(patterns) <= FEW_TEXTS:
        return {p for p in patterns if series.str.contains(p, literal=True).any()}
    holding = series.str.contains_any(patterns)  # the same automaton, no list per string
    if not holding.any():
        return set()
    hits = series.filter(holding).str.extract_many(patterns, overlapping=True)
    return set(hits.explode().drop_nulls().unique().to_list())


def _csv_quoted(pattern: str) -> str:
    """How a pattern with a quote shows in a quoted CSV cell: each quote doubled."""
    return pattern.replace('"', '""')


def _encoded_in(raw: Raw, pattern: str) -> bool:
    """Whether `raw` decoded (U+FFFD for each byte that is not UTF-8) holds `pattern`, which
    holds no U+FFFD, searched as bytes: a character's first byte never continues another, so
    an undecodable byte never joins the one after it, and a pattern's UTF-8 encoding occurs
    in the bytes exactly where the decoded text holds the pattern. A pattern with a lone
    surrogate has no UTF-8 encoding and no decoding yields one."""
    try:
        return raw.find(pattern.encode("utf-8")) >= 0
    except UnicodeEncodeError:
        return False


def _raw_found(raw: Raw, patterns: Sequence[str]) -> set[str]:
    """Which of `patterns` a file's text holds: its bytes decoded, U+FFFD for each that is not
    UTF-8 (a Parquet or DuckDB file). Few patterns are searched as bytes (`_encoded_in`),
    without decoding a file of hundreds of megabytes."""
    if len(patterns) > FEW_TEXTS:
        return found_texts([str(raw, "utf-8", errors="replace")], patterns)
    found = {p for p in patterns if "\ufffd" not in p and _encoded_in(raw, p)}
    replaced = [p for p in patterns if "\ufffd" in p]  # may match what was not UTF-8
    if replaced:
        found |= found_texts([str(raw, "utf-8", errors="replace")], replaced)
    return found


def _hidden_in_text(suffix: str, raw: Raw, found: set[str], patterns: Sequence[str]) -> set[str]:
    r"""The patterns a CSV or JSON cell may hold although the file's text does not show them
    as they are (`found` holds every pattern and quoted form the text shows).

    A CSV cell shows in the text verbatim, or quoted with its quotes doubled. A JSON string
    shows verbatim unless it has an escape: a file without any backslash has none; in one
    with a backslash any pattern can hide (`\u0041` is `A`).
    """
    if suffix == ".csv":
        return {p for p in patterns if '"' in p and _csv_quoted(p) in found}
    return set(patterns) if raw.find(b"\\") >= 0 else set()


def _column_hits(
    columns: Sequence[tuple[str, Strings]], wanted: Sequence[str], numbers: dict[str, list[int]]
) -> set[tuple[int, str]]:
    """(text number, column) of every wanted text in every column: one search over all the
    file's columns together first, then each column only for the texts found at all (a text
    in a column is in them together, so the answer is the same as column by column)."""
    if len(columns) > 1:
        filled = [_series(strings) for _, strings in columns if len(strings)]
        wanted = sorted(found_texts(pl.concat(filled), wanted)) if filled else []
    return {
        (i, where)
        for where, strings in columns
        for text in found_texts(strings, wanted)
        for i in numbers[text]
    }


def _findings_in_file(
    path: Path, relative: str, numbers: dict[str, list[int]], tabular_json: bool
) -> list[dict[str, Any]]:
    """`private_text_findings` for one file (`numbers`: each text's positions)."""
    patterns = list(numbers)
    searched = list(dict.fromkeys([*patterns, *(_csv_quoted(p) for p in patterns if '"' in p)]))
    with _mapped(path) as raw:
        in_raw = _raw_found(raw, searched)
        hits = {(i, "bytes") for text in in_raw & numbers.keys() for i in numbers[text]}
        wanted = patterns
        if path.suffix in (".csv", ".json"):
            hidden = _hidden_in_text(path.suffix, raw, in_raw, patterns)
            wanted = sorted((in_raw & numbers.keys()) | hidden)
    if wanted:
        hits |= _column_hits(list(_file_strings(path, tabular_json)), wanted, numbers)
    return [
        {"file": relative, "where": where or None, "text_number": i} for i, where in sorted(hits)
    ]


def private_text_findings(release_dir: Path, texts: Sequence[str]) -> list[dict[str, Any]]:
    """Where any of `texts` occurs in the release: file and column, never the text itself,
    only its position in `texts` (so a report of the finding does not publish it).

    Each file's raw text is searched first (`_raw_found`); a CSV or JSON file's cells are
    then read only for the texts its raw text holds or could hide (`_hidden_in_text`), so a
    clean text file is read once. Parquet and DuckDB files (compressed) are always read.
    Files are searched two or more at a time (`_workers`): reading them, and polars' and
    DuckDB's work on them, run outside the GIL while another file's bytes are searched.
    """
    numbers: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        if text:
            numbers.setdefault(text, []).append(i)
    if not numbers:
        return []
    tabular_json = _scalar_safe(list(numbers))
    paths = sorted(p for p in release_dir.rglob("*") if p.is_file())
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        found = pool.map(
            lambda path: _findings_in_file(
                path, path.relative_to(release_dir).as_posix(), numbers, tabular_json
            ),
            paths,
        )
        return [finding for findings in found for finding in findings]
