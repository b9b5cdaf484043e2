"""Building an immutable dataset release folder from the warehouse.

```
<releases_root>/<release_id>/
  manifest.json            what the release holds, with the sha256 of every other file
  schema.json              every table's columns (name, type, description), key, lineage
                           and rank rules, and the evaluations' titles (`published.py`)
  data/<table>.csv|.json|.parquet
  bench.duckdb             one table per published table, commented, and views; DuckDB 1.x
                           opens it too (`database.py`)
  diff.json                what changed since the previous release
  datapackage.json         every file as a Frictionless resource, columns typed and described
<releases_root>/latest     the latest release id (written last, atomically)
```

The release id is "r" + the first 16 hex digits of a sha256 over the methodology versions, the
sha256 of `schema.json` and, per table, its name and the sha256 of its published JSON rendering
with the lineage columns left out (see `published.py`). For a table without lineage columns
that is exactly the sha256 of its `data/<table>.json`. Left out of the id: the CSV and Parquet
renderings (the same rows as the JSON; Parquet also embeds the writer's version, so a library
upgrade alone would otherwise make a "new" release), `bench.duckdb` (not byte-reproducible),
the creation time and the previous release. So the same published values under the same
methodology always give the same id, whichever runs delivered them and whenever.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.core.files import write_text
from bench_pipeline.core.warehouse import transaction
from bench_pipeline.release.database import write_release_database
from bench_pipeline.release.datapackage import DATAPACKAGE, datapackage
from bench_pipeline.release.diff import MANIFEST, diff_releases, load_manifest
from bench_pipeline.release.downloads import csv_parts, json_parts, published_values
from bench_pipeline.release.ledger import Ledger
from bench_pipeline.release.published import PUBLISHED, PublishedTable, schema_document
from bench_pipeline.release.schema import SCHEMA, Frames, Together

LATEST = "latest"
DIFF = "diff.json"
DATABASE = "bench.duckdb"
DATA = "data"
FORMATS = ("csv", "json", "parquet")
RUN_ID_COLUMNS = ("source_run_id", "run_id")
PARQUET_ROW_GROUP = 122_880
"""Rows per Parquet row group: DuckDB's row group size, the size of the chunks its query
results arrive in, which polars' writer otherwise follows. Stated, so a table's Parquet file
does not depend on how its frame happens to be chunked (a frame sorted by polars is one
chunk, `PublishedTable.sort`) and stays the bytes it was."""


@dataclass(frozen=True)
class ReleaseOutcome:
    release_id: str
    path: Path
    created: bool
    previous_release_id: str | None


def content_sha256(table: PublishedTable, frame: pl.DataFrame) -> str:
    """The digest a table contributes to the release id: its JSON without lineage columns."""
    values = frame.drop([c for c in table.lineage if c in frame.columns])
    digest = hashlib.sha256()
    for part in json_parts(values):  # its JSON, a chunk at a time
        digest.update(part)
    return digest.hexdigest()


def _write_json(ledger: Ledger, table: PublishedTable, values: pl.DataFrame) -> str:
    """Write the table's `data/<table>.json` from its `published_values` and return its
    `content_sha256`: the file's own digest when the table has no lineage column (the same
    bytes), so it is rendered once."""
    written = ledger.write(f"{DATA}/{table.name}.json", json_parts(values))
    if any(c in values.columns for c in table.lineage):
        return content_sha256(table, values)
    return written.sha256


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _partial_folder(releases_root: Path) -> Path:
    """A new partial folder for this build, `.<pid>-<random>.partial`, after removing those
    left by builds that stopped: their process is gone, or it is this one (a process builds
    one release at a time), or the name is not one of these (an older build's)."""
    for path in releases_root.glob(".*.partial"):
        pid = path.name[1:].split("-", 1)[0]
        stopped = not pid.isdigit() or int(pid) == os.getpid() or not _pid_alive(int(pid))
        if path.is_dir() and stopped:
            shutil.rmtree(path, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f".{os.getpid()}-", suffix=".partial", dir=releases_root))


