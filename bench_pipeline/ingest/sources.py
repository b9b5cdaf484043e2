"""Which parser reads which source."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from bench_pipeline.ingest.catalog import SourceDefinition, evaluations, source_definitions
from bench_pipeline.ingest.engine import Parser
from bench_pipeline.ingest.parsers import (
    arena,
    epoch,
    item_results,
    models_dev,
    openrouter,
    swebench,
)
from bench_pipeline.ingest.payload import RawFile


def _epoch(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    return epoch.parse(files, evaluations())


class _Parsers(dict[str, Parser]):
    """The parsers by source name; a source of the per-item results kind (a definition with
    a `[board]` table) is read by that kind's parser, made from its definition when asked."""

    def __missing__(self, name: str) -> Parser:
        definition = source_definitions().get(name)
        if definition is None or definition.board is None:
            raise KeyError(name)
        return item_results.parser(definition)


PARSERS: dict[str, Parser] = _Parsers(
    {
        "openrouter_models": openrouter.parse_models,
        "openrouter_endpoints": openrouter.parse_endpoints,
        "models_dev": models_dev.parse,
        "arena": arena.parse,
        "epoch": _epoch,
        "swebench": swebench.parse,
    }
)


def parser_for(definition: SourceDefinition) -> Parser:
    """The parser of a source: its own, or the per-item results kind's when its definition
    has a `[board]` table."""
    if definition.board is not None:
        return item_results.parser(definition)
    return PARSERS[definition.name]
