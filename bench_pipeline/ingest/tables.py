"""The shape of every live source table: typed columns, the record key, and value checks.

Staged records hold values as the source sent them; validation casts them to these types and
then runs the pandera checks, so a bad value is reported against its own record and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandera.polars as pa
import polars as pl
from polars.datatypes import DataTypeClass

MONEY = pl.Decimal(24, 12)
MAX_USD_PER_M = 10_000
"""The dearest price per 1M tokens taken as real. The dearest rates in the recorded snapshots
are a few hundred dollars per 1M output tokens; anything above this bound is a unit error or
a placeholder ($999,999,000,000 was once published) and is quarantined."""


MAX_TEXT = 4_096
"""The longest text any live column takes, in characters. The longest in the recorded
snapshots is under 500 (a pricing override list); a megabyte-long name or id is an attack on
every page and download that shows it, and its record is quarantined."""
TEXT_LENGTH_CHECK = f"length at most {MAX_TEXT:,} characters"


@dataclass(frozen=True)
class TableSpec:
    """One live table: column types in order, the columns that identify a record, checks."""

    name: str
    columns: dict[str, pl.DataType | DataTypeClass]
    key: tuple[str, ...]
    checks: dict[str, list[pa.Check]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()
    """Columns holding a date (or a `YYYY-MM-DD…` text) that cannot be after the run's day."""
    within: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Column → (low, high) columns of its own interval: a value outside the interval the
    same record gives for it (an Arena rating above its upper bound) says two things at once,
    and its record is quarantined. A missing bound is not checked."""
    scoped_by: str | None = None
    """A column naming the source a row came from, for a table several sources share (the
    per-item results kind): a source's run replaces only its own rows."""

    def schema(self) -> pa.DataFrameSchema:
        """The pandera schema run on the typed frame (types are already enforced by casting)."""
        return pa.DataFrameSchema(
            {
                name: pa.Column(
                    dtype,
                    checks=[*self.checks.get(name, []), *_bounded_text(dtype)],
                    nullable=name not in self.key and name not in self.required,
                )
                for name, dtype in self.columns.items()
            },
            strict=False,
        )

    def describe(self, column: str) -> str:
        """What the table's rules say of `column`, for the catalogue: its type, whether it is
        part of the record key or required, and every check its values pass."""
        dtype = self.columns[column]
        parts = [str(dtype)]
        if column in self.key:
            parts.append(f"record key ({', '.join(self.key)})")
        elif column in self.required:
            parts.append("required")
        else:
            parts.append("may be missing")
        if column in self.dates:
            parts.append("a date no later than the run's day")
        if column in self.within:
            low, high = self.within[column]
            parts.append(f"within its own {low}..{high}")
        parts.extend(str(c.error or c.name) for c in self.checks.get(column, []))
        parts.extend(str(c.error or c.name) for c in _bounded_text(dtype))
        return "; ".join(parts)


def _bounded_text(dtype: pl.DataType | DataTypeClass) -> list[pa.Check]:
    """Every text column is at most `MAX_TEXT` characters long."""
    if dtype != pl.Utf8:
        return []
    return [pa.Check.str_length(max_value=MAX_TEXT, error=TEXT_LENGTH_CHECK)]


def _non_negative() -> list[pa.Check]:
    return [pa.Check.ge(0)]


def _price() -> list[pa.Check]:
    """Non-negative (OpenRouter's `-1`, variable pricing, is staged as no price) and bounded."""
    return [pa.Check.ge(0), pa.Check.le(MAX_USD_PER_M)]


def _percent() -> list[pa.Check]:
    return [pa.Check.in_range(0, 100)]


OPENROUTER_MODELS = TableSpec(
    name="openrouter_models",
    columns={
        "model_id": pl.Utf8,
        "canonical_slug": pl.Utf8,
        "hugging_face_id": pl.Utf8,
        "name": pl.Utf8,
        "created_at": pl.Datetime("us"),
        "context_length": pl.Int64,
        "modality": pl.Utf8,
        "input_modalities": pl.Utf8,
        "output_modalities": pl.Utf8,
        "tokenizer": pl.Utf8,
        "prompt_usd_per_m": MONEY,
        "completion_usd_per_m": MONEY,
        "input_cache_read_usd_per_m": MONEY,
        "input_cache_write_usd_per_m": MONEY,
        "variable_pricing": pl.Boolean,
        "pricing_overrides": pl.Utf8,
        "supported_efforts": pl.Utf8,
        "alias_target": pl.Utf8,
        "knowledge_cutoff": pl.Utf8,
        "expiration_date": pl.Utf8,
    },
    key=("model_id",),
    required=("name", "variable_pricing"),
    dates=("created_at",),
    checks={
        "model_id": [pa.Check.str_matches(r"^~?[A-Za-z0-9._-]+/[^\s/]+$")],
        "context_length": _non_negative(),
        "prompt_usd_per_m": _price(),
        "completion_usd_per_m": _price(),
        "input_cache_read_usd_per_m": _price(),
        "input_cache_write_usd_per_m": _price(),
    },
)

