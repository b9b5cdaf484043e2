"""The test layers, and shared fixtures for the ingestion tests: a fresh DuckDB warehouse in
tmp_path, the real ingestion chain over it, and a first accepted run of a trimmed real
OpenRouter listing.

Every test belongs to one layer, named by a marker (a module-level `pytestmark` in each file;
a test marked `integration` itself is integration whatever its file says):

- `unit`: plain functions: no warehouse file, no server, no Dagster run;
- `store`: real DuckDB files in a temp dir, behind plain functions;
- `assets`: `dagster.materialize` of a stage's assets with offline resources;
- `integration`: `bench run` subprocesses, `dagster dev`, Chromium, Postgres/Redis, the real
  sandbox, loopback servers, and spawned worker processes (`SPAWNING_TESTS`, named here by
  path so their files keep one layer line).

`make test-fast` runs every layer but integration; `make test` runs them all. A test with no
layer fails collection, naming its file, so a new file cannot slip out of both.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate, table_checksum
from bench_pipeline.ingest import engine
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.resources.sources import RecordedSnapshotClient

REPO_SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"

LIVE_TABLES = tuple(TABLES)  # every live source table the ingest chain writes

SEED_MODELS = 50


@dataclass
class Warehouse:
    """A migrated warehouse file under tmp_path and the real ingestion chain over it.

    Every call opens its own short-lived connection, as the pipeline does, so a subprocess can
    take the file between calls.
    """

    path: Path
    raw_root: Path
    snapshots_root: Path

    def connect(self):
        return connect(self.path)

    def write_snapshot(self, source: str, files: Mapping[str, bytes]) -> Path:
        """A fresh recorded-snapshot root holding exactly `files` for `source`."""
        number = len(list(self.snapshots_root.glob("snapshot-*")))
        root = self.snapshots_root / f"snapshot-{number:03d}"
        folder = root / source
        folder.mkdir(parents=True)
        for name, content in files.items():
            (folder / name).write_bytes(content)
        return root

    def ingest(
        self,
        source: str,
        *,
        files: Mapping[str, bytes] | None = None,
        snapshots: Path | None = None,
        client: Any = None,
        on_stage: Callable[[str], None] | None = None,
    ) -> engine.SourceRun:
        """fetch_and_store → stage → validate → publish for one source.

        The payload comes from `client` (e.g. a LiveHttpClient), else from recorded snapshots:
        `files` written to a new snapshot folder, `snapshots` (a snapshot root), or the repo's.
        """
        definition = source_definitions()[source]
        if client is None:
            if files is not None:
                snapshots = self.write_snapshot(source, files)
            client = RecordedSnapshotClient(snapshots_dir=str(snapshots or REPO_SNAPSHOTS))
        with self.connect() as conn:
            run = engine.fetch_and_store(
                conn, definition, lambda: client.fetch(definition), self.raw_root, client.mode
            )
            run = engine.stage(conn, run, definition, PARSERS[source])
            run = engine.validate(conn, run, definition)
            return engine.publish(conn, run, definition, on_stage=on_stage)

    def checksums(self) -> dict[str, tuple[int, str]]:
        """`table_checksum` of every live table."""
        with self.connect() as conn:
            return {table: table_checksum(conn, table) for table in LIVE_TABLES}

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        with self.connect() as conn:
            return conn.execute(sql, params or []).fetchall()

    def run_row(self, run_id: str) -> dict[str, Any] | None:
        """The run's `source_runs` row as a dict, or None when the run was never recorded."""
        with self.connect() as conn:
            cursor = conn.execute("SELECT * FROM source_runs WHERE run_id = ?", [run_id])
            row = cursor.fetchone()
            names = [d[0] for d in cursor.description]
        return dict(zip(names, row, strict=True)) if row else None

    def quarantine(self, run_id: str) -> list[dict[str, Any]]:
        with self.connect() as conn:
            cursor = conn.execute(
                "SELECT * FROM quarantine WHERE run_id = ? ORDER BY record_number, field", [run_id]
            )
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    """A fresh warehouse file, migrated, with nothing ingested yet."""
    path = tmp_path / "warehouse" / "bench.duckdb"
    with connect(path) as conn:
        applied = migrate(conn, settings.migrations_dir())
    assert applied, "the migrations created nothing"
    snapshots_root = tmp_path / "snapshots"
    snapshots_root.mkdir()
    return Warehouse(path=path, raw_root=tmp_path / "raw", snapshots_root=snapshots_root)


