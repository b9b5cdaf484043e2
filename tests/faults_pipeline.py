"""The faults suite's pipeline: every recorded source ingested and released once per module,
then, per test, a private copy that one source's changed payload is driven through (the real
ingestion chain, then everything `bench run` derives and the release), with the live and
published state measured before and after."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abuse_tally import TALLY
from stages import materialize_derived, materialize_recorded

from bench_pipeline.core import settings
from bench_pipeline.core.files import sha256_file
from bench_pipeline.core.warehouse import connect, table_checksum
from bench_pipeline.ingest import engine, work
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.release.build import build_release, read_latest
from bench_pipeline.release.published import METHODOLOGY_VERSIONS
from bench_pipeline.release.verify import verify_release
from bench_pipeline.resources.sources import RecordedSnapshotClient

REPO_SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
LIVE_TABLES = tuple(TABLES)  # every live source table the ingest chain writes


@dataclass
class Built:
    """A warehouse of every recorded snapshot and its first release (shared by a module)."""

    database: Path
    releases: Path


def build_recorded(root: Path) -> Built:
    """The pipeline's own assets over every recorded snapshot, in BENCH_HOME `root`."""
    return Built(materialize_recorded(root), root / "build" / "releases")


@dataclass
class Pipeline:
    """A private copy of a `Built` state to inject faults into."""

    root: Path
    database: Path
    releases: Path

    @classmethod
    def copy_of(cls, built: Built, root: Path) -> Pipeline:
        database, releases = root / "warehouse" / "bench.duckdb", root / "build" / "releases"
        database.parent.mkdir(parents=True)
        shutil.copy(built.database, database)
        shutil.copytree(built.releases, releases, symlinks=True)
        return cls(root, database, releases)

    def payload(self, source: str) -> dict[str, bytes]:
        """The recorded snapshot of `source`, file name → bytes (a copy to change)."""
        folder = REPO_SNAPSHOTS / source
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}

    def client(self, source: str, files: dict[str, bytes]) -> RecordedSnapshotClient:
        """A recorded-snapshot client serving `files` as the snapshot of `source`."""
        snapshots = self.root / f"snapshots-{len(list(self.root.glob('snapshots-*')))}"
        (snapshots / source).mkdir(parents=True)
        for name, content in files.items():
            (snapshots / source / name).write_bytes(content)
        return RecordedSnapshotClient(snapshots_dir=str(snapshots))

    def ingest(self, source: str, files: dict[str, bytes]) -> engine.SourceRun:
        """The real ingestion chain of one source over `files` as its recorded snapshot."""
        definition = source_definitions()[source]
        client = self.client(source, files)
        with connect(self.database) as conn:
            run = engine.fetch_and_store(
                conn, definition, lambda: client.fetch(definition), self.root / "raw", "recorded"
            )
            run = engine.stage(conn, run, definition, PARSERS[source])
            run = engine.validate(conn, run, definition)
            return engine.publish(conn, run, definition)

    def publish(self):
        """What `bench run` does after ingestion: its derived assets and the release asset
        (materialised in this BENCH_HOME); returns the release the warehouse now gives."""
        materialize_derived(self.root)
        with connect(self.database) as conn:
            return build_release(conn, self.releases, METHODOLOGY_VERSIONS)

    def state(self, *, with_price_history: bool = True) -> dict[str, Any]:
        """Checksums of every live source table (values, not the run that carried them), of
        `price_history`, and of every published file of the latest release (see
        `published_files`); without `with_price_history` (an accepted run, which adds its
        dated observations and is cited by new run ids), the published values instead."""
        with connect(self.database) as conn:
            state: dict[str, Any] = {
                table: table_checksum(conn, f"(SELECT * EXCLUDE (source_run_id) FROM {table})")
                for table in LIVE_TABLES
            }
            if with_price_history:
                state["price_history"] = table_checksum(conn, "price_history")
        if with_price_history:
            state["published"] = published_files(self.releases)
        else:
            state["published"] = published_values(self.releases)
        state["problems"] = verify_release(self.releases / str(read_latest(self.releases)))
        return state

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        with connect(self.database) as conn:
            return conn.execute(sql, params or []).fetchall()

    def quarantine(self, run_id: str) -> dict[tuple[str, int], tuple[str, str, str]]:
        """(file, record number) → (record key, field, reason) of the run's quarantine."""
        rows = self.query(
            "SELECT file_name, record_number, record_key, field, reason FROM quarantine "
            "WHERE run_id = ? ORDER BY file_name, record_number, field",
            [run_id],
        )
        found: dict[tuple[str, int], tuple[str, str, str]] = {}
        for file_name, number, key, field, reason in rows:
            found.setdefault((file_name, number), (key, field, reason))
        return found


RUN_LOG = "source_runs"
"""The published table that reports each source's last run: a rejected run is meant to show
there (the about page says so), so it is the one published table a rejection changes."""


def published_files(releases: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """Per published table of the latest release but `RUN_LOG`: its content digest and the
    sha256 of each of its files, recomputed from the files themselves."""
    folder = releases / str(read_latest(releases))
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        table["name"]: (
            table["content_sha256"],
            {kind: sha256_file(folder / f["path"]) for kind, f in table["files"].items()},
        )
        for table in manifest["tables"]
        if table["name"] != RUN_LOG
    }


def published_values(releases: Path) -> dict[str, str]:
    """Per published table of the latest release but `RUN_LOG`: a digest of its rows without
    its lineage columns (the runs and times that carried each value)."""
    folder = releases / str(read_latest(releases))
    manifest = json.loads((folder / "manifest.json").read_text())
    values = {}
    for table in manifest["tables"]:
        if table["name"] == RUN_LOG:
            continue
        rows = json.loads((folder / table["files"]["json"]["path"]).read_text())
        lineage = set(table.get("lineage") or ())
        kept = sorted(
            json.dumps({k: v for k, v in row.items() if k not in lineage}, sort_keys=True)
            for row in rows
        )
        values[table["name"]] = hashlib.sha256("\n".join(kept).encode()).hexdigest()
    return values


def working_runs(database: Path) -> list[str]:
    """The runs (`source/run`) whose working files are still beside the warehouse `database`."""
    folder = database.parent / work.FOLDER
    return sorted(f"{run.parent.name}/{run.name}" for run in folder.glob("*/*"))


def listing(document: Any) -> bytes:
    return json.dumps(document).encode()


def count_faults(injected: int, lost: int = 0) -> None:
    """Count a test's injected faults in the session summary (the test itself counts one)."""
    TALLY.add(faults=injected - 1, inputs=injected, survived=injected, lost=lost)
