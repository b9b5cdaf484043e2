"""OpenRouter: `GET /api/v1/models` and `GET /api/v1/models/{author}/{slug}/endpoints`.

Prices arrive as USD per token in decimal strings; they are staged as USD per million tokens,
computed exactly. OpenRouter documents exactly `-1` as "variable pricing" (a router whose
price varies per request): that is no price, not a negative one. Any other negative price is
staged as it is, so validation quarantines the record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import polars as pl

from bench_pipeline.core.money import per_token_to_per_million
from bench_pipeline.ingest.parsers.dates import Stated, unix_date
from bench_pipeline.ingest.payload import (
    PayloadError,
    RawFile,
    isolated,
    load_json,
    obj,
    require_keys,
    staged_frame,
)
from bench_pipeline.ingest.tables import OPENROUTER_ENDPOINTS, OPENROUTER_MODELS

VARIABLE_PRICE = Decimal(-1)


def _decimal(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value).strip())
    except InvalidOperation:
        return None


def per_million(value: Any) -> Any:
    """USD per token → USD per 1M tokens as text; `-1` (variable pricing) is no price;
    unreadable or other negative values pass through to validation, which quarantines them."""
    if value is None or value == "":
        return None
    amount = _decimal(value)
    if amount is None or not amount.is_finite():
        return value
    if amount == VARIABLE_PRICE:
        return None
    if amount < 0:
        return str(amount.scaleb(6))
    try:
        converted = per_token_to_per_million(str(value).strip())
    except (InvalidOperation, ValueError, TypeError):
        return value
    return None if converted is None else str(converted)


def is_variable_price(value: Any) -> bool:
    """Only OpenRouter's documented `-1` means variable pricing."""
    return value is not None and _decimal(value) == VARIABLE_PRICE


