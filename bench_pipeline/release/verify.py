"""Checks on a published release: its manifest matches its files, and it holds no private text.

Private texts (the wording of private evaluation cases, once there are any) must never reach
a release. `private_texts` lists them; `private_text_findings` searches every file of a
release, reading each format as a reader would (JSON and CSV cells, Parquet and DuckDB
string columns, any other file as text), so escaping or compression cannot hide a match.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.core.files import sha256_file
from bench_pipeline.release.build import DATABASE, LATEST, MANIFEST, read_latest
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank import private_texts as bank_private_texts


def private_texts() -> list[str]:
    """Every text that must never be published: the private (held-out) cases of the task
    bank, whole and paragraph by paragraph (see `taskbank.private_texts`)."""
    return bank_private_texts(load_bank())


def _count_rows(path: Path) -> int | None:
    if path.suffix == ".json" and path.parent.name == "data":
        return len(json.loads(path.read_text(encoding="utf-8")))
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            return max(sum(1 for _ in csv.reader(handle)) - 1, 0)
    if path.suffix == ".parquet":
        return pl.scan_parquet(path).select(pl.len()).collect().item()
    if path.name == DATABASE:
        with duckdb.connect(str(path), read_only=True) as conn:
            tables = [r[0] for r in conn.execute("SHOW TABLES").fetchall()]
            return sum(conn.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for t in tables)
    return None


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
    for path, entry in sorted(listed.items()):
        file = release_dir / path
        if not file.is_file():
            problems.append(f"{path}: listed but missing")
            continue
        if sha256_file(file) != entry["sha256"]:
            problems.append(f"{path}: sha256 differs from the manifest")
        if file.stat().st_size != entry["bytes"]:
            problems.append(f"{path}: size differs from the manifest")
        if entry.get("rows") is not None and _count_rows(file) != entry["rows"]:
            problems.append(f"{path}: row count differs from the manifest")
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


def _file_strings(path: Path) -> Iterator[tuple[str, str]]:
    """(where, text) for every string a reader of this file would see."""
    if path.suffix == ".json":
        for text in _strings(json.loads(path.read_text(encoding="utf-8"))):
            yield "", text
    elif path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                yield from (("", cell) for cell in row)
    elif path.suffix == ".parquet":
        frame = pl.read_parquet(path)
        for column in frame.columns:
            if frame.schema[column] == pl.Utf8:
                yield from ((column, v) for v in frame[column].drop_nulls().to_list())
    elif path.name == DATABASE:
        with duckdb.connect(str(path), read_only=True) as conn:
            columns = conn.execute(
                "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
                "WHERE NOT internal AND data_type = 'VARCHAR' ORDER BY ALL"
            ).fetchall()
            for schema, table, column in columns:
                values = conn.execute(
                    f'SELECT "{column}" FROM "{schema}"."{table}" WHERE "{column}" IS NOT NULL'
                ).fetchall()
                yield from ((f"{table}.{column}", v[0]) for v in values)
    # and the raw bytes, whatever the format
    yield "bytes", path.read_bytes().decode("utf-8", errors="replace")


def private_text_findings(release_dir: Path, texts: Sequence[str]) -> list[dict[str, Any]]:
    """Where any of `texts` occurs in the release: file and column, never the text itself,
    only its position in `texts` (so a report of the finding does not publish it)."""
    wanted = [(i, t) for i, t in enumerate(texts) if t]
    if not wanted:
        return []
    findings = []
    for path in sorted(p for p in release_dir.rglob("*") if p.is_file()):
        relative = path.relative_to(release_dir).as_posix()
        hits: set[tuple[int, str]] = set()
        for where, text in _file_strings(path):
            hits.update((i, where) for i, t in wanted if t in text)
        findings += [
            {"file": relative, "where": where or None, "text_number": i}
            for i, where in sorted(hits)
        ]
    return findings
