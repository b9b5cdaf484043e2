"""The source catalogue: each outside source's definition and the evaluation mapping,
read from the TOML files a person edits in `sources/`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bench_pipeline.core.settings import sources_dir
from bench_pipeline.ingest.contract import Contract, RecordSpec
from bench_pipeline.ingest.tables import TABLES


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

    @model_validator(mode="after")
    def _record_tables_named(self) -> SourceDefinition:
        """Every record spec's tables are the source's own, and named whenever the source has
        more than one: a record problem must never land on another table's row by number."""
        for spec in self.contract.records:
            unknown = set(spec.tables) - set(self.tables)
            if unknown:
                raise ValueError(
                    f"{self.name}: contract records {spec.files!r} name tables "
                    f"{sorted(unknown)} the source does not have"
                )
            if not spec.tables and len(self.tables) > 1:
                raise ValueError(
                    f"{self.name}: contract records {spec.files!r} must name the tables its "
                    f"records become (the source has {len(self.tables)})"
                )
        for table, columns in self.contract.scales.items():
            declared = TABLES[table].columns if table in self.tables and table in TABLES else {}
            odd = [c for c in columns if c not in declared or not declared[c].is_numeric()]
            if odd:
                raise ValueError(
                    f"{self.name}: contract scales {table}.{odd} are not numeric columns of "
                    "the source's tables"
                )
        return self

    def record_tables(self, spec: RecordSpec) -> list[str]:
        """The tables whose rows are `spec`'s records, numbered alike (see `RecordSpec.tables`)."""
        return spec.tables or self.tables


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
