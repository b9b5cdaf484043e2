"""Market data per model: canonical price, per-host prices, speed, latency and openness.

One row per canonical model. Its price is its own OpenRouter listing's, else the lab's own
models.dev listing's; hosts and resellers (OpenRouter's endpoints and models.dev's host
listings) are rows of `provider_prices`, never models of their own. A $0 trial, a per-clip
price or a variable price is flagged (`rate_flag`) and never a rate to rank by. Openness is
weighed from every source's input, the lab's own first (`openness_evidence`).

`market_inputs` gathers what the live tables say about each registry model; the functions
after it turn that into published figures with the rules of METHODOLOGY section 2. A missing
figure stays missing (None), never zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

import duckdb
import polars as pl
from polars.datatypes import DataTypeClass

from bench_pipeline.core.warehouse import fetch_frame, replace_tables
from bench_pipeline.indices.openness import (
    INPUT_PRECEDENCE,
    LicenceTable,
    OpennessDecision,
    OpennessInput,
    decide_openness,
)
from bench_pipeline.indices.pricing import (
    PER_UNIT,
    blended_prices,
    prices_disagree,
    prices_disagree_series,
    rate_flag,
)

MODEL_INPUTS_SQL = """
WITH openrouter_entry AS (   -- the model's own OpenRouter listing carries the canonical rate
    SELECT a.model_id, o.prompt_usd_per_m, o.completion_usd_per_m, o.variable_pricing,
           o.source_run_id, 'openrouter' AS price_provider,
           o.output_modalities, o.tokenizer
    FROM model_aliases a JOIN openrouter_models o ON o.model_id = a.source_key
    WHERE a.source = 'openrouter_models' AND a.source_key = a.model_id
),
lab_entry AS (         -- else the lab's own models.dev listing (never a host's), first by id
    SELECT a.model_id, d.input_usd_per_m AS prompt_usd_per_m,
           d.output_usd_per_m AS completion_usd_per_m, false AS variable_pricing,
           d.source_run_id, d.provider_id AS price_provider,
           NULL AS output_modalities, NULL AS tokenizer
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
)
SELECT m.model_id, m.name AS model_name, o.prompt_usd_per_m, o.completion_usd_per_m,
       o.variable_pricing, o.source_run_id AS price_source_run_id, o.price_provider,
       o.output_modalities, o.tokenizer, c.md_input, c.md_output
FROM models m
LEFT JOIN own_entry o USING (model_id)
LEFT JOIN crosscheck c USING (model_id)
ORDER BY m.model_id
"""

OPENNESS_INPUTS_SQL = """
-- Everything a source says about a model's openness, one row per record (hosts' listings
-- grouped by what they say). `decide_openness` weighs them; the order here breaks ties
-- within one kind of input: "open" first, so among hosts alone any host serving published
-- weights says they are published.
SELECT a.model_id, 'lab_listing' AS input, 'models_dev' AS source, a.source_key,
       d.open_weights, NULL AS licence, d.source_run_id
FROM model_aliases a JOIN modelsdev_models d
  ON a.source = 'models_dev' AND a.source_key = d.provider_id || '/' || d.model_id
WHERE a.host IS NULL AND d.open_weights IS NOT NULL
UNION ALL
SELECT a.model_id, 'weights_repository', 'openrouter_models', trim(o.hugging_face_id),
       true, NULL, any_value(o.source_run_id)
FROM model_aliases a JOIN openrouter_models o
  ON a.source = 'openrouter_models' AND a.source_key = o.model_id
WHERE nullif(trim(o.hugging_face_id), '') IS NOT NULL
GROUP BY ALL
UNION ALL
SELECT a.model_id, 'arena_licence', 'arena', a.source_key, NULL, l.licence,
       any_value(l.source_run_id)
FROM model_aliases a JOIN (
    SELECT model_key, licence, source_run_id FROM arena_ratings WHERE licence IS NOT NULL
    UNION ALL
    SELECT model_key, licence, source_run_id FROM arena_models WHERE licence IS NOT NULL
) l ON a.source = 'arena' AND l.model_key = a.source_key
GROUP BY ALL
UNION ALL
SELECT a.model_id, 'epoch_accessibility', 'epoch', a.source_key, NULL, e.accessibility,
       any_value(e.source_run_id)
FROM model_aliases a JOIN epoch_models e
  ON a.source = 'epoch' AND e.model_version = a.source_key
WHERE e.accessibility IS NOT NULL
GROUP BY ALL
UNION ALL
SELECT a.model_id, 'host_listings', 'models_dev',
       string_agg(a.source_key, ', ' ORDER BY a.source_key), d.open_weights, NULL,
       min(d.source_run_id)
FROM model_aliases a JOIN modelsdev_models d
  ON a.source = 'models_dev' AND a.source_key = d.provider_id || '/' || d.model_id
