"""Known Good Index, capability indices, market data and Arena ratings in the warehouse.

Their downloads are published by the release asset (`assets/release.py`), from the tables
defined once in `release/published.py`.
"""

import dagster as dg
import polars as pl

from bench_pipeline.assets.metadata import table_asset_metadata, table_metadata, timed
from bench_pipeline.assets.registry import REGISTRY_KEY
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.indices.market import refresh_market
from bench_pipeline.indices.openness import load_licence_table
from bench_pipeline.indices.pricing import load_trial_providers
from bench_pipeline.indices.store import compute, store
from bench_pipeline.ingest.catalog import evaluations
from bench_pipeline.release.published import ARENA_SQL
from bench_pipeline.resources.warehouse import WarehouseResource

GROUP = "indices"
ARENA_GROUP = "arena"
"""Arena ratings never enter an index: their own group."""
INDEX_KEY = dg.AssetKey(["indices", "known_good_index"])
MARKET_KEY = dg.AssetKey(["market", "market_data"])
ARENA_KEY = dg.AssetKey(["arena", "arena_elo"])


@dg.asset(
    key=INDEX_KEY,
    deps=[REGISTRY_KEY],
    group_name=GROUP,
    kinds={"duckdb", "polars"},
    owners=["team:indices"],
    description=(
        "Known Good Index (six evaluations, eligibility needs science + mathematics + coding) "
        "and the five capability indices, from the best published score per model. Each "
        "computation is recorded with the source runs it read, since the index is relative."
    ),
)
@timed
def known_good_indices(warehouse: WarehouseResource) -> dg.MaterializeResult:
    directions = {spec.id: spec.direction for spec in evaluations()}
    with warehouse.connection() as conn:
        result = compute(conn, directions)
        store(conn, result)
        metadata = (
            table_metadata(conn, "known_good_index")
            | table_metadata(conn, "capability_indices")
            | table_asset_metadata(conn, "known_good_index")
        )
    return dg.MaterializeResult(
        metadata=metadata
        | {
            "computation_id": result.computation_id,
            "source_run_ids": dg.MetadataValue.json(list(result.source_run_ids)),
            "eligible_models": result.known_good.filter(pl.col("eligible")).height,
        }
    )


@dg.asset(
    key=MARKET_KEY,
    deps=[REGISTRY_KEY],
    group_name=GROUP,
    kinds={"duckdb", "polars"},
    owners=["team:indices"],
    description=(
        "Blended price (3 × input + output) / 4 from the canonical OpenRouter rate, cross-checked "
        "against models.dev (a disagreement is flagged, never resolved); a $0 trial, per-clip or "
        "variable rate flagged and never ranked; per-host prices; median output speed and time "
        "to first token across hosts; openness weighed from every source, the lab's own record "
        "first, with the deciding input kept in openness_evidence."
    ),
)
@timed
def market_data(warehouse: WarehouseResource) -> dg.MaterializeResult:
    licences = load_licence_table(settings.sources_dir() / "licences.toml")
    trials = load_trial_providers(settings.sources_dir() / "rate_flags.toml")
    with warehouse.connection() as conn:
        refresh_market(conn, licences, trials)
        metadata = table_metadata(conn, "market") | table_metadata(conn, "provider_prices")
        metadata |= table_asset_metadata(conn, "market")
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(
    key=ARENA_KEY,
    deps=[REGISTRY_KEY],
    group_name=ARENA_GROUP,
    kinds={"duckdb"},
    owners=["team:indices"],
    description=(
        "LMArena ratings (overall category) with their 95% intervals and, where published, vote "
        "counts, per registry model. Shown in their own section; never part of any index."
    ),
)
@timed
def arena_elo(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connection() as conn:
        ratings = fetch_frame(conn, ARENA_SQL)
        standard = table_asset_metadata(conn, "arena_elo", rows=ratings.height)
    return dg.MaterializeResult(
        metadata={"rows": ratings.height, "leaderboards": ratings["leaderboard"].unique().len()}
        | standard
    )


def _index_check(sql: str, what: str):
    def evaluate(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        with warehouse.connection() as conn:
            bad = conn.execute(sql).fetchall()[0][0]
        return dg.AssetCheckResult(passed=bad == 0, metadata={"violations": bad, "rule": what})

    return evaluate


INDEX_CHECKS = {
    "index_values_within_0_100": (
        "SELECT count(*) FROM known_good_index k JOIN capability_indices c USING (model_id) "
        "WHERE NOT (coalesce(k.known_good_index, 0) BETWEEN 0 AND 100 "
        "AND coalesce(c.coding_index, 0) BETWEEN 0 AND 100 "
        "AND coalesce(c.agentic_index, 0) BETWEEN 0 AND 100 "
        "AND coalesce(c.mathematics_index, 0) BETWEEN 0 AND 100 "
        "AND coalesce(c.science_index, 0) BETWEEN 0 AND 100 "
        "AND coalesce(c.reasoning_index, 0) BETWEEN 0 AND 100)",
        "every index value lies within 0-100",
    ),
    "no_index_for_ineligible_models": (
        "SELECT count(*) FROM known_good_index WHERE NOT eligible AND known_good_index IS NOT NULL",
        "an ineligible model has no index (NULL, not low)",
    ),
    "index_components_between_0_and_6": (
        "SELECT count(*) FROM known_good_index WHERE index_components NOT BETWEEN 0 AND 6",
        "index_components counts at most the six evaluations",
    ),
    "indexed_models_exist_in_registry": (
        "SELECT count(*) FROM (SELECT model_id FROM known_good_index UNION ALL "
        "SELECT model_id FROM capability_indices) "
        "WHERE model_id NOT IN (SELECT model_id FROM models)",
        "every indexed model is in the registry",
    ),
}

index_checks = [
    dg.asset_check(asset=INDEX_KEY, name=name, blocking=True, description=rule)(
        _index_check(sql, rule)
    )
    for name, (sql, rule) in INDEX_CHECKS.items()
]
