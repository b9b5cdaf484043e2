"""The source catalogue: each outside source's definition and the evaluation mapping,
read from the TOML files a person edits in `sources/`.
"""

from __future__ import annotations

import math
import os
import re
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


DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""A payload's cap when its definition declares none: 64 MiB, about fifteen times the largest
recorded payload (4 MB). Staging holds a payload several times over in memory (a 300 MB
payload took 1.25 GB), so the cap is what bounds it."""
DEFAULT_MAX_RECORDS = 100_000
"""A payload's cap on records (models listed, ratings, entries) when none is declared."""
LIMITS_FACTOR = "BENCH_SOURCE_LIMITS_FACTOR"
"""An environment variable multiplying every source's caps (the scale benchmark's enlarged
snapshots hold k times the data); unset, the caps are as declared."""


class SourceLimits(BaseModel):
    """How much one payload may hold (the `[limits]` table of a source's definition). Past a
    cap the fetch stops reading and the run is rejected with the reason; the live tables keep
    the last accepted run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_bytes: int = Field(
        default=DEFAULT_MAX_BYTES,
        gt=0,
        description="The most bytes of the whole payload (every file, every zip member as "
        "unpacked), counted while they are read.",
    )
    max_records: int = Field(
        default=DEFAULT_MAX_RECORDS,
        gt=0,
        description="The most records the contract reads from the payload (models, ratings, "
        "entries).",
    )
    max_models: int | None = Field(
        default=None,
        gt=0,
        description="For a source fetched model by model (OpenRouter endpoints): the most "
        "models its listing may name, checked before any per-model request is made. Unset: "
        "`max_records`.",
    )

    def scaled(self) -> SourceLimits:
        """The caps times `BENCH_SOURCE_LIMITS_FACTOR` (see there), read when asked."""
        factor = os.environ.get(LIMITS_FACTOR)
        if not factor:
            return self
        times = max(1, int(factor))
        models = self.max_models * times if self.max_models is not None else None
        return SourceLimits(
            max_bytes=self.max_bytes * times,
            max_records=self.max_records * times,
            max_models=models,
        )

    @property
    def models(self) -> int:
        return self.max_models if self.max_models is not None else self.max_records


class ItemBoardSpec(BaseModel):
    """What a per-item results source publishes (the `[board]` table of its definition): a
    systems × items matrix of one benchmark, read by `ingest/parsers/item_results.py` and
    ranked by `scores/item_matrix_boards.py`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    benchmark: str = Field(description="The board's name: the benchmark the items are from.")
    items: int = Field(
        gt=0,
        description="The benchmark's item count. More distinct item ids reject the run; with "
        '`absent = "failed"` the items no file lists still count (as failed by everyone).',
    )
    scale: tuple[float, float] = Field(
        default=(0.0, 1.0), description="The lowest and highest score an item can take."
    )
    direction: Literal["higher", "lower"] = "higher"
    group_by: str | None = Field(
        default=None,
        description="A regular expression whose first capture group in the item id is the "
        "item's group (SWE-bench: the repository); a long file's `group` column wins.",
    )
    absent: Literal["missing", "failed"] = Field(
        default="missing",
        description="An item a system has no result for: `missing` (not run; scores are over "
        "the items run) or `failed` (scored at the bottom of the scale, over all `items`).",
    )
    scorer: str | None = Field(
        default=None, description="For `.eval` logs: the scorer read (default: the first)."
    )

    @model_validator(mode="after")
    def _valid(self) -> ItemBoardSpec:
        low, high = self.scale
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"board scale {self.scale}: need finite low < high")
        if self.group_by is not None:
            re.compile(self.group_by)
        return self


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
    limits: SourceLimits = Field(default_factory=SourceLimits)
    board: ItemBoardSpec | None = None
    """Set for a per-item results source (long, wide or `.eval` files): what it ranks."""

    @property
    def caps(self) -> SourceLimits:
        """The limits in force (as declared, times `BENCH_SOURCE_LIMITS_FACTOR` if set)."""
        return self.limits.scaled()

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
    log_column: str | None = None
    """The column linking each row's run to the publisher's log viewer, where the file has one."""


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