def _timestamp(value: Any) -> Any:
    """Unix seconds → ISO text; out of any calendar's range raises (the record is isolated)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return value


def _joined(values: Any) -> Any:
    if isinstance(values, list):
        return ",".join(str(v) for v in values)
    return values


def _model_row(model: Mapping[str, Any]) -> dict[str, Any]:
    pricing = obj(model.get("pricing"))
    architecture = obj(model.get("architecture"))
    reasoning = obj(model.get("reasoning"))
    alias = obj(model.get("alias_target"))
    return {
        "model_id": model.get("id"),
        "canonical_slug": model.get("canonical_slug"),
        "hugging_face_id": model.get("hugging_face_id") or None,
        "name": model.get("name"),
        "created_at": _timestamp(model.get("created")),
        "context_length": model.get("context_length"),
        "modality": architecture.get("modality"),
        "input_modalities": _joined(architecture.get("input_modalities")),
        "output_modalities": _joined(architecture.get("output_modalities")),
        "tokenizer": architecture.get("tokenizer"),
        "prompt_usd_per_m": per_million(pricing.get("prompt")),
        "completion_usd_per_m": per_million(pricing.get("completion")),
        "input_cache_read_usd_per_m": per_million(pricing.get("input_cache_read")),
        "input_cache_write_usd_per_m": per_million(pricing.get("input_cache_write")),
        "variable_pricing": any(
            is_variable_price(pricing.get(k)) for k in ("prompt", "completion")
        ),
        "pricing_overrides": pricing.get("overrides"),
        "supported_efforts": _joined(reasoning.get("supported_efforts")),
        "alias_target": alias.get("slug"),
        "knowledge_cutoff": model.get("knowledge_cutoff"),
        "expiration_date": model.get("expiration_date"),
    }


def _records(raw: RawFile, document: Any, what: str) -> Any:
    if not isinstance(document, dict) or "data" not in document:
        raise PayloadError(f"{raw.name}: expected an object with 'data' ({what})")
    return document["data"]


def parse_models(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    rows: list[tuple[str, int, dict[str, Any]]] = []
    for raw in files:
        models = _records(raw, load_json(raw), "a model listing")
        if not isinstance(models, list):
            raise PayloadError(f"{raw.name}: 'data' is not a list of models")
        models = [m if isinstance(m, dict) else {} for m in models]
        require_keys(raw, models, ("id", "name", "pricing"))
        rows.extend(
            (raw.name, n, isolated(_model_row, m, {"model_id": m.get("id")}))
            for n, m in enumerate(models, start=1)
        )
    return {OPENROUTER_MODELS.name: staged_frame(list(OPENROUTER_MODELS.columns), rows)}


def _p50(stats: Any) -> Any:
    return stats.get("p50") if isinstance(stats, dict) else stats


def _endpoint_row(endpoint: Mapping[str, Any]) -> dict[str, Any]:
    pricing = obj(endpoint.get("pricing"))
    return {
        "model_id": endpoint.get("model_id"),
        "tag": endpoint.get("tag"),
        "provider_name": endpoint.get("provider_name"),
        "endpoint_name": endpoint.get("name"),
        "context_length": endpoint.get("context_length"),
        "max_completion_tokens": endpoint.get("max_completion_tokens"),
        "quantization": endpoint.get("quantization"),
        "prompt_usd_per_m": per_million(pricing.get("prompt")),
        "completion_usd_per_m": per_million(pricing.get("completion")),
        "input_cache_read_usd_per_m": per_million(pricing.get("input_cache_read")),
        "discount": pricing.get("discount"),
        "status": endpoint.get("status"),
        "uptime_last_30m": endpoint.get("uptime_last_30m"),
        "latency_p50_ms": _p50(endpoint.get("latency_last_30m")),
        "throughput_p50_tps": _p50(endpoint.get("throughput_last_30m")),
    }


def parse_endpoints(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    """Every `*.json` file is one model's endpoint listing; other files (the live client's
    list of models it could not fetch) are kept in the raw payload but hold no records."""
    rows: list[tuple[str, int, dict[str, Any]]] = []
    for raw in (f for f in files if f.name.endswith(".json")):
        data = _records(raw, load_json(raw), "an endpoint listing")
        endpoints = data.get("endpoints") if isinstance(data, dict) else None
        if not isinstance(endpoints, list):
            raise PayloadError(f"{raw.name}: 'data.endpoints' is not a list")
        endpoints = [e if isinstance(e, dict) else {} for e in endpoints]
        require_keys(raw, endpoints, ("model_id", "tag", "pricing"))
        rows.extend(
            (raw.name, n, isolated(_endpoint_row, e, {"model_id": e.get("model_id")}))
            for n, e in enumerate(endpoints, start=1)
        )
    return {OPENROUTER_ENDPOINTS.name: staged_frame(list(OPENROUTER_ENDPOINTS.columns), rows)}


def models_dates(files: Sequence[RawFile]) -> list[Stated]:
    """Each listed model's `created` (the newest: the day OpenRouter last listed a model),
    numbered as `parse_models` numbers the models."""
    found: list[Stated] = []
    for raw in files:
        document = load_json(raw)
        data = document.get("data") if isinstance(document, dict) else None
        for number, model in enumerate(data if isinstance(data, list) else [], start=1):
            if isinstance(model, dict):
                where = f"{model.get('id')} in {raw.name}"
                stated = unix_date(model.get("created"))
                found.append(Stated(stated, where, OPENROUTER_MODELS.name, raw.name, number))
    return found


def endpoints_dates(files: Sequence[RawFile]) -> list[Stated]:
    """The `created` of each model whose endpoints were read: the endpoint responses carry no
    date of their own (uptime and latency are "last 30 minutes" of an unknown time), so the
    model's date is the file's, counted while one of its endpoints is accepted."""
    found: list[Stated] = []
    for raw in (f for f in files if f.name.endswith(".json")):  # as `parse_endpoints` reads
        document = load_json(raw)
        model = document.get("data") if isinstance(document, dict) else None
        if isinstance(model, dict):
            where = f"{model.get('id')} in {raw.name}"
            stated = unix_date(model.get("created"))
            found.append(Stated(stated, where, OPENROUTER_ENDPOINTS.name, raw.name))
    return found