OPENROUTER_ENDPOINTS = TableSpec(
    name="openrouter_endpoints",
    columns={
        "model_id": pl.Utf8,
        "tag": pl.Utf8,
        "provider_name": pl.Utf8,
        "endpoint_name": pl.Utf8,
        "context_length": pl.Int64,
        "max_completion_tokens": pl.Int64,
        "quantization": pl.Utf8,
        "prompt_usd_per_m": MONEY,
        "completion_usd_per_m": MONEY,
        "input_cache_read_usd_per_m": MONEY,
        "discount": pl.Float64,
        "status": pl.Int32,
        "uptime_last_30m": pl.Float64,
        "latency_p50_ms": pl.Float64,
        "throughput_p50_tps": pl.Float64,
    },
    key=("model_id", "tag"),
    required=("provider_name",),
    checks={
        "prompt_usd_per_m": _price(),
        "completion_usd_per_m": _price(),
        "input_cache_read_usd_per_m": _price(),
        "discount": [pa.Check.in_range(0, 1)],
        "uptime_last_30m": _percent(),
        "latency_p50_ms": _non_negative(),
        "throughput_p50_tps": _non_negative(),
    },
)

MODELSDEV_MODELS = TableSpec(
    name="modelsdev_models",
    columns={
        "provider_id": pl.Utf8,
        "model_id": pl.Utf8,
        "provider_name": pl.Utf8,
        "name": pl.Utf8,
        "family": pl.Utf8,
        "release_date": pl.Utf8,
        "open_weights": pl.Boolean,
        "reasoning": pl.Boolean,
        "tool_call": pl.Boolean,
        "context_limit": pl.Int64,
        "output_limit": pl.Int64,
        "input_usd_per_m": MONEY,
        "output_usd_per_m": MONEY,
        "cache_read_usd_per_m": MONEY,
        "cache_write_usd_per_m": MONEY,
        "status": pl.Utf8,
    },
    key=("provider_id", "model_id"),
    required=("name",),
    dates=("release_date",),
    checks={
        "release_date": [pa.Check.str_matches(r"^\d{4}-\d{2}(-\d{2})?$")],
        "context_limit": _non_negative(),
        "input_usd_per_m": _price(),
        "output_usd_per_m": _price(),
        "cache_read_usd_per_m": _price(),
        "cache_write_usd_per_m": _price(),
    },
)

ARENA_RATINGS = TableSpec(
    name="arena_ratings",
    columns={
        "leaderboard": pl.Utf8,
        "category": pl.Utf8,
        "model_key": pl.Utf8,
        "rating": pl.Float64,
        "rating_low": pl.Float64,
        "rating_high": pl.Float64,
        "votes": pl.Int64,
        "rank": pl.Int32,
        "rank_best": pl.Int32,
        "rank_worst": pl.Int32,
        "preliminary": pl.Boolean,
        "organization": pl.Utf8,
        "licence": pl.Utf8,
        "published_on": pl.Date,
        "source_file": pl.Utf8,
    },
    key=("leaderboard", "category", "model_key"),
    required=("rating", "source_file"),
    dates=("published_on",),
    within={"rating": ("rating_low", "rating_high")},
    checks={
        "rating": [pa.Check.in_range(0, 5000)],
        "votes": _non_negative(),
        "rank": [pa.Check.ge(1)],
    },
)

ARENA_MODELS = TableSpec(
    name="arena_models",
    columns={
        "model_key": pl.Utf8,
        "name": pl.Utf8,
        "organization": pl.Utf8,
        "licence": pl.Utf8,
        "input_usd_per_m": MONEY,
        "output_usd_per_m": MONEY,
        "hidden": pl.Boolean,
    },
    key=("model_key",),
    checks={"input_usd_per_m": _price(), "output_usd_per_m": _price()},
)

EVALUATION_ROWS = TableSpec(
    name="evaluation_rows",
    columns={
        "evaluation_id": pl.Utf8,
        "row_key": pl.Utf8,
        "model_version": pl.Utf8,
        "agent": pl.Utf8,
        "organization": pl.Utf8,
        "release_date": pl.Utf8,
        "run_date": pl.Utf8,
        "score": pl.Float64,
        "stderr": pl.Float64,
        "log_url": pl.Utf8,
        "source_file": pl.Utf8,
    },
    key=("evaluation_id", "row_key"),
    required=("model_version", "score", "source_file"),
    dates=("release_date", "run_date"),
    checks={
        "score": _percent(),
        "stderr": _non_negative(),
        "log_url": [pa.Check.str_matches(r"^https://[^\s\"'<>]+$")],
    },
)

