"""One schedule per outside source, on the cadence its definition declares."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from bench_pipeline.ingest.catalog import SourceDefinition


def source_job(definition: SourceDefinition) -> dg.UnresolvedAssetJobDefinition:
    return dg.define_asset_job(
        name=f"refresh_{definition.name}",
        selection=dg.AssetSelection.groups("ingestion").required_multi_asset_neighbors()
        & dg.AssetSelection.tag("source", definition.name),
        description=f"Fetch, validate and publish {definition.title}.",
    )


def source_schedules(definitions: Iterable[SourceDefinition]) -> list[dg.ScheduleDefinition]:
    return [
        dg.ScheduleDefinition(
            name=f"refresh_{definition.name}_schedule",
            job=source_job(definition),
            cron_schedule=definition.cadence_cron,
            execution_timezone="UTC",
            default_status=dg.DefaultScheduleStatus.STOPPED,
            description=f"Refresh {definition.title} on its cadence ({definition.cadence_cron}).",
        )
        for definition in definitions
    ]