def release_id(methodology_versions: Mapping[str, str], contents: Mapping[str, str]) -> str:
    identity = {
        "methodology_versions": dict(sorted(methodology_versions.items())),
        "tables": sorted(contents.items()),
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return "r" + hashlib.sha256(text.encode()).hexdigest()[:16]


def read_latest(releases_root: Path) -> str | None:
    """The id `latest` names, if it names a release folder that exists."""
    pointer = releases_root / LATEST
    if not pointer.is_file():
        return None
    name = pointer.read_text(encoding="utf-8").strip()
    return name if name and (releases_root / name / MANIFEST).is_file() else None


def _strictly_ascending(frame: pl.DataFrame, key: Sequence[str]) -> bool:
    """Whether each row's key comes strictly after the previous row's, compared column by
    column (then no two rows share a key). One vectorised pass, no hashing: most tables
    are queried in key order. A missing value compares as unknown, so the answer is False."""
    after = pl.lit(False)
    for name in reversed(key):  # after = a > a' or (a = a' and (b > b' or ...))
        value, previous = pl.col(name), pl.col(name).shift()
        after = (value > previous) | ((value == previous) & after)
    return bool(frame.select(after.slice(1).fill_null(False).all()).item())


def _check_keys(table: PublishedTable, frame: pl.DataFrame) -> None:
    """Refuse a table whose key names two rows (hashing every key only when the rows are not
    in strictly ascending key order)."""
    if frame.height < 2 or _strictly_ascending(frame, table.key):
        return
    if frame.select(table.key).is_duplicated().any():
        raise ValueError(f"published table {table.name}: key {table.key} is not unique")


def _iso(value: Any) -> Any:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    return value


def _source_runs(
    conn: duckdb.DuckDBPyConnection, tables: Sequence[PublishedTable], frames: dict
) -> list[dict[str, Any]]:
    """Every run a published table cites, and the last run of every source."""
    cited: set[str] = set()
    for table in tables:
        for column in table.lineage:
            if column in RUN_ID_COLUMNS:
                cited.update(v for v in frames[table.name][column].unique().to_list() if v)
    with conn.cursor() as cursor:
        rows = cursor.execute(
            "SELECT source, run_id, content_sha256, finished_at, status, data_as_of "
            "FROM source_runs "
            "WHERE list_contains(?::VARCHAR[], run_id) OR run_id IN (SELECT run_id FROM "
            "source_runs QUALIFY row_number() OVER (PARTITION BY source "
            "ORDER BY finished_at DESC, run_id DESC) = 1) "
            "ORDER BY source, finished_at, run_id",
            [sorted(cited)],
        ).fetchall()
    names = ("source", "run_id", "content_sha256", "finished_at", "status", "data_as_of")
    return [dict(zip(names, map(_iso, row), strict=True)) for row in rows]


def _data_as_of(frames: Mapping[str, pl.DataFrame]) -> dict[str, str | None]:
    """Per source, the date of the data this release holds, from its `sources` table."""
    sources = frames.get("sources")
    if sources is None or "data_as_of" not in sources.columns:
        return {}
    return {
        str(name): _iso(when) for name, when in sources.select("name", "data_as_of").iter_rows()
    }


def _file_entries(ledger: Ledger, rows: Mapping[str, int | None]) -> list[dict[str, Any]]:
    """path, sha256, bytes and rows of every file in the ledger's folder but the manifest."""
    entries = []
    for path in sorted(p for p in ledger.folder.rglob("*") if p.is_file()):
        relative = path.relative_to(ledger.folder).as_posix()
        if relative == MANIFEST:
            continue
        written = ledger.file(relative)
        entries.append(
            {
                "path": relative,
                "sha256": written.sha256,
                "bytes": written.size,
                "rows": rows.get(relative),
            }
        )
    return entries


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    text = json.dumps(manifest, ensure_ascii=False, indent=1) + "\n"
    (folder / MANIFEST).write_text(text, encoding="utf-8")


def _record(conn: duckdb.DuckDBPyConnection, manifest: dict[str, Any], path: Path) -> None:
    """The release's row in the warehouse `releases` table (once)."""
    rows = {t["name"]: t["rows"] for t in manifest["tables"]}
    created = datetime.fromisoformat(manifest["created_at"]).astimezone(UTC).replace(tzinfo=None)
    with transaction(conn):
        known = conn.execute(
            "SELECT count(*) FROM releases WHERE release_id = ?", [manifest["release_id"]]
        ).fetchall()[0][0]
        if not known:
            conn.execute(
                "INSERT INTO releases VALUES (?, ?, ?, ?, ?, ?)",
                [
                    manifest["release_id"],
                    created,
                    manifest["previous_release_id"],
                    json.dumps(rows),
                    sum(rows.values()),
                    str(path),
                ],
            )


def _read_only(paths: Iterable[Path]) -> None:
    for path in paths:
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def _write_parquet(ledger: Ledger, relative: str, frame: pl.DataFrame) -> None:
    """Write a table's Parquet file through the ledger, digested as it is written rather
    than read back."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer, row_group_size=PARQUET_ROW_GROUP)
    ledger.write(relative, buffer.getvalue())


def _write_database(ledger: Ledger, tables: Sequence[PublishedTable], frames: Frames) -> None:
    """Write `bench.duckdb` and digest it on the thread that wrote it (DuckDB writes the
    file itself, so it is read back once), beside the downloads being written."""
    write_release_database(ledger.folder / DATABASE, tables, frames)
    ledger.file(DATABASE)


def _write_downloads(
    ledger: Ledger,
    tables: Sequence[PublishedTable],
    frames: Frames,
    published: Frames,
    contents: Mapping[str, str],
    rows: dict[str, int | None],
) -> list[dict[str, Any]]:
    """Write each table's CSV (from the `published_values` its JSON was written from) and
    Parquet beside its JSON, note every file's rows, and return the manifest's table
    entries."""
    entries = []
    for table in tables:
        frame = frames[table.name]
        ledger.write(f"{DATA}/{table.name}.csv", csv_parts(frame, published[table.name]))
        _write_parquet(ledger, f"{DATA}/{table.name}.parquet", frame)
        files = {}
        for fmt in FORMATS:
            relative = f"{DATA}/{table.name}.{fmt}"
            files[fmt] = {"path": relative, "sha256": ledger.file(relative).sha256}
            rows[relative] = frame.height
        entries.append(
            {
                "name": table.name,
                "title": table.title,
                "rows": frame.height,
                "key": list(table.key),
                "ranks": [rule.document() for rule in table.ranks],
                "lineage": list(table.lineage),
                "methodology": table.methodology,
                "content_sha256": contents[table.name],
                "files": files,
            }
        )
    return entries


def build_release(
    conn: duckdb.DuckDBPyConnection,
    releases_root: Path,
    methodology_versions: Mapping[str, str],
    tables: Sequence[PublishedTable] = PUBLISHED,
) -> ReleaseOutcome:
    """Publish the warehouse's tables as a new release, unless a release of exactly these
    values under these methodology versions exists already (then only `latest` may move)."""
    unknown = sorted({t.methodology for t in tables} - set(methodology_versions))
    if unknown:
        raise ValueError(f"no methodology version given for {unknown}")
    made: dict[Together, Frames] = {}  # the receipts' two tables are assembled once for both
    frames = {table.name: table.frame(conn, made) for table in tables}
    for table in tables:
        _check_keys(table, frames[table.name])
    releases_root.mkdir(parents=True, exist_ok=True)
    partial = _partial_folder(releases_root)  # the JSON is written as it is digested
    ledger = Ledger(partial)
    # converted once for the JSON and the CSV (`published_values` leaves converted values be)
    published = {name: published_values(frame) for name, frame in frames.items()}
    contents = {table.name: _write_json(ledger, table, published[table.name]) for table in tables}
    schema_text = json.dumps(schema_document(tuple(tables)), ensure_ascii=False, indent=1) + "\n"
    contents[SCHEMA] = hashlib.sha256(schema_text.encode()).hexdigest()  # a new column is news
    rid = release_id(methodology_versions, contents)
    final = releases_root / rid
    latest = read_latest(releases_root)

    if (final / MANIFEST).is_file():  # these values were released before: nothing new
        shutil.rmtree(partial, ignore_errors=True)
        manifest = load_manifest(final)
        _record(conn, manifest, final)  # in case an earlier build stopped before its row
        if latest != rid:
            write_text(releases_root / LATEST, rid)
        return ReleaseOutcome(rid, final, False, manifest["previous_release_id"])

    rows: dict[str, int | None] = {}
    with ThreadPoolExecutor(max_workers=1) as pool:  # DuckDB and polars work without the GIL
        database = pool.submit(_write_database, ledger, tables, frames)
        entries = _write_downloads(ledger, tables, frames, published, contents, rows)
        database.result()
    rows[DATABASE] = sum(frame.height for frame in frames.values())
    ledger.write(SCHEMA, schema_text.encode("utf-8"))

    created_at = datetime.now(UTC).isoformat(timespec="seconds")
    manifest = {
        "release_id": rid,
        "created_at": created_at,
        "methodology_versions": dict(sorted(methodology_versions.items())),
        "case_versions": [],
        "source_runs": _source_runs(conn, tables, frames),
        "schema": SCHEMA,
        "tables": entries,
        "files": [],
        "previous_release_id": latest,
    }
    _write_manifest(partial, manifest)  # the diff reads the new release's manifest
    diff = diff_releases(releases_root / latest if latest else None, partial)
    ledger.write(DIFF, (json.dumps(diff, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
    package = datapackage(partial, rid, created_at, tables, ledger, _data_as_of(frames))
    ledger.write(
        DATAPACKAGE, (json.dumps(package, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    )
    manifest["files"] = _file_entries(ledger, rows)
    _write_manifest(partial, manifest)
    _read_only(p for p in partial.rglob("*") if p.is_file())

    try:
        os.replace(partial, final)
    except OSError:
        if not (final / MANIFEST).is_file():
            raise
        shutil.rmtree(partial, ignore_errors=True)  # another writer published it first
        return ReleaseOutcome(rid, final, False, load_manifest(final)["previous_release_id"])
    _record(conn, manifest, final)
    write_text(releases_root / LATEST, rid)  # last: readers follow `latest`
    return ReleaseOutcome(rid, final, True, latest)
