"""Dated model rates by exact API id: from every accepted OpenRouter ingestion and from the
hand-edited `setups/pricing.toml` (no Dagster here).

An ingestion's rates take effect on the day it was taken (the accepted source run's finish
date) and are kept for good: the live OpenRouter table holds only the last run, so each
accepted run's rates are appended to `model_rates` once, keyed by its run id. The file's rows
are reloaded on every refresh, and on the same day a file row wins over an ingestion row
(a person's correction beats the listing). `costing.rate_in_effect` then picks the row in
effect on a run's date.

OpenRouter's `overrides` entry with `min_prompt_tokens` is its long-context tier: it applies
from that many prompt tokens, i.e. above `min_prompt_tokens − 1` (`LongContextTier` applies
strictly above its threshold).
"""

from __future__ import annotations

import json
import tomllib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.core import settings
from bench_pipeline.core.money import per_token_to_per_million
from bench_pipeline.core.warehouse import fetch_frame, transaction
from bench_pipeline.core.writer import insert_rows, rows_to_arrow, write_frame
from bench_pipeline.runs.costing import LongContextTier, Rates

PRICING_FILE_ORIGIN = "pricing.toml"
RATE_FIELDS = ("input", "output", "cached_input", "cache_write")


def default_pricing_file() -> Path:
    return settings.setups_dir() / "pricing.toml"


class PricingFileError(ValueError):
    """The pricing file is unreadable or a row is wrong; the message names file, row, field."""


@dataclass(frozen=True)
class DatedRates:
    """One model's rates from one origin."""

    api_id: str
    rates: Rates
    origin: str
    taken_at: datetime | None = None
    """When an ingestion was taken (orders two on one day); None for the file's rows."""


def _rate(value: Any, where: str) -> Decimal | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise PricingFileError(f'{where}: write the rate as a decimal string such as "2.5"')
    try:
        rate = Decimal(value)
    except InvalidOperation:
        raise PricingFileError(f"{where}: {value!r} is not a decimal") from None
    if not rate.is_finite() or rate < 0:
        raise PricingFileError(f"{where}: {value!r} is not a finite, non-negative rate")
    return rate


def _tier(value: Any, where: str) -> LongContextTier | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise PricingFileError(f"{where}: long_context must be a table")
    unknown = set(value) - {"threshold_tokens", *RATE_FIELDS}
    if unknown:
        raise PricingFileError(f"{where}.{sorted(unknown)[0]}: unknown field")
    threshold = value.get("threshold_tokens")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise PricingFileError(f"{where}.threshold_tokens: a non-negative integer is required")
    rates = {name: _rate(value.get(name), f"{where}.{name}") for name in RATE_FIELDS}
    return LongContextTier(threshold_tokens=threshold, **rates)


def load_pricing_file(path: Path | None = None) -> list[DatedRates]:
    """The rows of the hand-edited pricing file.

    Raises:
        PricingFileError: Unreadable TOML, or a row with a missing, unknown or bad field;
            the message names the file, the row number (from 1) and the field.
    """
    path = path or default_pricing_file()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except tomllib.TOMLDecodeError as error:
        raise PricingFileError(f"{path}: not valid TOML: {error}") from None
    rows: list[DatedRates] = []
    seen: set[tuple[str, date]] = set()
    for number, row in enumerate(document.get("rate", []), start=1):
        where = f"{path}: rate {number}"
        unknown = set(row) - {"api_id", "effective_date", "long_context", "local", *RATE_FIELDS}
        if unknown:
            raise PricingFileError(f"{where}.{sorted(unknown)[0]}: unknown field")
        api_id, day = row.get("api_id"), row.get("effective_date")
        if not isinstance(api_id, str) or not api_id:
            raise PricingFileError(f"{where}.api_id: the exact API model id is required")
        if not isinstance(day, date) or hasattr(day, "hour"):
            raise PricingFileError(f"{where}.effective_date: a date (YYYY-MM-DD) is required")
        if (api_id, day) in seen:
            raise PricingFileError(f"{where}: a second row for {api_id} on {day}")
        seen.add((api_id, day))
        rates = Rates(
            effective_date=day,
            long_context=_tier(row.get("long_context"), f"{where}.long_context"),
            local=row.get("local") is True,
            **{name: _rate(row.get(name), f"{where}.{name}") for name in RATE_FIELDS},
        )
        rows.append(DatedRates(api_id, rates, PRICING_FILE_ORIGIN))
    return rows


def _openrouter_tier(overrides: str | None) -> LongContextTier | None:
    """The first override with a prompt-size threshold, as a long-context tier."""
    if not overrides:
        return None
    for entry in json.loads(overrides):
        minimum = entry.get("min_prompt_tokens") if isinstance(entry, dict) else None
        if isinstance(minimum, int) and not isinstance(minimum, bool) and minimum > 0:
            return LongContextTier(
                threshold_tokens=minimum - 1,
                input=per_token_to_per_million(entry.get("prompt")),
                output=per_token_to_per_million(entry.get("completion")),
                cached_input=per_token_to_per_million(entry.get("input_cache_read")),
                cache_write=per_token_to_per_million(entry.get("input_cache_write")),
            )
    return None


_OPENROUTER_SQL = """
SELECT o.model_id, CAST(r.finished_at AS DATE) AS effective_date, r.run_id,
       r.finished_at AS taken_at, o.prompt_usd_per_m, o.completion_usd_per_m,
       o.input_cache_read_usd_per_m, o.input_cache_write_usd_per_m,
       o.variable_pricing, o.pricing_overrides
FROM openrouter_models o
JOIN source_runs r ON r.run_id = o.source_run_id AND r.status = 'accepted'
WHERE NOT EXISTS (SELECT 1 FROM model_rates m WHERE m.origin = 'openrouter:' || r.run_id)
"""

