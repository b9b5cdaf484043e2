"""The one Definitions object: assets, checks, resources, jobs, schedules and sensors."""

from __future__ import annotations

import os

import dagster as dg

from bench_pipeline.assets.automation import with_automation
from bench_pipeline.assets.grading import GRADING_ASSETS, GRADING_CHECKS, REVIEWS_KEY
from bench_pipeline.assets.indices import arena_elo, index_checks, known_good_indices, market_data
from bench_pipeline.assets.navigator_v1 import navigator_v1
from bench_pipeline.assets.publish import analyst_copy
from bench_pipeline.assets.published_checks import published_checks
from bench_pipeline.assets.registry import (
    model_registry,
    registry_covers_sources,
    registry_referential_integrity,
)
from bench_pipeline.assets.release import RELEASE_KEY, release_checks, release_dataset
from bench_pipeline.assets.runs import MODEL_RUNS_KEY, RUN_ASSETS, SUBMITTED_KEY
from bench_pipeline.assets.scores import SCORE_ASSETS
from bench_pipeline.assets.site import SITE_KEY, static_site
from bench_pipeline.assets.sources import client_key, live_table_checks, source_assets
from bench_pipeline.assets.versions import fetch_job, with_versions
from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.resources.browser import BrowserResource
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.sandbox import SandboxResource
from bench_pipeline.resources.sources import LiveHttpClient, RecordedSnapshotClient, SourceClient
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.sensors.failures import record_run_failures
from bench_pipeline.sensors.inbox import inbox_sensor
from bench_pipeline.sensors.new_models import new_openrouter_models
from bench_pipeline.sensors.schedules import source_schedules

SOURCE_MODES = ("recorded", "live")
RUN_JOB = "execute_model_runs"
FETCH_JOB = "fetch_sources"
"""Every source's raw fetch: what `bench run` always runs first (see `cli/incremental.py`)."""
_RUNS = dg.AssetSelection.assets(MODEL_RUNS_KEY)
_BEFORE_RUNS = _RUNS.upstream() - _RUNS
PIPELINE_JOBS: tuple[tuple[str, dg.AssetSelection, str], ...] = (
    (
        "prepare_inputs",
        _BEFORE_RUNS,
        "Sources, registry, task bank, setups and rates: everything model runs need.",
    ),
    (
        RUN_JOB,
        _RUNS,
        "Model runs over every partition given (a single-run backfill in `bench run`).",
    ),
    (
        "grade_and_publish",
        dg.AssetSelection.all() - _BEFORE_RUNS - _RUNS,
        "Everything after the runs: submissions, grading, scores, indices, release and site.",
    ),
)
"""`bench run` runs these jobs in order: together they are every asset and check."""


def source_clients(mode: str) -> dict[str, SourceClient]:
    """One client per source: recorded snapshots (default) or live HTTP."""
    if mode not in SOURCE_MODES:
        raise ValueError(f"BENCH_SOURCE_MODE must be one of {SOURCE_MODES}, not {mode!r}")
    make = LiveHttpClient if mode == "live" else RecordedSnapshotClient
    return {client_key(name): make() for name in source_definitions()}


def build_definitions(source_mode: str = "recorded") -> dg.Definitions:
    catalog = source_definitions()
    definitions = dg.Definitions(
        assets=[
            *(asset for d in catalog.values() for asset in source_assets(d)),
            *RUN_ASSETS,
            navigator_v1,
            *GRADING_ASSETS,
            *SCORE_ASSETS,
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
            *published_checks,
            *GRADING_CHECKS,
        ],
        resources={
            "warehouse": WarehouseResource(),
            "models": ModelCallsResource(),
            "browser": BrowserResource(),
            "sandbox": SandboxResource(),
            **source_clients(source_mode),
        },
        jobs=[
            dg.define_asset_job(name, selection=selection, description=description)
            for name, selection, description in PIPELINE_JOBS
        ]
        + [fetch_job(FETCH_JOB, catalog)],
        schedules=source_schedules(catalog.values()),
        sensors=[
            record_run_failures,
            new_openrouter_models,
            inbox_sensor(
                "new_submissions",
                settings.submissions_inbox,
                SUBMITTED_KEY,
                "Takes in run files dropped in $BENCH_HOME/inbox/submissions/.",
            ),
            inbox_sensor(
                "new_reviews",
                settings.reviews_inbox,
                REVIEWS_KEY,
                "Takes in blind reviews dropped in $BENCH_HOME/inbox/reviews/.",
            ),
        ],
        executor=dg.in_process_executor,
    )
    published = {RELEASE_KEY, SITE_KEY, analyst_copy.key}
    return with_automation(
        with_versions(definitions), manual={MODEL_RUNS_KEY}, publishing=published
    )


# The deployment chooses its sources when the code location loads, as Dagster projects do.
DEFS_SOURCE_MODE = os.environ.get("BENCH_SOURCE_MODE", "recorded")
defs = build_definitions(DEFS_SOURCE_MODE)
