"""Every table a dataset release publishes, defined once (adding a table is one line).

Each table is a query over the warehouse (or a Python `build(conn)` for one that is not in
it) with a total ORDER BY, so the same warehouse content always gives the same rows in the
same order. `key` names a row for release diffs; `rank_by` is the column a leaderboard ranks
by (descending), if any; `lineage` lists the columns that say where or when a value came
from (source run ids, run times). Lineage is published and shown beside every change in a
diff, but it is not compared and not part of the release id: re-ingesting an unchanged payload
gives a new run id and new times, and that must not produce a new release.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.indices.rules import CAPABILITY_INDICES, KNOWN_GOOD_COMPONENTS
from bench_pipeline.ingest.catalog import source_definitions

# The version of each methodology a release was computed with. Bump a version when its rules
# change: the release id covers these, so the same data under new rules is a new release.
METHODOLOGY_VERSIONS: dict[str, str] = {
    "known_good_index": "1",
    "capability_indices": "1",
    "market": "1",
    "arena": "1",
    "registry": "1",
    "provenance": "1",
    "pm_suite": "1",
    "usecase_rank": "1",
    "navigator_index": "1",
    "item_boards": "1",
}

ARENA_SQL = """
SELECT a.model_id, m.name AS model_name, r.leaderboard, r.category, r.model_key, r.rating,
       r.rating_low, r.rating_high, r.votes, r.rank, r.rank_best, r.rank_worst, r.preliminary,
       r.published_on, r.source_run_id
FROM arena_ratings r
JOIN model_aliases a ON a.source = 'arena' AND a.source_key = r.model_key
JOIN models m USING (model_id)
WHERE r.category = 'full'
ORDER BY r.leaderboard, r.rating DESC, r.model_key
"""

MARKET_DOWNLOAD = [
    "model_id",
    "model_name",
    "input_usd_per_1m",
    "output_usd_per_1m",
    "blended_price_usd_per_1m",
    "output_speed_tps",
    "latency_ttft_s",
    "providers_tracked",
    "openness",
    "licence_class",
    "price_flag",
]

KNOWN_GOOD_SQL = f"""
SELECT model_id, model_name, known_good_index, index_components,
       {", ".join(KNOWN_GOOD_COMPONENTS)}
FROM known_good_index
ORDER BY known_good_index DESC NULLS LAST, model_id
"""

CAPABILITY_SQL = f"""
SELECT model_id, model_name, {", ".join(d.name for d in CAPABILITY_INDICES)}
FROM capability_indices
ORDER BY model_id
"""

MARKET_SQL = f"SELECT {', '.join(MARKET_DOWNLOAD)} FROM market ORDER BY model_id"

PROVIDER_PRICES_SQL = """
SELECT model_id, provider_name, tag, quantization, input_usd_per_1m, output_usd_per_1m,
       blended_price_usd_per_1m, uptime_last_30m, latency_ttft_s, output_speed_tps,
       source_run_id
FROM provider_prices
ORDER BY model_id, provider_name, tag
"""

MODELS_SQL = "SELECT model_id, name, organization, origin_source FROM models ORDER BY model_id"

# The last run of every source, accepted or not: a rejected run is news to a reader too.
SOURCE_RUNS_SQL = """
SELECT source, run_id, status, started_at, finished_at, rows_valid, rows_quarantined, reason,
       content_sha256
FROM source_runs
QUALIFY row_number() OVER (PARTITION BY source ORDER BY finished_at DESC, run_id DESC) = 1
ORDER BY source
"""

INDEX_LINEAGE_SQL = """
SELECT model_id, evaluation_id, score, normalised, source_run_id, publisher
FROM evaluation_normalised
ORDER BY model_id, evaluation_id
"""

# Rates as they changed: the first observation of each (model, host, tag) and every later one
# whose rate differs from the one before. The warehouse keeps every observation; publishing
# only the changes keeps an unchanged re-ingestion from making a new release.
PRICE_HISTORY_SQL = """
WITH ordered AS (
    SELECT *,
           lag(input_usd_per_1m) OVER w AS previous_input,
           lag(output_usd_per_1m) OVER w AS previous_output,
           row_number() OVER w AS place
    FROM price_history
    WINDOW w AS (PARTITION BY model_id, host, tag ORDER BY observed_at, source_run_id)
)
SELECT model_id, host, tag, observed_at, input_usd_per_1m, output_usd_per_1m, source_run_id
FROM ordered
WHERE place = 1
   OR previous_input IS DISTINCT FROM input_usd_per_1m
   OR previous_output IS DISTINCT FROM output_usd_per_1m
ORDER BY model_id, host NULLS FIRST, tag NULLS FIRST, observed_at, source_run_id
"""

SOURCE_COLUMNS = (
    "name", "title", "publisher", "homepage", "licence", "attribution", "cadence_cron"
)  # fmt: skip


def sources_frame(conn: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Who publishes each source, under which licence, and how often it is read."""
    definitions = sorted(source_definitions().values(), key=lambda d: d.name)
    return pl.DataFrame(
        [{c: getattr(d, c) for c in SOURCE_COLUMNS} for d in definitions],
        schema=dict.fromkeys(SOURCE_COLUMNS, pl.Utf8),
        orient="row",
    )


