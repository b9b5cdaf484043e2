"""Market data per model: canonical price, per-host prices, speed, latency and openness.

One row per canonical model. Its price is its own OpenRouter listing's, else the lab's own
models.dev listing's; hosts and resellers (OpenRouter's endpoints and models.dev's host
listings) are rows of `provider_prices`, never models of their own.

`market_inputs` gathers what the live tables say about each registry model; the functions
after it turn that into published figures with the rules of METHODOLOGY section 2. A missing
figure stays missing (None), never zero.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import duckdb
import polars as pl
from polars.datatypes import DataTypeClass

from bench_pipeline.core.warehouse import fetch_frame, replace_tables
from bench_pipeline.indices.openness import (
    LicenceTable,
    classify_licence,
    openness_score,
)
from bench_pipeline.indices.pricing import blended_prices, prices_disagree, prices_disagree_series

MODEL_INPUTS_SQL = """
WITH openrouter_entry AS (   -- the model's own OpenRouter listing carries the canonical rate
    SELECT a.model_id, o.prompt_usd_per_m, o.completion_usd_per_m, o.variable_pricing,
           o.hugging_face_id, o.source_run_id
    FROM model_aliases a JOIN openrouter_models o ON o.model_id = a.source_key
    WHERE a.source = 'openrouter_models' AND a.source_key = a.model_id
),
lab_entry AS (         -- else the lab's own models.dev listing (never a host's), first by id
    SELECT a.model_id, d.input_usd_per_m AS prompt_usd_per_m,
           d.output_usd_per_m AS completion_usd_per_m, false AS variable_pricing,
           NULL AS hugging_face_id, d.source_run_id
    FROM model_aliases a JOIN modelsdev_models d
      ON a.source = 'models_dev' AND a.source_key = d.provider_id || '/' || d.model_id
    WHERE a.host IS NULL AND d.input_usd_per_m IS NOT NULL AND d.output_usd_per_m IS NOT NULL
      AND a.model_id NOT IN (SELECT model_id FROM openrouter_entry)
    QUALIFY row_number() OVER (PARTITION BY a.model_id ORDER BY a.source_key) = 1
),
own_entry AS (
    SELECT * FROM openrouter_entry UNION ALL SELECT * FROM lab_entry
),
crosscheck AS (        -- models.dev's copy of the OpenRouter rate
    SELECT a.model_id, any_value(d.input_usd_per_m) AS md_input,
           any_value(d.output_usd_per_m) AS md_output
    FROM model_aliases a JOIN modelsdev_models d
      ON a.source = 'models_dev' AND d.provider_id = 'openrouter'
     AND a.source_key = 'openrouter/' || d.model_id AND d.model_id = a.model_id
    GROUP BY ALL
),
weights AS (
    SELECT a.model_id, bool_or(d.open_weights) AS any_open, bool_and(d.open_weights) AS all_open
    FROM model_aliases a JOIN modelsdev_models d ON a.source = 'models_dev'
     AND a.source_key = d.provider_id || '/' || d.model_id
    WHERE d.open_weights IS NOT NULL
    GROUP BY ALL
),
arena_licence AS (
    SELECT a.model_id, coalesce(any_value(r.licence), any_value(m.licence)) AS licence
    FROM model_aliases a
    LEFT JOIN arena_ratings r ON r.model_key = a.source_key AND r.licence IS NOT NULL
    LEFT JOIN arena_models m ON m.model_key = a.source_key AND m.licence IS NOT NULL
    WHERE a.source = 'arena'
    GROUP BY ALL
),
epoch_access AS (
    SELECT a.model_id, any_value(e.accessibility) AS accessibility
    FROM model_aliases a JOIN epoch_models e ON e.model_version = a.source_key
    WHERE a.source = 'epoch' AND e.accessibility IS NOT NULL
    GROUP BY ALL
)
SELECT m.model_id, m.name AS model_name, o.prompt_usd_per_m, o.completion_usd_per_m,
       o.variable_pricing, o.hugging_face_id IS NOT NULL AS has_repository,
       o.source_run_id AS price_source_run_id, c.md_input, c.md_output,
       w.any_open, w.all_open, coalesce(l.licence, x.accessibility) AS licence
FROM models m
LEFT JOIN own_entry o USING (model_id)
LEFT JOIN crosscheck c USING (model_id)
LEFT JOIN weights w USING (model_id)
LEFT JOIN arena_licence l USING (model_id)
LEFT JOIN epoch_access x USING (model_id)
ORDER BY m.model_id
"""

ENDPOINTS_SQL = """
SELECT DISTINCT a.model_id, e.provider_name, e.tag, e.quantization,
       e.prompt_usd_per_m, e.completion_usd_per_m, e.uptime_last_30m,
       e.latency_p50_ms / 1000.0 AS latency_ttft_s, e.throughput_p50_tps AS output_speed_tps,
       e.source_run_id
FROM openrouter_endpoints e
JOIN openrouter_models o ON e.model_id IN (o.model_id, o.canonical_slug)
JOIN model_aliases a ON a.source = 'openrouter_models' AND a.source_key = o.model_id
UNION ALL   -- hosts' and resellers' own listings on models.dev, folded into their model
SELECT a.model_id, d.provider_name, 'models.dev:' || a.source_key AS tag, NULL AS quantization,
       d.input_usd_per_m, d.output_usd_per_m, NULL AS uptime_last_30m,
       NULL AS latency_ttft_s, NULL AS output_speed_tps, d.source_run_id
FROM model_aliases a JOIN modelsdev_models d
  ON a.source = 'models_dev' AND a.source_key = d.provider_id || '/' || d.model_id
