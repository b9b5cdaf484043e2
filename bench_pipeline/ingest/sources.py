"""Which parser reads which source."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from bench_pipeline.ingest.catalog import evaluations
from bench_pipeline.ingest.engine import Parser
from bench_pipeline.ingest.parsers import arena, epoch, models_dev, openrouter, swebench
from bench_pipeline.ingest.payload import RawFile


def _epoch(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    return epoch.parse(files, evaluations())


PARSERS: dict[str, Parser] = {
    "openrouter_models": openrouter.parse_models,
    "openrouter_endpoints": openrouter.parse_endpoints,
    "models_dev": models_dev.parse,
    "arena": arena.parse,
    "epoch": _epoch,
    "swebench": swebench.parse,
}
