"""Per-item results as a source kind: any source whose definition has a `[board]` table.

The payload is one or more files, each read by `ingest.item_matrix` (the readers `bench card`
uses): long or wide CSV/Parquet, or inspect_ai `.eval` logs (one system per log). Every
result becomes a row of `item_matrix_results` and every headline a log states a row of
`item_matrix_entries`, both marked with the source's name (the tables are shared by every
source of the kind; a run replaces only its own rows).

Record isolation: a result that cannot be read (not a number, an empty system, a sample
that was never scored, a score outside the board's scale, an item the grouping rule does
not match) is staged with its problem, so validation quarantines that record alone, naming
the file, the record and the field. A system's item given twice with the same score counts
once: the repeat is quarantined with a reason saying so. Given twice with two different
scores, both are quarantined (the item has no result for that system). A file that cannot be
read as a whole (not CSV, a repeated item column, a damaged zip) rejects the run naming it,
and so do more distinct items than the definition declares.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from datetime import datetime

import polars as pl

from bench_pipeline.ingest.catalog import ItemBoardSpec, SourceDefinition
from bench_pipeline.ingest.item_matrix import (
    Cell,
    MalformedFile,
    ReadFile,
    conflict_reason,
    deduplicated,
    read_file,
    repeat_reason,
)
from bench_pipeline.ingest.parsers.dates import Stated, text_date
from bench_pipeline.ingest.payload import PayloadError, RawFile, StagedColumns
from bench_pipeline.ingest.tables import ITEM_MATRIX_ENTRIES, ITEM_MATRIX_RESULTS
from bench_pipeline.ingest.validation import PROBLEM_COLUMN, PROBLEM_FIELD_COLUMN


def _read(raw: RawFile, spec: ItemBoardSpec) -> ReadFile:
    try:
        return read_file(raw.name, raw.content, spec.scorer)
    except MalformedFile as error:
        raise PayloadError(str(error)) from None


def _problems(cells: Sequence[Cell], spec: ItemBoardSpec) -> dict[int, tuple[str, str]]:
    """By cell id: the field and reason that quarantine it (unreadable, repeated, at odds
    with another, off the scale, not grouped)."""
    found: dict[int, tuple[str, str]] = {}
    for cell in cells:
        if cell.problem is not None:
            found[id(cell)] = (cell.field, f"{cell.where}: {cell.problem}")
    low, high = spec.scale
    rule = re.compile(spec.group_by) if spec.group_by else None
    for cell in cells:
        if id(cell) in found or cell.score is None:
            continue
        if not low <= cell.score <= high:
            found[id(cell)] = (
                cell.field,
                f"{cell.where}: score {cell.score:g} is outside the board's scale "
                f"{low:g} to {high:g}",
            )
        elif rule is not None and cell.group is None and not rule.search(cell.item or ""):
            found[id(cell)] = (
                "item",
                f"{cell.where}: item {cell.item!r}: the grouping rule {spec.group_by!r} "
                "does not match",
            )
    readable = [c for c in cells if id(c) not in found]
    checked = deduplicated(readable)
    for cell, earlier in checked.repeats:
        found[id(cell)] = (cell.field, f"{cell.where}: {repeat_reason(cell, earlier)}")
    for cell, earlier in checked.conflicts:
        found[id(cell)] = (cell.field, f"{cell.where}: {conflict_reason(cell, earlier)}")
        found.setdefault(
            id(earlier), (earlier.field, f"{earlier.where}: {conflict_reason(earlier, cell)}")
        )
    return found


def _group(cell: Cell, spec: ItemBoardSpec) -> str | None:
    if cell.group is not None or spec.group_by is None or cell.item is None:
        return cell.group
    match = re.search(spec.group_by, cell.item)
    if match is None:
        return None
    return match.group(1) if match.re.groups else match.group(0)


def parse_items(
    files: Sequence[RawFile], source: str, spec: ItemBoardSpec
) -> dict[str, pl.DataFrame]:
    """The staged `item_matrix_results` and `item_matrix_entries` of one payload."""
    if not files:
        raise PayloadError("the payload holds no file")
    read = [(raw, _read(raw, spec)) for raw in sorted(files, key=lambda f: f.name)]
    cells = [cell for _, found in read for cell in found.cells]
    problems = _problems(cells, spec)
    items = {c.item for c in cells if id(c) not in problems}
    if len(items) > spec.items:
        raise PayloadError(
            f"{len(items)} distinct item ids across the payload, more than the {spec.items} "
            f"items the definition of {source} declares for {spec.benchmark!r}"
        )
    results = StagedColumns(ITEM_MATRIX_RESULTS.columns)
    entries = StagedColumns(ITEM_MATRIX_ENTRIES.columns)
    for raw, found in read:
        rows = []
        for cell in found.cells:
            field, problem = problems.get(id(cell), (None, None))
            row = {
                "source": source, "board": spec.benchmark, "system": cell.system,
                "item": cell.item, "score": None if cell.score is None else repr(cell.score),
                "item_group": _group(cell, spec), "cost_usd": cell.cost_usd, "date": cell.date,
                "source_file": raw.name, "source_record": cell.where,
            }  # fmt: skip
            if problem is not None:
                row |= {PROBLEM_FIELD_COLUMN: field, PROBLEM_COLUMN: problem}
            rows.append((raw.name, cell.number, row))
        results.add_rows(rows)
        entries.add_rows(
            (
                raw.name,
                number,
                {
                    "source": source,
                    "board": spec.benchmark,
                    "system": stated.system,
                    "source_file": raw.name,
                    "task": stated.task,
                    "stated_metric": stated.metric,
                    "stated_score": stated.value,
                    "date": stated.date,
                },
            )
            for number, stated in enumerate(found.stated, start=1)
        )
    return {
        ITEM_MATRIX_RESULTS.name: results.frame(),
        ITEM_MATRIX_ENTRIES.name: entries.frame(),
    }


def parser(
    definition: SourceDefinition,
) -> Callable[[Sequence[RawFile]], dict[str, pl.DataFrame]]:
    """The parser of one per-item results source (its definition has a `[board]` table)."""
    spec = definition.board
    if spec is None:
        raise ValueError(f"{definition.name}: not a per-item results source (no [board])")

    # a partial of a module function, so the worker that stages ahead can be sent it
    return functools.partial(parse_items, source=definition.name, spec=spec)


def data_dates(files: Sequence[RawFile], scorer: str | None = None) -> list[Stated]:
    """Every date a log or result states, numbered as `parse_items` numbers the staged rows
    (a log's `eval.created` on its entry, a long file's `date` column on its result); a file
    that cannot be read states none (staging rejects it with the reason)."""
    found: list[Stated] = []
    for raw in files:
        try:
            read = read_file(raw.name, raw.content, scorer)
        except MalformedFile:
            continue
        # the day each states (a log's time carries its own offset; a CSV's may not)
        found += [
            Stated(_day(s.date), f"{s.system} in {raw.name}", ITEM_MATRIX_ENTRIES.name, raw.name, n)
            for n, s in enumerate(read.stated, start=1)
        ]
        found += [
            Stated(
                _day(c.date),
                f"{c.where} of {raw.name}",
                ITEM_MATRIX_RESULTS.name,
                raw.name,
                c.number,
            )
            for c in read.cells
            if c.date
        ]
    return found


def _day(value: str | None) -> datetime | None:
    return text_date(value[:10]) if value else None
