"""The model registry asset: every source's names matched to canonical models."""

from typing import Any

import dagster as dg

from bench_pipeline.assets.metadata import table_asset_metadata, table_metadata, timed
from bench_pipeline.assets.sources import live_key
from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import evaluations, source_definitions
from bench_pipeline.registry.matching import AliasFile
from bench_pipeline.registry.store import rebuild_registry
from bench_pipeline.resources.warehouse import WarehouseResource

REGISTRY_KEY = dg.AssetKey(["registry", "models"])
REGISTRY_TABLES = (
    "models",
    "model_aliases",
    "unmatched_models",
    "quarantined_models",
    "refused_merges",
    "evaluation_scores",
)


@dg.asset(
    key=REGISTRY_KEY,
    deps=[live_key(name) for name in source_definitions()],
    group_name="registry",
    kinds={"duckdb", "python"},
    owners=["team:registry"],
    description=(
        "Canonical models, one per lab's model, with every source's name for it (reviewed "
        "alias table, then provider id, then exact normalised name within the lab) and the "
        "evidence each rests on; a dated id is its own model; hosts' listings fold into "
        "their model; unmatched names are listed in `unmatched_models`, impostor ids in "
        "`quarantined_models`, and refused dated-snapshot and family-name merges in "
        "`refused_merges`. "
        "Also the best published score per model and evaluation, with the row it came from."
    ),
)
@timed
def model_registry(warehouse: WarehouseResource) -> dg.MaterializeResult:
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    with warehouse.connection() as conn:
        rebuild_registry(conn, aliases, evaluations())
        metadata: dict[str, Any] = {}
        for table in REGISTRY_TABLES:
            metadata |= table_metadata(conn, table)
        metadata |= table_asset_metadata(conn, "models")
    return dg.MaterializeResult(metadata=metadata)


@dg.asset_check(
    asset=REGISTRY_KEY, blocking=True, description="Every alias and score names a registered model."
)
def registry_referential_integrity(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connection() as conn:
        orphans = conn.execute(
            "SELECT count(*) FROM (SELECT model_id FROM model_aliases UNION ALL "
            "SELECT model_id FROM evaluation_scores UNION ALL "
            "SELECT model_id FROM unmatched_models WHERE model_id IS NOT NULL) "
            "WHERE model_id NOT IN (SELECT model_id FROM models)"
        ).fetchall()[0][0]
        duplicates = conn.execute(
            "SELECT count(*) - count(DISTINCT model_id) FROM models"
        ).fetchall()[0][0]
    return dg.AssetCheckResult(
        passed=orphans == 0 and duplicates == 0,
        metadata={"orphan_references": orphans, "duplicate_model_ids": duplicates},
    )


@dg.asset_check(
    asset=REGISTRY_KEY,
    blocking=True,
    description="Every live source record has an alias (or, an impostor, a quarantine row).",
)
def registry_covers_sources(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connection() as conn:
        missing = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT model_version AS k FROM evaluation_rows) "
            "WHERE k NOT IN (SELECT source_key FROM model_aliases WHERE source = 'epoch') "
            "UNION ALL SELECT count(*) FROM openrouter_models "
            "WHERE model_id NOT IN "
            "(SELECT source_key FROM model_aliases WHERE source = 'openrouter_models') "
            "AND model_id NOT IN "
            "(SELECT source_key FROM quarantined_models WHERE source = 'openrouter_models')"
        ).fetchall()
    unmatched = sum(row[0] for row in missing)
    return dg.AssetCheckResult(passed=unmatched == 0, metadata={"records_without_alias": unmatched})
