"""The published release's tables and their columns (the release layout's contract)."""

from __future__ import annotations

from bench_pipeline.indices.rules import CAPABILITY_INDICES, KNOWN_GOOD_COMPONENTS

KGI_COLUMNS = KNOWN_GOOD_COMPONENTS
CAPABILITY_COLUMNS = tuple(index.name for index in CAPABILITY_INDICES)

COLUMNS: dict[str, tuple[str, ...]] = {
    "known_good_index": (
        "model_id", "model_name", "known_good_index", "index_components", *KGI_COLUMNS,
    ),
    "capability_indices": ("model_id", "model_name", *CAPABILITY_COLUMNS),
    "market": (
        "model_id", "model_name", "input_usd_per_1m", "output_usd_per_1m",
        "blended_price_usd_per_1m", "output_speed_tps", "latency_ttft_s", "providers_tracked",
        "openness", "licence_class", "price_flag",
    ),
    "provider_prices": (
        "model_id", "provider_name", "tag", "quantization", "input_usd_per_1m",
        "output_usd_per_1m", "uptime_last_30m", "latency_ttft_s", "output_speed_tps",
        "source_run_id", "blended_price_usd_per_1m",
    ),
    "arena_elo": (
        "model_id", "model_name", "leaderboard", "category", "model_key", "rating", "rating_low",
        "rating_high", "votes", "rank", "rank_best", "rank_worst", "preliminary", "published_on",
        "source_run_id",
    ),
    "models": ("model_id", "name", "organization", "origin_source"),
    "source_runs": (
        "source", "run_id", "status", "started_at", "finished_at", "rows_valid",
        "rows_quarantined", "reason", "content_sha256",
    ),
    "index_lineage": (
        "model_id", "evaluation_id", "score", "normalised", "source_run_id", "publisher",
    ),
    "price_history": (
        "model_id", "host", "tag", "observed_at", "input_usd_per_1m", "output_usd_per_1m",
        "source_run_id",
    ),
    "sources": (
        "name", "title", "publisher", "homepage", "licence", "attribution", "cadence_cron",
    ),
}  # fmt: skip


def complete(table: str, rows: list[dict]) -> list[dict]:
    """Rows with every column of the layout present (an absent one is null)."""
    columns = COLUMNS.get(table, ())
    return [{c: None for c in columns} | row for row in rows] if columns else rows
