"""SWE-bench's official `leaderboards.json`: every leaderboard's entries, and per-item results.

Shape: `{"leaderboards": [{"name": "bash-only", "results": [entry, ...]}, ...]}`. An entry has
`name`, `folder` (unique within its leaderboard; names are not), `date`, `resolved` (percent),
`cost`, `tags` (the model is named only there, as `Model: <id>`), and `checked`, which is a
boolean, null or a string such as "false (See README.md ...)". Entries run in the bash-only
harness add `per_instance_details`: `{instance_id: {resolved, cost, api_calls}}`.

Numbers are read as decimals, so costs keep the publisher's digits exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import msgspec
import polars as pl

from bench_pipeline.ingest.parsers.dates import Stated, text_date
from bench_pipeline.ingest.payload import (
    PayloadError,
    RawFile,
    StagedColumns,
    decoded_exactly,
    field_texts,
    not_json,
    require_keys,
    staged_frame,
)
from bench_pipeline.ingest.tables import SWEBENCH_ENTRIES, SWEBENCH_ITEM_RESULTS

FILE = "leaderboards.json"
MODEL_TAG = "Model: "


def _document(raw: RawFile) -> Any:
    try:
        return decoded_exactly(raw)
    except (msgspec.DecodeError, RecursionError):  # Python's parser decides, as it did
        pass
    try:
        return json.loads(raw.readable, parse_float=Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise PayloadError(not_json(raw, error)) from error


def _value(value: Any) -> Any:
    """Decimals as their published digits (the shared staging text handles the rest)."""
    return str(value) if isinstance(value, Decimal) else value


def checked_flag(value: Any) -> bool | str | None:
    """`checked` as true/false: a boolean as sent, or a string's leading word
    ("false (See README.md ...)" is false); anything else stays as sent, for validation
    to report against its record."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().split(" ", 1)[0].lower()
        return word if word in ("true", "false") else value
    return _value(value)


def model_tags(tags: Any) -> list[str]:
    """The model ids an entry's tags name (`Model: gpt-5` → `gpt-5`), in order."""
    if not isinstance(tags, list):
        return []
    return [
        t[len(MODEL_TAG) :].strip() for t in tags if isinstance(t, str) and t.startswith(MODEL_TAG)
    ]


def _boards(raw: RawFile) -> list[dict]:
    document = _document(raw)
    boards = document.get("leaderboards") if isinstance(document, dict) else None
    if not isinstance(boards, list):
        raise PayloadError(f"{raw.name}: expected {{'leaderboards': [...]}}")
    for number, board in enumerate(boards, start=1):
        if not isinstance(board, dict) or not isinstance(board.get("results"), list):
            raise PayloadError(f"{raw.name}: leaderboard {number} has no 'results' list")
    return boards


def parse(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    """Entries a record at a time; their per-item results (most of the rows) a column at a
    time, in the same order and numbering as `parse_by_record`."""
    by_name = {raw.name: raw for raw in files}
    if FILE not in by_name:
        raise PayloadError(f"{FILE} is missing from the payload ({', '.join(sorted(by_name))})")
    raw = by_name[FILE]
    entries = []
    number = 0
    owners: dict[str, list[Any]] = {"leaderboard": [], "folder": [], "entry": []}  # per item
    instance_ids: list[Any] = []
    results: list[Any] = []
    for board in _boards(raw):
        leaderboard = board.get("name")
        records = [r if isinstance(r, dict) else {} for r in board["results"]]
        require_keys(raw, records, ("name", "folder", "resolved"))
        for record in records:
            number += 1
            details = record.get("per_instance_details")
            details = details if isinstance(details, dict) else {}
            entries.append((raw.name, number, _entry_row(raw, leaderboard, record, details)))
            count = len(details)
            owners["leaderboard"] += [leaderboard] * count
            owners["folder"] += [record.get("folder")] * count
            owners["entry"] += [record.get("name")] * count
            instance_ids += details.keys()
            results += details.values()
    read = field_texts(results, ("resolved", "cost", "api_calls"))
    items = {
        **owners,
        "instance_id": instance_ids,
        "resolved": read["resolved"],
        "cost_usd": read["cost"],
        "api_calls": read["api_calls"],
    }
    staged_items = StagedColumns(SWEBENCH_ITEM_RESULTS.columns)
    staged_items.add_columns(raw.name, items, range(1, len(results) + 1))
    return {
        SWEBENCH_ENTRIES.name: staged_frame(list(SWEBENCH_ENTRIES.columns), entries),
        SWEBENCH_ITEM_RESULTS.name: staged_items.frame(),
    }


def _entry_row(raw: RawFile, leaderboard: Any, record: dict, details: dict) -> dict[str, Any]:
    tags = record.get("tags")
    return {
        "leaderboard": leaderboard,
        "folder": record.get("folder"),
        "entry": record.get("name"),
        "date": record.get("date"),
        "resolved_percent": _value(record.get("resolved")),
        "cost_usd": _value(record.get("cost")),
        "instance_cost_usd": _value(record.get("instance_cost")),
        "instance_calls": _value(record.get("instance_calls")),
        "checked": checked_flag(record.get("checked")),
        "checked_as_sent": record.get("checked"),
        "os_model": record.get("os_model"),
        "os_system": record.get("os_system"),
        "tags": tags,
        "model_tags": json.dumps(model_tags(tags)),
        "site": record.get("site"),
        "logs": record.get("logs") or None,
        "per_item_results": len(details),
        "source_file": raw.name,
    }


def parse_by_record(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    """Record by record (the reference `parse` is tested against)."""
    by_name = {raw.name: raw for raw in files}
    if FILE not in by_name:
        raise PayloadError(f"{FILE} is missing from the payload ({', '.join(sorted(by_name))})")
    raw = by_name[FILE]
    entries, items = [], []
    number = item_number = 0
    for board in _boards(raw):
        leaderboard = board.get("name")
        results = [r if isinstance(r, dict) else {} for r in board["results"]]
        require_keys(raw, results, ("name", "folder", "resolved"))
        for record in results:
            number += 1
            details = record.get("per_instance_details")
            details = details if isinstance(details, dict) else {}
            entries.append((raw.name, number, _entry_row(raw, leaderboard, record, details)))
            for instance_id, result in details.items():
                item_number += 1
                result = result if isinstance(result, dict) else {}
                items.append(
                    (
                        raw.name,
                        item_number,
                        {
                            "leaderboard": leaderboard,
                            "folder": record.get("folder"),
                            "entry": record.get("name"),
                            "instance_id": instance_id,
                            "resolved": result.get("resolved"),
                            "cost_usd": _value(result.get("cost")),
                            "api_calls": _value(result.get("api_calls")),
                        },
                    )
                )
    return {
        SWEBENCH_ENTRIES.name: staged_frame(list(SWEBENCH_ENTRIES.columns), entries),
        SWEBENCH_ITEM_RESULTS.name: staged_frame(list(SWEBENCH_ITEM_RESULTS.columns), items),
    }


def data_dates(files: Sequence[RawFile]) -> list[Stated]:
    """Every entry's `date`, numbered as `parse_by_record` numbers the entries."""
    found: list[Stated] = []
    for raw in files:
        if raw.name != FILE:
            continue
        number = 0
        for board in _boards(raw):
            for entry in board["results"]:
                number += 1
                if isinstance(entry, dict):
                    where = f"{entry.get('name')} on {board.get('name')}"
                    stated = text_date(entry.get("date"))
                    found.append(Stated(stated, where, SWEBENCH_ENTRIES.name, raw.name, number))
    return found
