"""A source's raw payload (the files it returned) and the helpers parsers share."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import polars as pl

from bench_pipeline.ingest.validation import FILE_COLUMN, RECORD_COLUMN


class PayloadError(ValueError):
    """The payload cannot be read at all (malformed JSON, an HTML page, a missing column)."""


@dataclass(frozen=True)
class RawFile:
    """One file as received: its name inside the source folder and its exact bytes."""

    name: str
    content: bytes

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


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
    return json.dumps(value, sort_keys=True)


def load_json(raw: RawFile) -> Any:
    try:
        return json.loads(raw.content)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        preview = raw.content[:60].decode("utf-8", "replace")
        raise PayloadError(
            f"{raw.name}: not valid JSON ({error}); starts with {preview!r}"
        ) from error


def read_csv(raw: RawFile, required: Iterable[str]) -> list[dict[str, str | None]]:
    """CSV records as dicts (quoted newlines allowed); every required column must be present."""
    try:
        rows = list(csv.DictReader(io.StringIO(raw.content.decode("utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error) as error:
        raise PayloadError(f"{raw.name}: not a readable CSV ({error})") from error
    header = set(rows[0]) if rows else set()
    missing = [name for name in required if name not in header]
    if missing:
        raise PayloadError(f"{raw.name}: column(s) {', '.join(missing)} missing")
    return [{k: (v if v != "" else None) for k, v in row.items() if k is not None} for row in rows]


def require_keys(raw: RawFile, records: Sequence[Mapping[str, Any]], keys: Iterable[str]) -> None:
    """A field absent from every record means the upstream format changed: reject the run."""
    for key in keys:
        if records and not any(key in record for record in records):
            raise PayloadError(f"{raw.name}: field {key!r} is missing from every record")


def staged_frame(
    columns: Sequence[str], rows: Iterable[tuple[str, int, Mapping[str, Any]]]
) -> pl.DataFrame:
    """Staging rows as text columns, each with the file and record number it came from."""
    data: dict[str, list[Any]] = {name: [] for name in (*columns, FILE_COLUMN, RECORD_COLUMN)}
    for file_name, record_number, record in rows:
        for name in columns:
            data[name].append(text(record.get(name)))
        data[FILE_COLUMN].append(file_name)
        data[RECORD_COLUMN].append(record_number)
    schema = {name: pl.Utf8 for name in (*columns, FILE_COLUMN)} | {RECORD_COLUMN: pl.Int64}
    return pl.DataFrame(data, schema=schema)