WHERE a.host IS NOT NULL AND a.host <> 'openrouter'
ORDER BY model_id, provider_name, tag
"""


MONEY = pl.Decimal(24, 12)
_RATES = ("prompt_usd_per_m", "completion_usd_per_m")


def market_inputs(conn: duckdb.DuckDBPyConnection) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(one row per registry model, one row per model and host) from the live tables."""
    return fetch_frame(conn, MODEL_INPUTS_SQL), fetch_frame(conn, ENDPOINTS_SQL)


def open_weights(any_open: bool | None, all_open: bool | None) -> bool | None:
    """What models.dev's hosts say about the weights: open if any host lists them open."""
    if any_open is None:
        return None
    return bool(any_open or all_open)


def price_flag(
    prompt: Decimal | None,
    completion: Decimal | None,
    md_input: Decimal | None,
    md_output: Decimal | None,
) -> str | None:
    """A note for review when models.dev disagrees with OpenRouter; never a correction."""
    if prices_disagree(prompt, md_input) or prices_disagree(completion, md_output):
        return flag_text(md_input, md_output)
    return None


def flag_text(md_input: Decimal | None, md_output: Decimal | None) -> str:
    """The text of `price_flag`: models.dev's two rates as Python prints them."""
    return f"models.dev lists input {md_input} / output {md_output} USD per 1M"


def provider_prices(endpoints: pl.DataFrame) -> pl.DataFrame:
    """Each host's rate and telemetry, with its own blended price."""
    blended = blended_prices(endpoints[_RATES[0]], endpoints[_RATES[1]], MONEY)
    return endpoints.rename(
        {"prompt_usd_per_m": "input_usd_per_1m", "completion_usd_per_m": "output_usd_per_1m"}
    ).with_columns(blended.alias("blended_price_usd_per_1m"))


def market_rows(models: pl.DataFrame, hosts: pl.DataFrame, licences: LicenceTable) -> pl.DataFrame:
    """One row per model with any market figure: price, speed, latency or openness.

    Column-wise: prices and their cross-check are compared as columns; the rules that take
    few distinct inputs (`open_weights`, `classify_licence`, `openness_score`, `flag_text`)
    run once per distinct input and are joined back, so each rule keeps its one home.
    """
    telemetry = hosts.group_by("model_id").agg(
        pl.col("output_speed_tps").median(),
        pl.col("latency_ttft_s").median(),
        pl.col("provider_name").n_unique().alias("providers_tracked"),
        pl.col("source_run_id").first().alias("telemetry_source_run_id"),
    )
    joined = models.join(telemetry, on="model_id", how="left")
    fixed = ~pl.col("variable_pricing").fill_null(False)
    joined = joined.with_columns(
        *(pl.when(fixed).then(pl.col(c)).alias(c) for c in _RATES),
        pl.col("has_repository").fill_null(False),
        pl.col("providers_tracked").fill_null(0),
    )
    blended = blended_prices(joined[_RATES[0]], joined[_RATES[1]], MONEY)
    flagged = prices_disagree_series(joined[_RATES[0]], joined["md_input"]) | (
        prices_disagree_series(joined[_RATES[1]], joined["md_output"])
    )
    joined = joined.with_columns(blended.alias("blended"), flagged.alias("flagged"))
    joined = _per_distinct(joined, ["any_open", "all_open"], "open_weights", open_weights)
    joined = _per_distinct(
        joined, ["licence"], "licence_class", lambda c: classify_licence(c, licences)
    )
    joined = _per_distinct(
        joined, ["open_weights", "licence_class", "has_repository"], "openness", openness_score
    )
    joined = _per_distinct(joined, ["md_input", "md_output"], "text", flag_text)
    frame = joined.with_columns(pl.when("flagged").then("text").alias("price_flag")).rename(
        {
            "prompt_usd_per_m": "input_usd_per_1m",
            "completion_usd_per_m": "output_usd_per_1m",
            "blended": "blended_price_usd_per_1m",
        }
    )
    frame = frame.select(pl.col(c).cast(t) for c, t in MARKET_SCHEMA.items())
    known = ["input_usd_per_1m", "output_usd_per_1m", "output_speed_tps", "openness"]
    return frame.filter(pl.any_horizontal(pl.col(c).is_not_null() for c in known))


def _per_distinct(
    frame: pl.DataFrame, columns: list[str], name: str, rule: Callable[..., object]
) -> pl.DataFrame:
    """`frame` with column `name`: `rule` of each row's `columns`, run once per distinct row."""
    distinct = frame.select(columns).unique()
    results = [rule(*values) for values in distinct.iter_rows()]
    lookup = distinct.with_columns(pl.Series(name, results, strict=False))
    return frame.join(lookup, on=columns, how="left", nulls_equal=True, maintain_order="left")


def refresh_market(
    conn: duckdb.DuckDBPyConnection, licences: LicenceTable
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Recompute `market` and `provider_prices` from the live tables and store both."""
    models, hosts = market_inputs(conn)
    market, providers = market_rows(models, hosts, licences), provider_prices(hosts)
    replace_tables(conn, {"market": market, "provider_prices": providers})
    return market, providers


MARKET_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    "model_id": pl.Utf8,
    "model_name": pl.Utf8,
    "input_usd_per_1m": MONEY,
    "output_usd_per_1m": MONEY,
    "blended_price_usd_per_1m": MONEY,
    "price_flag": pl.Utf8,
    "output_speed_tps": pl.Float64,
    "latency_ttft_s": pl.Float64,
    "providers_tracked": pl.Int32,
    "open_weights": pl.Boolean,
    "licence": pl.Utf8,
    "licence_class": pl.Utf8,
    "has_repository": pl.Boolean,
    "openness": pl.Int32,
    "price_source_run_id": pl.Utf8,
    "telemetry_source_run_id": pl.Utf8,
}
