"""The source catalogue: each outside source's definition and the evaluation mapping,
read from the TOML files a person edits in `sources/`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bench_pipeline.core.settings import sources_dir
from bench_pipeline.ingest.contract import Contract


class LiveFetch(BaseModel):
    """How the live client gets the payload: named files from URLs, or members of a zip."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["files", "zip", "openrouter_endpoints"]
    urls: dict[str, str] = Field(default_factory=dict)
    zip_url: str | None = None
    zip_members: list[str] = Field(default_factory=list)
    models_url: str | None = None
    endpoints_url: str | None = None


class SourceDefinition(BaseModel):
    """One outside source: where it lives, how often it changes, whose it is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    publisher: str
    homepage: str
    licence: str
    attribution: str
    cadence_cron: str
    freshness_hours: int
    min_row_ratio: float = Field(default=0.5, gt=0, le=1)
    tables: list[str]
    live: LiveFetch
    contract: Contract = Field(default_factory=Contract)


class EvaluationSpec(BaseModel):
    """One published evaluation and the file and columns it is read from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    title: str
    direction: Literal["higher", "lower"]
    file: str
    score_column: str
    scale: float
    key_column: str
    stderr_column: str | None = None
    agent_column: str | None = None
    run_date_column: str | None = None


def _read(path: Path) -> dict:
    with path.open("rb") as handle:
        return tomllib.load(handle)


@cache
def source_definitions(directory: Path | None = None) -> dict[str, SourceDefinition]:
    folder = directory or sources_dir() / "definitions"
    definitions = [SourceDefinition(**_read(path)) for path in sorted(folder.glob("*.toml"))]
    return {definition.name: definition for definition in definitions}


@cache
def evaluations(path: Path | None = None) -> tuple[EvaluationSpec, ...]:
    document = _read(path or sources_dir() / "evaluations.toml")
    return tuple(EvaluationSpec(**entry) for entry in document["evaluation"])
