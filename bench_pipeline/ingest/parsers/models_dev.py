"""models.dev `api.json`: providers, each with the models it serves (prices in USD per 1M)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import polars as pl

from bench_pipeline.ingest.payload import (
    PayloadError,
    RawFile,
    isolated,
    load_json,
    obj,
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


def parse(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    rows = []
    for raw in files:
        document = load_json(raw)
        if not isinstance(document, dict) or not all(
            isinstance(p, dict) and "models" in p for p in document.values()
        ):
            raise PayloadError(f"{raw.name}: expected {{provider: {{..., 'models': {{...}}}}}}")
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
