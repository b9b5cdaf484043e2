"""models.dev `api.json`: providers, each with the models it serves (prices in USD per 1M)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from itertools import repeat
from typing import Any

import polars as pl

from bench_pipeline.ingest.parsers.dates import Stated, text_date
from bench_pipeline.ingest.payload import (
    PayloadError,
    RawFile,
    StagedColumn,
    StagedColumns,
    field_columns,
    field_texts,
    isolated,
    load_json,
    obj,
    objects,
    staged_frame,
)
from bench_pipeline.ingest.tables import MODELSDEV_MODELS


def _model_row(provider_id: str, provider: Mapping[str, Any], model_id: str, model: Any) -> dict:
    model = model if isinstance(model, dict) else {}
    cost = obj(model.get("cost"))
    limit = obj(model.get("limit"))
    return {
        "provider_id": provider_id,
        "model_id": model.get("id", model_id),
        "provider_name": provider.get("name"),
        "name": model.get("name"),
        "family": model.get("family"),
        "release_date": model.get("release_date"),
        "open_weights": model.get("open_weights"),
        "reasoning": model.get("reasoning"),
        "tool_call": model.get("tool_call"),
        "context_limit": limit.get("context"),
        "output_limit": limit.get("output"),
        "input_usd_per_m": cost.get("input"),
        "output_usd_per_m": cost.get("output"),
        "cache_read_usd_per_m": cost.get("cache_read"),
        "cache_write_usd_per_m": cost.get("cache_write"),
        "status": model.get("status"),
    }


def _document(raw: RawFile) -> dict:
    document = load_json(raw)
    if not isinstance(document, dict) or not all(
        isinstance(p, dict) and "models" in p for p in document.values()
    ):
        raise PayloadError(f"{raw.name}: expected {{provider: {{..., 'models': {{...}}}}}}")
    return document


MODEL_FIELDS = (
    "name",
    "family",
    "release_date",
    "open_weights",
    "reasoning",
    "tool_call",
    "status",
)
"""The model's own fields `_file_columns` reads together (see `field_texts`)."""


def _file_columns(document: dict) -> dict[str, StagedColumn]:
    """One file's staged columns, each read for all of its models at once (as `_model_row`
    reads them one model at a time)."""
    provider_ids: list[Any] = []
    providers: list[Any] = []
    model_ids: list[Any] = []
    models: list[Any] = []
    for provider_id, provider in document.items():
        served = provider["models"] if isinstance(provider["models"], dict) else {}
        provider_ids += [provider_id] * len(served)
        providers += [provider] * len(served)
        model_ids += served.keys()
        models += objects(served.values())
    nested = field_columns(models, ("cost", "limit"))
    read = field_texts(models, MODEL_FIELDS)
    prices = field_texts(nested["cost"], ("input", "output", "cache_read", "cache_write"))
    limits = field_texts(nested["limit"], ("context", "output"))
    return {
        "provider_id": provider_ids,
        "model_id": list(map(dict.get, models, repeat("id"), model_ids)),
        "provider_name": field_columns(providers, ("name",))["name"],
        **{key: read[key] for key in MODEL_FIELDS if key != "status"},
        "context_limit": limits["context"],
        "output_limit": limits["output"],
        "input_usd_per_m": prices["input"],
        "output_usd_per_m": prices["output"],
        "cache_read_usd_per_m": prices["cache_read"],
        "cache_write_usd_per_m": prices["cache_write"],
        "status": read["status"],
    }


def parse(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    """Column by column: the frame `parse_by_record` builds (no model can make `_model_row`
    fail once its provider is an object, so no record needs isolating)."""
    staged = StagedColumns(MODELSDEV_MODELS.columns)
    for raw in files:
        columns = _file_columns(_document(raw))
        staged.add_columns(raw.name, columns, range(1, len(columns["provider_id"]) + 1))
    return {MODELSDEV_MODELS.name: staged.frame()}


def parse_by_record(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    """Record by record (the reference `parse` is tested against)."""
    rows = []
    for raw in files:
        document = _document(raw)
        number = 0
        for provider_id, provider in document.items():
            models = provider["models"] if isinstance(provider["models"], dict) else {}
            for model_id, model in models.items():
                number += 1
                row = isolated(
                    partial(_model_row, provider_id, provider, model_id),
                    model,
                    {"provider_id": provider_id, "model_id": model_id},
                )
                rows.append((raw.name, number, row))
    return {MODELSDEV_MODELS.name: staged_frame(list(MODELSDEV_MODELS.columns), rows)}


def data_dates(files: Sequence[RawFile]) -> list[Stated]:
    """Each model's `last_updated`, numbered as `parse_by_record` numbers the models."""
    found: list[Stated] = []
    for raw in files:
        document = load_json(raw)
        number = 0
        for provider_id, provider in document.items() if isinstance(document, dict) else ():
            served = provider.get("models") if isinstance(provider, dict) else None
            for model_id, model in served.items() if isinstance(served, dict) else ():
                number += 1
                if isinstance(model, dict):
                    stated = text_date(model.get("last_updated"))
                    where = f"{provider_id}/{model_id}"
                    found.append(Stated(stated, where, MODELSDEV_MODELS.name, raw.name, number))
    return found