@dataclass(frozen=True)
class PublishedTable:
    name: str
    title: str
    sql: str | None
    key: tuple[str, ...]
    rank_by: str | None
    methodology: str
    lineage: tuple[str, ...] = ()
    build: Callable[[duckdb.DuckDBPyConnection], pl.DataFrame] | None = None

    def __post_init__(self) -> None:
        if (self.sql is None) == (self.build is None):
            raise ValueError(f"{self.name}: give exactly one of sql and build")

    def frame(self, conn: duckdb.DuckDBPyConnection) -> pl.DataFrame:
        return self.build(conn) if self.build else fetch_frame(conn, self.sql or "")


RUN = ("source_run_id",)

# One entry per published table: name, title, query, key, rank_by, methodology[, lineage].
PUBLISHED: tuple[PublishedTable, ...] = (
    PublishedTable("known_good_index", "Known Good Index", KNOWN_GOOD_SQL, ("model_id",),
                   "known_good_index", "known_good_index"),
    PublishedTable("capability_indices", "Capability indices", CAPABILITY_SQL, ("model_id",),
                   None, "capability_indices"),
    PublishedTable("market", "Market data: price, speed, latency and openness", MARKET_SQL,
                   ("model_id",), None, "market"),
    PublishedTable("provider_prices", "Prices and telemetry per host", PROVIDER_PRICES_SQL,
                   ("model_id", "provider_name", "tag"), None, "market", RUN),
    PublishedTable("arena_elo", "LMArena ratings", ARENA_SQL, ("leaderboard", "model_key"),
                   None, "arena", RUN),
    PublishedTable("models", "Model registry", MODELS_SQL, ("model_id",), None, "registry"),
    PublishedTable("source_runs", "Last run of every source", SOURCE_RUNS_SQL, ("source",),
                   None, "provenance", ("run_id", "started_at", "finished_at")),
    PublishedTable("index_lineage", "Normalised evaluation scores behind the indices",
                   INDEX_LINEAGE_SQL, ("model_id", "evaluation_id"), None, "known_good_index",
                   ("source_run_id", "publisher")),
    PublishedTable("price_history", "OpenRouter rates as they changed", PRICE_HISTORY_SQL,
                   ("model_id", "host", "tag", "source_run_id"), None, "market",
                   ("observed_at", "source_run_id")),
    PublishedTable("sources", "Sources, publishers and licences", None, ("name",), None,
                   "provenance", build=sources_frame),
    PublishedTable("pipeline_failures", "Failed pipeline runs",
                   "SELECT failed_at, job_name, message, dagster_run_id FROM run_failure_log "
                   "ORDER BY failed_at, dagster_run_id", ("dagster_run_id",), None,
                   "provenance"),
    PublishedTable("pm_runs", "PM suite: every run and its scores",
                   "SELECT * FROM pm_runs ORDER BY setup_id, task, case_id, repeat, run_id",
                   ("run_id",), None, "pm_suite"),
    PublishedTable("pm_tasks", "PM suite: task scores per setup",
                   "SELECT * FROM pm_tasks ORDER BY setup_id, task", ("setup_id", "task"), None,
                   "pm_suite"),
    PublishedTable("pm_categories", "PM suite: category scores per setup",
                   "SELECT * FROM pm_categories ORDER BY setup_id, category",
                   ("setup_id", "category"), None, "pm_suite"),
    PublishedTable("pm_setups", "PM suite leaderboard",
                   "SELECT * FROM pm_setups ORDER BY rank NULLS LAST, overall DESC, setup_id",
                   ("setup_id",), "overall", "pm_suite"),
    PublishedTable("pm_drops", "PM suite: drops and their verdicts",
                   "SELECT * FROM pm_drops ORDER BY drop_date, setup_id", ("setup_id",), None,
                   "pm_suite", ("drop_date",)),
    PublishedTable("usecase_runs", "UseCaseRank: every live run",
                   "SELECT * FROM usecase_runs ORDER BY use_case, run_id", ("run_id",), None,
                   "usecase_rank", ("published_at",)),
    PublishedTable("usecase_groups", "UseCaseRank leaderboard per use case",
                   "SELECT * FROM usecase_groups ORDER BY use_case, rank NULLS LAST, \"group\"",
                   ("use_case", "group"), "score", "usecase_rank"),
    PublishedTable("navigator_models", "Navigator Index v2",
                   "SELECT * FROM navigator_models ORDER BY index DESC NULLS LAST, model",
                   ("model",), "index", "navigator_index"),
    PublishedTable("navigator_pairs", "Navigator Index v2: paired tests",
                   "SELECT * FROM navigator_pairs ORDER BY model_a, model_b",
                   ("model_a", "model_b"), None, "navigator_index"),
    PublishedTable("item_boards", "Item boards: SWE-bench entries ranked on per-item results",
                   "SELECT * FROM item_boards ORDER BY board, items IS NULL, score DESC, "
                   "published_percent DESC NULLS LAST, entry, entry_key",
                   ("board", "entry_key"), "score", "item_boards"),
    PublishedTable("item_board_pairs", "Item boards: exact paired tests over shared items",
                   "SELECT * FROM item_board_pairs ORDER BY board, entry_key_a, entry_key_b",
                   ("board", "entry_key_a", "entry_key_b"), None, "item_boards"),
    PublishedTable("navigator_v1_fit", "Navigator classic v1: fit for a task, volume, budget",
                   "SELECT * FROM navigator_v1_fit ORDER BY task, monthly_volume, rank",
                   ("task", "monthly_volume", "model"), None, "navigator_index"),
)  # fmt: skip
PUBLISHED_BY_NAME = {table.name: table for table in PUBLISHED}
