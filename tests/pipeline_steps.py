"""What `bench run` does before the release, as plain calls without Dagster, for tests."""

from pathlib import Path

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.indices.market import refresh_market
from bench_pipeline.indices.openness import load_licence_table
from bench_pipeline.indices.store import compute, store
from bench_pipeline.ingest import engine
from bench_pipeline.ingest.catalog import evaluations, source_definitions
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.registry.candidates import all_candidates
from bench_pipeline.registry.matching import AliasFile, build_registry
from bench_pipeline.registry.store import write_registry
from bench_pipeline.release.prices import record_price_history
from bench_pipeline.resources.sources import RecordedSnapshotClient


def ingest_everything(database: Path, raw_root: Path, snapshots: Path | None = None) -> None:
    """Every recorded source through the ingestion chain, then the registry, the indices,
    market data and the price history."""
    client = RecordedSnapshotClient(snapshots_dir=str(snapshots) if snapshots else None)
    with connect(database) as conn:
        migrate(conn, settings.migrations_dir())
        for name, definition in source_definitions().items():
            run = engine.fetch_and_store(
                conn, definition, lambda d=definition: client.fetch(d), raw_root, "recorded"
            )
            run = engine.stage(conn, run, definition, PARSERS[name])
            run = engine.validate(conn, run, definition)
            assert engine.publish(conn, run, definition).status == "accepted"
        derive_everything(conn)


def derive_everything(conn) -> None:
    """What follows ingestion in `bench run` before the release: the registry, the indices,
    market data, the price history and the run-based boards."""
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    write_registry(conn, build_registry(all_candidates(conn, aliases), aliases), evaluations())
    store(conn, compute(conn, {spec.id: spec.direction for spec in evaluations()}))
    refresh_market(conn, load_licence_table(settings.sources_dir() / "licences.toml"))
    record_price_history(conn)
    store_scores(conn)


def store_scores(conn) -> None:
    """The three run-based boards from whatever runs the warehouse holds (as the score
    assets do), so a release always has every published table."""
    from datetime import UTC, datetime

    from bench_pipeline.scores.item_boards_store import item_board_frames
    from bench_pipeline.scores.load import all_frames, store_frames
    from bench_pipeline.taskbank import load_bank

    store_frames(conn, all_frames(conn, load_bank(), datetime.now(UTC)))
    store_frames(conn, item_board_frames(conn, settings.sources_dir() / "aliases.toml"))


def bench_env(home: Path, snapshots: Path | None = None) -> dict[str, str]:
    """The environment for a `bench run` subprocess in its own BENCH_HOME (and snapshots)."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "BENCH_SNAPSHOTS")}
    env["BENCH_HOME"] = str(home)
    if snapshots is not None:
        env["BENCH_SNAPSHOTS"] = str(snapshots)
    return env


def simulated_runs(database: Path, suites: tuple[str, ...] = ("pm", "navigator")) -> int:
    """The task bank and setups stored, and every executable setup's simulated runs of the
    given suites (what the model-run asset does offline); returns the runs stored."""
    import asyncio

    from bench_pipeline.providers import SimulatedProvider
    from bench_pipeline.runs.execute import execute_batch
    from bench_pipeline.runs.plan import parse_partition_key, planned_partitions, work_items
    from bench_pipeline.runs.store import store_bank_and_setups, store_runs
    from bench_pipeline.taskbank import load_bank
    from bench_pipeline.taskbank.setups import load_setups

    bank, catalog = load_bank(), load_setups()
    keys = [k for k in planned_partitions(bank, catalog) if parse_partition_key(k).suite in suites]
    provider = SimulatedProvider()
    with connect(database) as conn:
        migrate(conn, settings.migrations_dir())
        store_bank_and_setups(conn, bank, catalog)
        report = asyncio.run(
            execute_batch(
                work_items(keys, bank, catalog),
                lambda _item: provider,
                {},
                lambda rows: store_runs(conn, rows),
            )
        )
    return report.recorded
