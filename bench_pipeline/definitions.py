"""The one Definitions object: assets, checks, resources, jobs, schedules and sensors."""

from __future__ import annotations

import os

import dagster as dg

from bench_pipeline.assets.indices import arena_elo, index_checks, known_good_indices, market_data
from bench_pipeline.assets.publish import analyst_copy
from bench_pipeline.assets.registry import (
    model_registry,
    registry_covers_sources,
    registry_referential_integrity,
)
from bench_pipeline.assets.release import release_checks, release_dataset
from bench_pipeline.assets.site import static_site
from bench_pipeline.assets.sources import client_key, live_table_checks, source_assets
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.resources.sources import LiveHttpClient, RecordedSnapshotClient, SourceClient
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.sensors.schedules import source_schedules

SOURCE_MODES = ("recorded", "live")
EVERYTHING_JOB = "materialize_everything"


def source_clients(mode: str) -> dict[str, SourceClient]:
    """One client per source: recorded snapshots (default) or live HTTP."""
    if mode not in SOURCE_MODES:
        raise ValueError(f"BENCH_SOURCE_MODE must be one of {SOURCE_MODES}, not {mode!r}")
    make = LiveHttpClient if mode == "live" else RecordedSnapshotClient
    return {client_key(name): make() for name in source_definitions()}


def build_definitions(source_mode: str = "recorded") -> dg.Definitions:
    catalog = source_definitions()
    return dg.Definitions(
        assets=[
            *(asset for d in catalog.values() for asset in source_assets(d)),
            model_registry,
            known_good_indices,
            market_data,
            arena_elo,
            analyst_copy,
            release_dataset,
            static_site,
        ],
        asset_checks=[
            *(check for d in catalog.values() for check in live_table_checks(d)),
            registry_referential_integrity,
            registry_covers_sources,
            *index_checks,
            *release_checks,
        ],
        resources={"warehouse": WarehouseResource(), **source_clients(source_mode)},
        jobs=[
            dg.define_asset_job(
                EVERYTHING_JOB,
                selection=dg.AssetSelection.all(),
                description="Every asset and check, in dependency order (what `bench run` runs).",
            )
        ],
        schedules=source_schedules(catalog.values()),
        executor=dg.in_process_executor,
    )


# The deployment chooses its sources when the code location loads, as Dagster projects do.
defs = build_definitions(os.environ.get("BENCH_SOURCE_MODE", "recorded"))