_RATE_COLUMNS = (
    "input_usd_per_1m",
    "output_usd_per_1m",
    "cached_input_usd_per_1m",
    "cache_write_usd_per_1m",
)
_OWN_RATES = (
    "prompt_usd_per_m",
    "completion_usd_per_m",
    "input_cache_read_usd_per_m",
    "input_cache_write_usd_per_m",
)
"""The listing's rates, in the order of `Rates` and of `_RATE_COLUMNS`."""
_TIER_COLUMNS = (
    "long_context_threshold",
    "long_input_usd_per_1m",
    "long_output_usd_per_1m",
    "long_cached_input_usd_per_1m",
    "long_cache_write_usd_per_1m",
)


def _row(item: DatedRates, now: datetime) -> list[Any]:
    r, tier = item.rates, item.rates.long_context
    return [
        item.api_id,
        r.effective_date,
        item.origin,
        item.taken_at or now,
        r.input,
        r.output,
        r.cached_input,
        r.cache_write,
        *_tier_values(tier),
        r.local,
    ]


def _tier_values(tier: LongContextTier | None) -> list[Any]:
    """A tier's five `model_rates` values (threshold, then its rates); None for no tier."""
    if tier is None:
        return [None] * 5
    return [tier.threshold_tokens, tier.input, tier.output, tier.cached_input, tier.cache_write]


def _listed_rates(conn: duckdb.DuckDBPyConnection, now: datetime) -> pl.DataFrame:
    """The live OpenRouter run's `model_rates` rows (none once its run is stored), as a frame.

    Column-wise, a listing's long-context tier parsed once per distinct `pricing_overrides`
    text; every row's date and rates still go through `Rates`, the one home of what a rate
    may be, which raises its own error for a row it refuses.
    """
    listed = fetch_frame(conn, _OPENROUTER_SQL)
    fixed = ~pl.col("variable_pricing").fill_null(False)
    listed = listed.with_columns(pl.when(fixed).then(pl.col(c)).alias(c) for c in _OWN_RATES[:2])
    for day, *rates in listed.select("effective_date", *_OWN_RATES).iter_rows():
        Rates(day, *rates)
    overrides = pl.concat([pl.Series([None], dtype=pl.Utf8), listed["pricing_overrides"]])
    overrides = overrides.unique(maintain_order=True)
    tiers = [_tier_values(_openrouter_tier(text)) for text in overrides]
    lookup = pl.DataFrame(pl.from_arrow(rows_to_arrow(conn, "model_rates", _TIER_COLUMNS, tiers)))
    return listed.join(
        lookup.with_columns(overrides.alias("pricing_overrides")),
        on="pricing_overrides",
        how="left",
        nulls_equal=True,
        maintain_order="left",
    ).select(
        pl.col("model_id").alias("api_id"),
        "effective_date",
        pl.concat_str(pl.lit("openrouter:"), "run_id").alias("origin"),
        pl.col("taken_at").fill_null(now),
        *(pl.col(c).alias(name) for c, name in zip(_OWN_RATES, _RATE_COLUMNS, strict=True)),
        *_TIER_COLUMNS,
        pl.lit(False).alias("local"),
    )


def refresh_model_rates(conn: duckdb.DuckDBPyConnection, pricing_file: Path | None = None) -> int:
    """Append the rates of the live OpenRouter run (once per run) and reload the pricing
    file's rows, in one transaction; return how many rows `model_rates` holds now.

    Raises:
        PricingFileError: The pricing file is wrong (nothing is changed).
    """
    file_rows = load_pricing_file(pricing_file)
    now = datetime.now(UTC).replace(tzinfo=None)
    listed = _listed_rates(conn, now)
    with transaction(conn):
        conn.execute("DELETE FROM model_rates WHERE origin = ?", [PRICING_FILE_ORIGIN])
        write_frame(conn, "model_rates", listed)
        insert_rows(conn, "model_rates", None, [_row(item, now) for item in file_rows])
    return conn.execute("SELECT count(*) FROM model_rates").fetchall()[0][0]


def rates_by_api_id(
    conn: duckdb.DuckDBPyConnection, api_ids: Iterable[str] | None = None
) -> dict[str, list[Rates]]:
    """Every model's dated rates, one row per effective date (the file's row on a tie; of
    two ingestions on one day, the later run's); only those of `api_ids` when given (a
    batch prices a few setups, and the table lists every listed model: 20,000 at 50x)."""
    wanted = None if api_ids is None else sorted(set(api_ids))
    where = "" if wanted is None else "WHERE list_contains(?, api_id)"
    rows = conn.execute(
        f"""
        SELECT * EXCLUDE (rank) FROM (
            SELECT *, row_number() OVER (
                PARTITION BY api_id, effective_date
                ORDER BY origin = 'pricing.toml' DESC, taken_at DESC) AS rank
            FROM model_rates {where})
        WHERE rank = 1
        ORDER BY api_id, effective_date
        """,
        [] if wanted is None else [wanted],
    ).fetchall()
    table: dict[str, list[Rates]] = defaultdict(list)
    for (
        api_id,
        day,
        _origin,
        _taken,
        inp,
        out,
        cached,
        write,
        threshold,
        l_in,
        l_out,
        l_cached,
        l_write,
        local,
    ) in rows:
        tier = None
        if threshold is not None:
            tier = LongContextTier(int(threshold), l_in, l_out, l_cached, l_write)
        table[api_id].append(Rates(day, inp, out, cached, write, tier, bool(local)))
    return dict(table)