WHERE a.host IS NOT NULL AND d.open_weights IS NOT NULL
GROUP BY a.model_id, d.open_weights
ORDER BY model_id, open_weights DESC NULLS LAST, source_key, licence
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


def market_inputs(
    conn: duckdb.DuckDBPyConnection,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(one row per registry model, one row per model and host, the openness inputs) from
    the live tables."""
    return (
        fetch_frame(conn, MODEL_INPUTS_SQL),
        fetch_frame(conn, ENDPOINTS_SQL),
        fetch_frame(conn, OPENNESS_INPUTS_SQL),
    )


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


def provider_prices(
    endpoints: pl.DataFrame,
    trial_providers: Mapping[str, str] | None = None,
    per_unit_models: frozenset[str] = frozenset(),
) -> pl.DataFrame:
    """Each host's rate and telemetry, with its own blended price. A host's $0 listing is
    flagged (`rate_flag`) and has no blended price, so no ordering ranks it cheapest, when
    the host is a trial provider, or when the model itself is priced per clip or request
    (`per_unit_models`: its own listing's flag, since a host's listing does not say)."""
    trials = trial_providers or {}
    provider = (
        pl.when(pl.col("tag").str.starts_with("models.dev:"))
        .then(pl.col("tag").str.strip_prefix("models.dev:").str.split("/").list.first())
        .alias("listing_provider")
    )
    frame = endpoints.with_columns(provider)
    flags = [
        rate_flag(
            prompt,
            completion,
            variable=None,
            provider=listed,
            output_modalities=None,
            tokenizer=None,
            trial_providers=trials,
            sold_per_unit=model_id in per_unit_models,
        )
        for model_id, prompt, completion, listed in frame.select(
            "model_id", *_RATES, "listing_provider"
        ).iter_rows()
    ]
    blended = blended_prices(frame[_RATES[0]], frame[_RATES[1]], MONEY)
    flagged = pl.Series("rate_flag", flags, dtype=pl.Utf8)
    return (
        frame.drop("listing_provider")
        .rename(
            {"prompt_usd_per_m": "input_usd_per_1m", "completion_usd_per_m": "output_usd_per_1m"}
        )
        .with_columns(
            pl.when(flagged.is_null()).then(blended).alias("blended_price_usd_per_1m"),
            flagged,
        )
    )


def openness(evidence: pl.DataFrame, licences: LicenceTable) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(each model's openness decision, every input with its role) from `OPENNESS_INPUTS_SQL`
    rows, weighed by `decide_openness`: once per distinct list of what the inputs say (most
    models share one), then given back each model's own records."""
    decisions, weighed = [], []
    by_model: dict[str, list[dict]] = {}
    for row in evidence.iter_rows(named=True):
        by_model.setdefault(row["model_id"], []).append(row)
    decided_for: dict[tuple, OpennessDecision] = {}
    for model_id, rows in by_model.items():
        inputs = []
        for row in rows:
            licence = row["licence"]
            if row["input"] == "weights_repository":
                named = licences.repository_licence(row["source_key"])
                licence = named.licence if named else None
            inputs.append(OpennessInput(row["input"], "", row["open_weights"], licence))
        said = tuple(inputs)
        if said not in decided_for:
            decided_for[said] = decide_openness(inputs, licences)
        decision = decided_for[said]
        # the order decide_openness weighed them in: by precedence, ties as given
        order = sorted(range(len(rows)), key=lambda n: INPUT_PRECEDENCE.index(rows[n]["input"]))
        decided = None if decision.decided_by is None else rows[order[decision.decided_by]]
        decisions.append(
            {
                "model_id": model_id,
                "open_weights": decision.open_weights,
                "licence": decision.licence,
                "licence_class": decision.licence_class,
                "has_repository": decision.has_repository,
                "openness": decision.openness,
                "openness_input": decided["input"] if decided else None,
                "openness_source_key": decided["source_key"] if decided else None,
            }
        )
        for position, (n, item, licence_class, role) in enumerate(
            zip(order, decision.inputs, decision.classes, decision.roles, strict=True), start=1
        ):
            row = rows[n]
            weighed.append(
                {
                    "model_id": model_id,
                    "precedence": INPUT_PRECEDENCE.index(item.input) + 1,
                    "position": position,
                    "input": item.input,
                    "source": row["source"],
                    "source_key": row["source_key"],
                    "open_weights": item.open_weights,
                    "licence": item.licence,
                    "licence_class": licence_class,
                    "role": role,
                    "source_run_id": row["source_run_id"],
                }
            )
    return (
        pl.DataFrame(decisions, schema=DECISION_SCHEMA),
        pl.DataFrame(weighed, schema=EVIDENCE_SCHEMA),
    )


def market_rows(
    models: pl.DataFrame,
    hosts: pl.DataFrame,
    licences: LicenceTable,
    evidence: pl.DataFrame | None = None,
    trial_providers: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """One row per model with any market figure: price, speed, latency or openness, or a
    rate flag (`rate_flag`: a $0 trial, a per-clip price, a variable price; such a row has
    no rates, so no ordering ranks it cheapest).

    Column-wise: prices and their cross-check are compared as columns; the rules that take
    few distinct inputs (`rate_flag`, `flag_text`) run once per distinct input and are
    joined back, and openness is `openness`'s decision, so each rule keeps its one home.
    """
    said = evidence if evidence is not None else pl.DataFrame(schema=INPUT_SCHEMA)
    decisions, _ = openness(said, licences)
    return _market_frame(models, hosts, decisions, trial_providers or {})


def _market_frame(
    models: pl.DataFrame,
    hosts: pl.DataFrame,
    decisions: pl.DataFrame,
    trials: Mapping[str, str],
) -> pl.DataFrame:
    """`market_rows` from each model's openness decision (`openness`)."""
    telemetry = hosts.group_by("model_id").agg(
        pl.col("output_speed_tps").median(),
        pl.col("latency_ttft_s").median(),
        pl.col("provider_name").n_unique().alias("providers_tracked"),
        pl.col("source_run_id").first().alias("telemetry_source_run_id"),
    )
    joined = models.join(telemetry, on="model_id", how="left")
    joined = _per_distinct(
        joined,
        [*_RATES, "variable_pricing", "price_provider", "output_modalities", "tokenizer"],
        "rate_flag",
        lambda p, c, v, provider, outputs, tokenizer: rate_flag(
            p,
            c,
            variable=v,
            provider=provider,
            output_modalities=outputs,
            tokenizer=tokenizer,
            trial_providers=trials,
        ),
    )
    fixed = pl.col("rate_flag").is_null()
    joined = joined.with_columns(
        *(pl.when(fixed).then(pl.col(c)).alias(c) for c in _RATES),
        pl.col("providers_tracked").fill_null(0),
    )
    blended = blended_prices(joined[_RATES[0]], joined[_RATES[1]], MONEY)
    flagged = prices_disagree_series(joined[_RATES[0]], joined["md_input"]) | (
        prices_disagree_series(joined[_RATES[1]], joined["md_output"])
    )
    joined = joined.with_columns(blended.alias("blended"), flagged.alias("flagged"))
    joined = joined.join(decisions, on="model_id", how="left").with_columns(
        pl.col("has_repository").fill_null(False)
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
    known = ["input_usd_per_1m", "output_usd_per_1m", "output_speed_tps", "openness", "rate_flag"]
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
    conn: duckdb.DuckDBPyConnection,
    licences: LicenceTable,
    trial_providers: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Recompute `market`, `provider_prices` and `openness_evidence` from the live tables and
    store all three."""
    models, hosts, evidence = market_inputs(conn)
    decisions, weighed = openness(evidence, licences)
    market = _market_frame(models, hosts, decisions, trial_providers or {})
    per_unit = frozenset(market.filter(pl.col("rate_flag") == PER_UNIT)["model_id"])
    providers = provider_prices(hosts, trial_providers, per_unit)
    replace_tables(
        conn, {"market": market, "provider_prices": providers, "openness_evidence": weighed}
    )
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
    "openness_input": pl.Utf8,
    "openness_source_key": pl.Utf8,
    "rate_flag": pl.Utf8,
    "price_source_run_id": pl.Utf8,
    "telemetry_source_run_id": pl.Utf8,
}

INPUT_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    "model_id": pl.Utf8,
    "input": pl.Utf8,
    "source": pl.Utf8,
    "source_key": pl.Utf8,
    "open_weights": pl.Boolean,
    "licence": pl.Utf8,
    "source_run_id": pl.Utf8,
}
"""The rows of `OPENNESS_INPUTS_SQL`."""

DECISION_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    "model_id": pl.Utf8,
    "open_weights": pl.Boolean,
    "licence": pl.Utf8,
    "licence_class": pl.Utf8,
    "has_repository": pl.Boolean,
    "openness": pl.Int32,
    "openness_input": pl.Utf8,
    "openness_source_key": pl.Utf8,
}

EVIDENCE_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    "model_id": pl.Utf8,
    "precedence": pl.Int32,
    "position": pl.Int32,
    "input": pl.Utf8,
    "source": pl.Utf8,
    "source_key": pl.Utf8,
    "open_weights": pl.Boolean,
    "licence": pl.Utf8,
    "licence_class": pl.Utf8,
    "role": pl.Utf8,
    "source_run_id": pl.Utf8,
}
"""`openness_evidence`: every input to every model's openness and what it did."""