@pytest.fixture(scope="session")
def _real_openrouter_listing() -> dict[str, Any]:
    return json.loads((REPO_SNAPSHOTS / "openrouter_models" / "models.json").read_bytes())


@pytest.fixture
def openrouter_listing(_real_openrouter_listing) -> dict[str, Any]:
    """The recorded real OpenRouter `/api/v1/models` response (a private copy to edit)."""
    return copy.deepcopy(_real_openrouter_listing)


def _listing_bytes(models: list[dict[str, Any]]) -> bytes:
    return json.dumps({"data": models}).encode()


@dataclass
class Seeded:
    """A warehouse whose first accepted run loaded the first 50 real OpenRouter models."""

    warehouse: Warehouse
    run: engine.SourceRun
    models: list[dict[str, Any]]
    checksums: dict[str, tuple[int, str]]


@pytest.fixture
def seeded(warehouse: Warehouse, openrouter_listing: dict[str, Any]) -> Seeded:
    models = openrouter_listing["data"][:SEED_MODELS]
    run = warehouse.ingest("openrouter_models", files={"models.json": _listing_bytes(models)})
    assert run.status == "accepted", engine.describe(run)
    assert run.rows_valid == {"openrouter_models": SEED_MODELS}
    return Seeded(warehouse=warehouse, run=run, models=models, checksums=warehouse.checksums())


@pytest.fixture(scope="session")
def recorded_warehouse(tmp_path_factory: pytest.TempPathFactory):
    """Every recorded source ingested, the registry and the indices built; a read-only view."""
    import duckdb
    from stages import materialize_recorded

    database = materialize_recorded(tmp_path_factory.mktemp("recorded"))
    reader = duckdb.connect(str(database), read_only=True)
    yield reader
    reader.close()


LAYERS = {
    "unit": "plain functions: no warehouse file, no server, no Dagster run",
    "store": "real DuckDB files in a temp dir, behind plain functions",
    "assets": "dagster.materialize of a stage's assets with offline resources",
    "integration": "bench run, dagster dev, Chromium, Postgres/Redis, sandbox, loopback servers",
}


SPAWNING_TESTS = {
    "tests/test_abuse.py::test_the_same_asset_materialised_twice_at_once": (
        "two spawned processes each import Dagster and materialise"
    ),
    "tests/test_scores_navigator.py::test_tests_shared_among_processes_give_identical_results": (
        "a pool of spawned worker processes"
    ),
    "tests/test_providers.py::test_processes_appending_at_once_never_mix_their_entries": (
        "spawned processes append to one journal at once"
    ),
}
"""Tests in a file of a faster layer that spawn Python worker processes: integration."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        help="rewrite committed snapshots (tests/snapshots/) from the code instead of comparing",
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, what in LAYERS.items():
        config.addinivalue_line("markers", f"{name}: test layer, {what}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `SPAWNING_TESTS` integration; fail collection for any test without a layer marker
    (its file and name given)."""
    for item in items:
        if item.nodeid.split("[")[0] in SPAWNING_TESTS:
            item.add_marker(pytest.mark.integration)
    unmarked = [
        item.nodeid for item in items if not any(item.get_closest_marker(m) for m in LAYERS)
    ]
    if unmarked:
        raise pytest.UsageError(
            "every test needs a layer marker (module-level `pytestmark`, one of "
            f"{', '.join(LAYERS)}); none on: {', '.join(unmarked[:10])}"
            + (f" and {len(unmarked) - 10} more" if len(unmarked) > 10 else "")
        )


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The reliability suite's figures: fault and abuse tests run and passed, inputs tried,
    inputs survived, rows lost."""
    from abuse_tally import TALLY

    passed = terminalreporter.stats.get("passed", [])
    failed = terminalreporter.stats.get("failed", [])
    marked = {
        marker: (
            sum(marker in r.keywords for r in passed),
            sum(marker in r.keywords for r in failed),
        )
        for marker in ("faults", "abuse")
    }
    if not any(sum(pair) for pair in marked.values()):
        return
    counts = TALLY.counts
    terminalreporter.write_sep("-", "reliability and abuse suite")
    for marker, (ok, bad) in marked.items():
        terminalreporter.write_line(f"{marker}: {ok} tests passed, {bad} failed")
    terminalreporter.write_line(
        f"faults injected: {marked['faults'][0] + counts['faults']}, inputs tried: "
        f"{counts['inputs']}, survived: {counts['survived']}, rows lost: {counts['lost']}"
    )
