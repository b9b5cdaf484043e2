"""Per-item result files read into cells: the one home of the matrix readers.

`bench card FILE` (no warehouse) and the per-item results source kind
(`ingest/parsers/item_results.py`) read the same three forms through this module:

* long: CSV or Parquet with columns ``system``, ``item``, ``score`` and optionally ``group``,
  ``cost_usd``, ``date`` (other columns are ignored), one row per result;
* wide: CSV or Parquet whose first column names the system (its header may be empty) and
  every other column is an item id; an empty cell is a missing result, never 0;
* an inspect_ai evaluation log (``.eval``): a zip holding ``header.json`` (the task, the
  model, the headline metrics) and one ``samples/<id>_epoch_<n>.json`` per sample and epoch.
  One log is one system (``eval.model``), each sample id one item, and the item's score is
  the scorer's value (``C``/``I``/``P``/``N`` as 1/0/0.5/0, as inspect_ai reads them)
  averaged over the log's epochs. The headline the log states is the first metric of its
  scorer in ``header.json`` (``results.scores``).

Each cell carries where it came from (file, record, field). A cell that cannot be read
carries its problem instead of a score, so the ingest chain can quarantine that record alone,
and `bench card` can refuse the file naming it; a file that cannot be read at all (no header,
a repeated item column, a damaged zip) raises :class:`MalformedFile` naming the file.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

LONG_COLUMNS = ("system", "item", "score")
LONG_OPTIONAL = ("group", "cost_usd", "date")
EVAL_SUFFIX = ".eval"
EVAL_MEMBER_CAP = 64 * 1024 * 1024
"""The most bytes one member of an ``.eval`` log may unpack to (a real log's samples are a
few kilobytes each): a member claiming more is refused before it is read."""
SAMPLE = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
INSPECT_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
"""inspect_ai's letter values (correct, incorrect, partial, no answer) as numbers."""


class MalformedFile(ValueError):
    """The file cannot be read as a matrix; the message names file, record and field."""


@dataclass(frozen=True)
class Cell:
    """One result as read: a system's score on one item, or the problem that stopped it.

    Attributes:
        where: The record it came from (``line 3`` of a CSV, ``row 3`` of a Parquet file,
            ``samples/7_epoch_1.json`` of a log), after the file name.
        number: The record's number in its file, from 1 (a log's samples in name order).
        field: The field the score was read from (``score``, the item column, the scorer).
        problem: Why no cell can be built from the record; None when it can.
    """

    file: str
    where: str
    number: int
    field: str
    system: str | None = None
    item: str | None = None
    score: float | None = None
    group: str | None = None
    cost_usd: str | None = None
    date: str | None = None
    problem: str | None = None

    @property
    def at(self) -> str:
        return f"{self.file}: {self.where}, field {self.field!r}"


@dataclass(frozen=True)
class Stated:
    """A headline score a publisher states for one system (an ``.eval`` log's metric)."""

    file: str
    system: str
    task: str | None
    metric: str | None
    value: str | None
    date: str | None


@dataclass(frozen=True)
class ReadFile:
    """Everything one file holds: its form, its cells and any headline it states."""

    form: str
    cells: list[Cell]
    stated: list[Stated]


def form_of(name: str) -> str:
    """``csv``, ``parquet`` or ``eval`` from a file name; MalformedFile otherwise."""
    suffix = name.lower().rsplit(".", 1)[-1] if "." in name else ""
    if suffix == "csv":
        return "csv"
    if suffix in ("parquet", "pq"):
        return "parquet"
    if suffix == "eval":
        return "eval"
    raise MalformedFile(f"{name}: not a .csv, .parquet or .eval file")


