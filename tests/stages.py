"""The pipeline's stages for tests, never re-wired by hand: its own assets materialised
in-process with offline resources, and the plain functions its assets call.

The offline resources stay on this machine (recorded source snapshots, simulated model calls,
recorded browser inspections) and every helper works in a BENCH_HOME of the test's own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets.indices import arena_elo, known_good_indices, market_data
from bench_pipeline.assets.registry import model_registry
from bench_pipeline.assets.release import release_dataset
from bench_pipeline.assets.scores import SCORE_ASSETS
from bench_pipeline.assets.sources import client_key, source_assets
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.resources.browser import BrowserResource
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.sandbox import SandboxResource
from bench_pipeline.resources.sources import RecordedSnapshotClient
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.batch import run_model_batch, store_task_bank
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups


def database_of(home: Path) -> Path:
    """The warehouse file of a BENCH_HOME."""
    return home / "warehouse" / "bench.duckdb"


def offline_resources(home: Path, snapshots: Path | None = None) -> dict[str, object]:
    """Every resource the definitions name, offline: recorded sources (`snapshots`, else the
    repository's), simulated model calls, recorded browser inspections, the offline unit-test
    sandbox (it runs no answer code), the home's warehouse."""
    directory = None if snapshots is None else str(snapshots)
    return {
        "warehouse": WarehouseResource(path=str(database_of(home))),
        "models": ModelCallsResource(mode="simulated", cache_dir=str(home / "cache" / "responses")),
        "browser": BrowserResource(mode="offline", recordings_dir=str(home / "cache" / "browser")),
        "sandbox": SandboxResource(offline=True),
        **{client_key(name): RecordedSnapshotClient(snapshots_dir=directory)
           for name in source_definitions()},
    }  # fmt: skip


@contextmanager
def bench_home(home: Path) -> Iterator[Path]:
    """BENCH_HOME pointed at `home` for the block (assets find raw files and releases there)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCH_HOME", str(home))
        yield home


def materialize_in(
    home: Path,
    assets: Sequence[dg.AssetsDefinition | dg.AssetChecksDefinition],
    *,
    snapshots: Path | None = None,
    **options,
) -> dg.ExecuteInProcessResult:
    """`dagster.materialize(assets)` in BENCH_HOME `home` with the offline resources (an
    ephemeral instance unless `instance=` is given); raises when a step fails."""
    with bench_home(home):
        return dg.materialize(list(assets), resources=offline_resources(home, snapshots), **options)


SOURCE_ASSETS = [
    asset for definition in source_definitions().values() for asset in source_assets(definition)
]
"""Every source through the ingestion chain (raw, staging, validated, live)."""
INPUT_ASSETS = [*SOURCE_ASSETS, model_registry, known_good_indices, market_data, arena_elo]
"""Every source, then the registry, indices and market data."""
DERIVED_ASSETS = [model_registry, known_good_indices, market_data, arena_elo, *SCORE_ASSETS]
"""What `bench run` derives from the live tables before the release: registry, indices,
market data and every board."""


def materialize_derived(home: Path) -> Path:
    """Everything derived from the live tables already in `home`'s warehouse, then a release
    (which also records the price history); returns the warehouse file."""
    materialize_in(home, [*DERIVED_ASSETS, release_dataset])
    return database_of(home)


def materialize_recorded(home: Path, snapshots: Path | None = None) -> Path:
    """The recorded sources ingested and every table a release publishes built, as `bench run`
    builds them before the model runs, then a release (which also records the price
    history); returns the warehouse file."""
    materialize_in(home, [*SOURCE_ASSETS, *DERIVED_ASSETS, release_dataset], snapshots=snapshots)
    return database_of(home)


def simulated_runs(database: Path, suites: Sequence[str] = ("pm", "navigator")) -> int:
    """The task bank and setups stored, and every executable setup's simulated runs of the
    given suites, through the functions the run assets call; returns the runs stored."""
    warehouse = WarehouseResource(path=str(database))
    bank, setups = load_bank(), load_setups()
    with warehouse.connection() as conn:
        stored = store_task_bank(conn, bank, setups)
    calls = ModelCallsResource(mode="simulated", cache_dir=str(database.parent / "responses"))
    report = run_model_batch(
        stored.partitions, warehouse.connection, calls.providers(), bank=bank, setups=setups,
        locks=warehouse.locks_dir(), suites=suites,
    )  # fmt: skip
    assert not report.failures, report.failures
    return report.recorded


def bench_env(home: Path, snapshots: Path | None = None) -> dict[str, str]:
    """The environment for a `bench run` subprocess in its own BENCH_HOME (and snapshots)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "BENCH_SNAPSHOTS")}
    env["BENCH_HOME"] = str(home)
    if snapshots is not None:
        env["BENCH_SNAPSHOTS"] = str(snapshots)
    return env
