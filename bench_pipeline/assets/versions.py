"""Code and data versions, so that a rerun can tell what changed.

Every asset carries one code version: a digest of the package's source and of the hand-kept
tables in `sources/` (aliases, licences, evaluations, definitions), so any change of code or
rules marks every asset for recomputation, and nothing else does. Assets that read files
outside the warehouse (the task bank, setups, pricing file, inboxes), or tables written beside
the asset graph (the release: source runs and failed runs), record a digest of them
(`OUTSIDE_INPUTS_KEY`); assets whose content is the point return a data version of what
they hold, so an unchanged recomputation does not make its dependents look changed.
"""

from __future__ import annotations

import functools
import hashlib
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import dagster as dg
import duckdb

from bench_pipeline.core import settings
from bench_pipeline.core.inbox import inbox_files, inbox_sha256
from bench_pipeline.core.warehouse import table_checksum

OUTSIDE_INPUTS_KEY = "outside inputs sha256"
"""Materialisation metadata: the digest of the files the asset read outside the warehouse."""
_DATED_BOARDS = ("pm_suite", "usecase_rank", "navigator_index")
"""The boards `assets/scores.py` builds as of now (they record the day they were built for)."""
_CODE_SUFFIXES = {".py", ".js", ".toml", ".sql", ".html", ".css", ".jinja", ".j2", ".md"}


def _digest(parts: Iterable[bytes]) -> str:
    hashed = hashlib.sha256()
    for part in parts:
        hashed.update(hashlib.sha256(part).digest())
    return hashed.hexdigest()


def tree_digest(*roots: Path) -> str:
    """sha256 over every file's relative path and bytes under `roots` (a missing root is
    empty), so renaming, editing, adding or removing a file changes it."""
    parts: list[bytes] = []
    for root in roots:
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        if root.is_file():
            files = [root]
        for path in files:
            if "__pycache__" in path.parts:
                continue
            parts += [str(path.relative_to(root.parent)).encode(), path.read_bytes()]
    return _digest(parts)


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """16 hex digits over the package source, the site's templates and `sources/*.toml`."""
    package = settings.REPO_ROOT / "bench_pipeline"
    code = [p for p in package.rglob("*") if p.is_file() and p.suffix in _CODE_SUFFIXES]
    site = settings.REPO_ROOT / "site"
    site_files = [p for p in site.rglob("*") if p.is_file()] if site.is_dir() else []
    rules = [*settings.sources_dir().glob("*.toml"), *settings.sources_dir().glob("*/*.toml")]
    paths = sorted({*code, *site_files, *rules} - {p for p in code if "__pycache__" in p.parts})
    root = settings.REPO_ROOT
    return _digest(b for p in paths for b in (str(p.relative_to(root)).encode(), p.read_bytes()))[
        :16
    ]


def inbox_digest(folder: Path) -> str:
    """sha256 over the contents of every file an inbox would take (names left out: the
    intake keys files by content)."""
    return _digest(sorted((inbox_sha256(p) or "").encode() for p in inbox_files(folder)))


def tables_version(conn: duckdb.DuckDBPyConnection, tables: Sequence[str]) -> dg.DataVersion:
    """A data version from the rows of `tables` (order-independent)."""
    return dg.DataVersion(_digest(f"{t}:{table_checksum(conn, t)}".encode() for t in tables)[:16])


def _count(conn: duckdb.DuckDBPyConnection, table: str) -> bytes:  # tables it never writes
    return str(conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]).encode()


def _latest(conn: duckdb.DuckDBPyConnection, table: str, column: str) -> bytes:
    """Rows and the newest `column` of a table only ever appended to."""
    return str(conn.execute(f"SELECT count(*), max({column}) FROM {table}").fetchall()).encode()