EPOCH_MODELS = TableSpec(
    name="epoch_models",
    columns={
        "model_version": pl.Utf8,
        "display_name": pl.Utf8,
        "model_name": pl.Utf8,
        "organization": pl.Utf8,
        "accessibility": pl.Utf8,
        "release_date": pl.Utf8,
        "eci_score": pl.Float64,
    },
    key=("model_version",),
    dates=("release_date",),
)


# SWE-bench publishes costs with up to 20 decimal places; 38 digits keep them and their sums.
COST = pl.Decimal(38, 20)

SWEBENCH_ENTRIES = TableSpec(
    name="swebench_entries",
    columns={
        "leaderboard": pl.Utf8,
        "folder": pl.Utf8,
        "entry": pl.Utf8,
        "date": pl.Date,
        "resolved_percent": pl.Float64,
        "cost_usd": COST,
        "instance_cost_usd": COST,
        "instance_calls": pl.Float64,
        "checked": pl.Boolean,
        "checked_as_sent": pl.Utf8,
        "os_model": pl.Boolean,
        "os_system": pl.Boolean,
        "tags": pl.Utf8,
        "model_tags": pl.Utf8,
        "site": pl.Utf8,
        "logs": pl.Utf8,
        "per_item_results": pl.Int64,
        "source_file": pl.Utf8,
    },
    key=("leaderboard", "folder"),
    required=("entry", "resolved_percent", "source_file"),
    checks={
        "resolved_percent": _percent(),
        "cost_usd": _non_negative(),
        "instance_cost_usd": _non_negative(),
        "instance_calls": _non_negative(),
        "per_item_results": _non_negative(),
        # `logs` is kept as stated and never checked here: an address that is not a link
        # (one Verified entry states a relative path) must not cost its entry a rank; the
        # site links only https and s3:// addresses (`site/evidence.py`)
    },
)

SWEBENCH_ITEM_RESULTS = TableSpec(
    name="swebench_item_results",
    columns={
        "leaderboard": pl.Utf8,
        "folder": pl.Utf8,
        "entry": pl.Utf8,
        "instance_id": pl.Utf8,
        "resolved": pl.Boolean,
        "cost_usd": COST,
        "api_calls": pl.Int64,
    },
    key=("leaderboard", "folder", "instance_id"),
    required=("entry", "resolved"),
    checks={"cost_usd": _non_negative(), "api_calls": _non_negative()},
)

ITEM_MATRIX_ENTRIES = TableSpec(
    name="item_matrix_entries",
    columns={
        "source": pl.Utf8,
        "board": pl.Utf8,
        "system": pl.Utf8,
        "source_file": pl.Utf8,
        "task": pl.Utf8,
        "stated_metric": pl.Utf8,
        "stated_score": pl.Utf8,  # the publisher's digits, as written
        "date": pl.Utf8,
    },
    key=("source", "system", "source_file"),
    required=("board",),
    dates=("date",),
    scoped_by="source",
)
"""Per-item results sources: each system a file states a headline for (an `.eval` log's)."""

ITEM_MATRIX_RESULTS = TableSpec(
    name="item_matrix_results",
    columns={
        "source": pl.Utf8,
        "board": pl.Utf8,
        "system": pl.Utf8,
        "item": pl.Utf8,
        "score": pl.Float64,
        "item_group": pl.Utf8,
        "cost_usd": COST,
        "date": pl.Utf8,
        "source_file": pl.Utf8,
        "source_record": pl.Utf8,
    },
    key=("source", "system", "item"),
    required=("board", "score", "source_file"),
    checks={"cost_usd": _non_negative()},
    dates=("date",),
    scoped_by="source",
)
"""Per-item results sources: one row per system and item (long, wide or `.eval` payloads)."""

# Every live source table: the one list of them (tests checksum exactly these).
TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        OPENROUTER_MODELS,
        OPENROUTER_ENDPOINTS,
        MODELSDEV_MODELS,
        ARENA_RATINGS,
        ARENA_MODELS,
        EVALUATION_ROWS,
        EPOCH_MODELS,
        SWEBENCH_ENTRIES,
        SWEBENCH_ITEM_RESULTS,
        ITEM_MATRIX_ENTRIES,
        ITEM_MATRIX_RESULTS,
    )
}