def table_rows(name: str, content: bytes) -> tuple[list[str], Iterator[tuple[str, list[Any]]]]:
    """The header and the rows of a CSV or Parquet file, each row with where it is
    (``line N`` of a CSV, ``row N`` of a Parquet file, counting data rows from 1)."""
    if form_of(name) == "parquet":
        import polars as pl

        try:
            frame = pl.read_parquet(io.BytesIO(content))
        except Exception as error:  # polars raises many kinds on a damaged file
            raise MalformedFile(f"{name}: not a readable Parquet file ({error})") from None
        header = list(frame.columns)
        return header, (
            (f"row {number}", list(row)) for number, row in enumerate(frame.iter_rows(), 1)
        )
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise MalformedFile(
            f"{name}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    reader = csv.reader(text.splitlines())
    try:
        header = next(reader)
    except StopIteration:
        raise MalformedFile(f"{name}: empty file, no header") from None
    except csv.Error as error:
        raise MalformedFile(f"{name}: line 1: not CSV ({error})") from None

    def rows() -> Iterator[tuple[str, list[Any]]]:
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                raise MalformedFile(f"{name}: line {reader.line_num}: not CSV ({error})") from None
            if row:
                yield f"line {reader.line_num}", list(row)

    return header, rows()


def score_value(value: Any) -> float | None:
    """A cell as a score (None when empty); ValueError with the reason otherwise.
    ``true``/``false`` read as 1/0, and so do inspect_ai's letters ``C``/``I`` (``P`` 0.5,
    ``N`` 0)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        number = float(value)
    else:
        text = str(value).strip()
        if not text:
            return None
        if text.lower() in ("true", "false"):
            return 1.0 if text.lower() == "true" else 0.0
        if text in INSPECT_VALUES:
            return INSPECT_VALUES[text]
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{text[:40]!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{number} is not a finite number")
    return number


def _text(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    return text or None


def read_file(name: str, content: bytes, scorer: str | None = None) -> ReadFile:
    """The cells of one file in any of the three forms (see the module docstring).

    Raises:
        MalformedFile: When the file as a whole cannot be read, naming it.
    """
    form = form_of(name)
    if form == "eval":
        return read_eval(name, content, scorer)
    header, rows = table_rows(name, content)
    names = [str(h).strip() for h in header]
    if all(c in names for c in LONG_COLUMNS):
        return ReadFile("long", list(_long_cells(name, names, rows)), [])
    return ReadFile("wide", list(_wide_cells(name, names, rows)), [])


def _long_cells(
    name: str, names: list[str], rows: Iterator[tuple[str, list[Any]]]
) -> Iterator[Cell]:
    column = {c: names.index(c) for c in (*LONG_COLUMNS, *LONG_OPTIONAL) if c in names}
    for number, (where, row) in enumerate(rows, start=1):
        base = Cell(name, where, number, "score")
        if len(row) != len(names):
            yield replace(base, field="record",
                          problem=f"{len(row)} fields, the header has {len(names)}")  # fmt: skip
            continue
        values = {c: _text(row[k]) for c, k in column.items() if c != "score"}
        empty = next((c for c in ("system", "item") if values[c] is None), None)
        if empty is not None:
            yield replace(base, field=empty, problem="empty")
            continue
        if "group" in column and values["group"] is None:
            yield replace(base, field="group", problem="empty")
            continue
        cell = replace(
            base, system=values["system"], item=values["item"], group=values.get("group"),
            cost_usd=values.get("cost_usd"), date=values.get("date"),
        )  # fmt: skip
        try:
            score = score_value(row[column["score"]])
        except ValueError as error:
            yield replace(cell, problem=str(error))
            continue
        yield replace(cell, score=score) if score is not None else replace(cell, problem="empty")


def _wide_cells(
    name: str, names: list[str], rows: Iterator[tuple[str, list[Any]]]
) -> Iterator[Cell]:
    if len(names) < 2:
        raise MalformedFile(
            f"{name}: header: neither the long form (system, item, score) nor the wide "
            "form (a system column, then one column per item)"
        )
    items = names[1:]
    for position, item in enumerate(items, start=2):
        if not item:
            raise MalformedFile(f"{name}: header, column {position}: empty item id")
        if items.index(item) + 2 != position:
            raise MalformedFile(f"{name}: header, column {position}: item {item!r} twice")
    system_field = names[0] or "system"
    number = 0
    for where, row in rows:
        if len(row) != len(names):
            number += 1
            yield Cell(name, where, number, "record",
                       problem=f"{len(row)} fields, the header has {len(names)}")  # fmt: skip
            continue
        system = _text(row[0])
        for item, value in zip(items, row[1:], strict=True):
            if value is None or (isinstance(value, str) and not value.strip()):
                continue  # a missing result, never 0
            number += 1
            if system is None:
                yield Cell(name, where, number, system_field, item=item, problem="empty")
                continue
            try:
                score = score_value(value)
            except ValueError as error:
                yield Cell(name, where, number, item, system, item, problem=str(error))
                continue
            yield Cell(name, where, number, item, system, item, score)


def _member(archive: zipfile.ZipFile, name: str, member: str) -> Any:
    """One JSON member of a log, read within `EVAL_MEMBER_CAP`; ValueError with the reason."""
    info = archive.getinfo(member)
    if info.file_size > EVAL_MEMBER_CAP:
        raise ValueError(f"unpacks to {info.file_size:,} bytes, over {EVAL_MEMBER_CAP:,}")
    try:
        with archive.open(info) as handle:
            content = handle.read(EVAL_MEMBER_CAP + 1)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as error:
        raise ValueError(f"cannot be unpacked ({error})") from None
    if len(content) > EVAL_MEMBER_CAP:
        raise ValueError(f"unpacks to more than {EVAL_MEMBER_CAP:,} bytes")
    try:
        return json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"not JSON ({str(error)[:120]})") from None


def read_eval(name: str, content: bytes, scorer: str | None = None) -> ReadFile:
    """The cells of one inspect_ai ``.eval`` log (see the module docstring): one system,
    one cell per sample id (its epochs averaged), and the headline its header states.

    Args:
        name: The file's name, for the reasons.
        content: The log's bytes.
        scorer: The scorer whose value is read; None: the first scorer the header's
            results name, else the only scorer of the samples.

    Raises:
        MalformedFile: When the zip or its ``header.json`` cannot be read, naming the file
            and the member.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
        members = archive.namelist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise MalformedFile(f"{name}: not a readable .eval log (zip: {error})") from None
    if "header.json" not in members:
        raise MalformedFile(f"{name}: header.json: missing (not an inspect_ai .eval log)")
    try:
        header = _member(archive, name, "header.json")
    except ValueError as error:
        raise MalformedFile(f"{name}: header.json: {error}") from None
    evaluation = header.get("eval") if isinstance(header, dict) else None
    model = evaluation.get("model") if isinstance(evaluation, dict) else None
    if not isinstance(model, str) or not model.strip():
        raise MalformedFile(f"{name}: header.json, field 'eval.model': missing or not text")
    system = model.strip()
    task = evaluation.get("task") if isinstance(evaluation, dict) else None
    created = evaluation.get("created") if isinstance(evaluation, dict) else None
    results = header.get("results") if isinstance(header, dict) else None
    scores = results.get("scores") if isinstance(results, dict) else None
    headline: tuple[str | None, str | None, str | None] = (None, None, None)
    for entry in scores if isinstance(scores, list) else ():
        if not isinstance(entry, dict) or (scorer is not None and entry.get("name") != scorer):
            continue
        metrics = entry.get("metrics")
        first = next(iter(metrics.values()), None) if isinstance(metrics, dict) else None
        if isinstance(first, dict) and isinstance(first.get("value"), int | float):
            headline = (str(entry.get("name")), str(first.get("name")), repr(first["value"]))
        break
    chosen = scorer or headline[0]
    samples = sorted(
        (m for m in members if SAMPLE.match(m)),
        key=lambda m: (SAMPLE.match(m)["id"], int(SAMPLE.match(m)["epoch"])),  # type: ignore[index]
    )
    epochs: dict[str, list[float]] = {}
    first_of: dict[str, Cell] = {}
    cells: list[Cell] = []
    for number, member in enumerate(samples, start=1):
        base = Cell(name, member, number, "scores", system=system)
        try:
            sample = _member(archive, name, member)
        except ValueError as error:
            cells.append(replace(base, field="record", problem=str(error)))
            continue
        if not isinstance(sample, dict):
            cells.append(replace(base, field="record", problem="not a JSON object"))
            continue
        item = _text(sample.get("id"))
        if item is None:
            cells.append(replace(base, field="id", problem="missing"))
            continue
        found = sample.get("scores")
        if not isinstance(found, dict) or not found:
            cells.append(replace(base, item=item, problem="no scores (the sample was not scored)"))
            continue
        key = chosen if chosen is not None else (next(iter(found)) if len(found) == 1 else None)
        if key is None or key not in found:
            named = "one scorer" if key is None else f"scorer {key!r}"
            cells.append(
                replace(base, item=item, problem=f"{named} expected, found {sorted(found)}")
            )
            continue
        field = f"scores.{key}.value"
        value = found[key].get("value") if isinstance(found[key], dict) else None
        try:
            score = score_value(value)
        except ValueError as error:
            cells.append(replace(base, item=item, field=field, problem=str(error)))
            continue
        if score is None:
            cells.append(replace(base, item=item, field=field, problem="empty"))
            continue
        epochs.setdefault(item, []).append(score)
        first_of.setdefault(item, replace(base, item=item, field=field))
    for item, values in epochs.items():
        cells.append(replace(first_of[item], score=sum(values) / len(values), date=_text(created)))
    cells.sort(key=lambda c: c.number)
    stated = [Stated(name, system, _text(task), headline[1], headline[2], _text(created))]
    return ReadFile("eval", cells, stated)


@dataclass(frozen=True)
class Deduplicated:
    """Cells each once, and what was set aside: a repeated cell with the same score (counted
    once), and cells that give one system's item two different scores (both set aside)."""

    cells: list[Cell]
    repeats: list[tuple[Cell, Cell]]
    conflicts: list[tuple[Cell, Cell]]


def deduplicated(cells: Sequence[Cell]) -> Deduplicated:
    """The one rule for repeated item ids in one system's results: a repeat with the same
    score counts once (the repeat is reported against its first occurrence); a repeat with
    another score leaves the item without a result for that system, both reported."""
    first: dict[tuple[str, str], Cell] = {}
    repeats, conflicts = [], []
    dropped: set[tuple[str, str]] = set()
    for cell in cells:
        if cell.problem is not None or cell.system is None or cell.item is None:
            continue
        key = (cell.system, cell.item)
        earlier = first.get(key)
        if earlier is None:
            first[key] = cell
        elif earlier.score == cell.score:
            repeats.append((cell, earlier))
        else:
            conflicts.append((cell, earlier))
            dropped.add(key)
    kept = [c for k, c in first.items() if k not in dropped]
    return Deduplicated(kept, repeats, conflicts)


def repeat_reason(cell: Cell, earlier: Cell) -> str:
    return (
        f"system {cell.system!r} item {cell.item!r} given again (first at {earlier.where}), "
        "counted once"
    )


def conflict_reason(cell: Cell, earlier: Cell) -> str:
    return (
        f"system {cell.system!r} item {cell.item!r} has score {cell.score:g} here and "
        f"{earlier.score:g} at {earlier.where}"
    )


def groups_by(pattern: str, items: Sequence[str]) -> dict[str, str]:
    """Each item's group: the first capture group of `pattern` in the item id (or the whole
    match). ValueError naming the item the pattern does not match, or a bad pattern."""
    try:
        rule = re.compile(pattern)
    except re.error as error:
        raise ValueError(f"{pattern!r} is not a regular expression ({error})") from None
    groups = {}
    for item in items:
        match = rule.search(item)
        if match is None:
            raise ValueError(f"item {item!r}: {pattern!r} does not match")
        groups[item] = match.group(1) if rule.groups else match.group(0)
    return groups


__all__ = [
    "Cell",
    "Deduplicated",
    "MalformedFile",
    "ReadFile",
    "Stated",
    "deduplicated",
    "form_of",
    "groups_by",
    "read_eval",
    "read_file",
    "score_value",
    "table_rows",
]