def _file(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def outside_inputs(key: dg.AssetKey, conn: duckdb.DuckDBPyConnection) -> str | None:
    """The digest of what `key` reads besides its Dagster dependencies, or None when it reads
    nothing else. An asset records it when it starts (`OUTSIDE_INPUTS_KEY`); `bench run`
    recomputes the asset when it differs."""
    from bench_pipeline.core.clock import now_utc

    path = key.path
    if path == ["runs", "task_bank"]:
        bank = tree_digest(settings.tasks_dir(), settings.setups_dir())
        return _digest([bank.encode(), _count(conn, "setup_proposals")])
    if path == ["runs", "model_rates"]:
        return _digest([_file(settings.setups_dir() / "pricing.toml")])
    if path == ["runs", "submitted_runs"]:
        # and the submitters file (its size and time, never its secrets): files waiting for
        # it are taken once it changes
        registry = settings.submitters_path()
        stat = registry.stat() if registry.is_file() else None
        marker = f"{stat.st_size}:{stat.st_mtime_ns}" if stat else ""
        return _digest([inbox_digest(settings.submissions_inbox()).encode(), marker.encode()])
    if path == ["grading", "grades"]:  # a run stored outside Dagster (a resumed batch)
        return _digest([_count(conn, "model_runs")])
    if path == ["grading", "reviews"]:  # the inbox, and reviews stored by `bench review`
        inbox = inbox_digest(settings.reviews_inbox())
        typed = conn.execute("SELECT count(*) FROM reviews WHERE origin = 'cli'").fetchall()
        return _digest([inbox.encode(), str(typed[0][0]).encode()])
    if path == ["release", "dataset"]:
        # it publishes the last run of every source and the failed pipeline runs: a rejected
        # fetch (the live tables, so every input, unchanged) or a failure is news to readers;
        # a run's id and times are lineage, so the same rejection again is not
        from bench_pipeline.release.published import PUBLISHED

        runs = next(table for table in PUBLISHED if table.name == "source_runs")
        last = conn.execute(
            f"SELECT * EXCLUDE ({', '.join(runs.lineage)}) FROM ({runs.sql})"
        ).fetchall()
        return _digest([str(last).encode(), _latest(conn, "run_failure_log", "failed_at")])
    if path == ["warehouse", "analyst_copy"]:
        # a copy of the whole warehouse: any change to it is news, even one no asset above
        # the copy made (a rejected or failed source run is a `source_runs` row, nothing more)
        return warehouse_state(conn)
    if path[0] == "scores" and path[-1] in _DATED_BOARDS:
        # boards weigh runs by their age and compare with a week before: a new day is news
        return _digest([now_utc().date().isoformat().encode()])
    return None


def warehouse_state(conn: duckdb.DuckDBPyConnection) -> str:
    """A digest that changes whenever the warehouse does: every source run (accepted or
    rejected), every pipeline failure, and each table's columns and row count. The log of
    fetches that found their payload unchanged (`source_checks`) is left out: such a fetch
    changes no data, and a rerun that changes nothing must rebuild nothing."""
    runs = conn.execute("SELECT run_id, status FROM source_runs ORDER BY run_id").fetchall()
    tables = conn.execute(
        "SELECT schema_name, table_name, column_count, estimated_size FROM duckdb_tables() "
        "WHERE database_name = current_database() AND table_name <> 'source_checks' "
        "ORDER BY ALL"
    ).fetchall()
    return _digest(
        [str(runs).encode(), str(tables).encode(), _latest(conn, "run_failure_log", "failed_at")]
    )


def outside_metadata(key: dg.AssetKey, conn: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """`{OUTSIDE_INPUTS_KEY: digest}` for an asset that reads outside inputs, else `{}`."""
    digest = outside_inputs(key, conn)
    return {} if digest is None else {OUTSIDE_INPUTS_KEY: digest}


def fetch_job(name: str, sources: Iterable[str]) -> dg.UnresolvedAssetJobDefinition:
    """A job of every source's raw fetch."""
    return dg.define_asset_job(
        name,
        selection=dg.AssetSelection.assets(*(dg.AssetKey([s, "raw"]) for s in sources)),
        description="Fetch every source; a payload identical to the live one changes nothing.",
    )


def with_versions(definitions: dg.Definitions) -> dg.Definitions:
    """`definitions` with `code_version()` on every asset that declares none."""
    version = code_version()

    def versioned(spec: dg.AssetSpec) -> dg.AssetSpec:
        return spec if spec.code_version else spec.replace_attributes(code_version=version)

    with warnings.catch_warnings():  # a preview API, used here only
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return definitions.map_asset_specs(func=versioned)


def versioned_output(value: object, metadata: dict, version: dg.DataVersion | None) -> dg.Output:
    """`dg.Output` with a data version (a beta parameter: its warning is for us, not the
    operator's terminal)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.Output(value, metadata=metadata, data_version=version)
