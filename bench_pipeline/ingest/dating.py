"""Which function dates which source's payload (see `bench_pipeline.ingest.parsers.dates`).

A run is dated by the records it accepts: staging stores every date the payload states, each
with the record stating it (`stated_frame`), and validation keeps the newest of those whose
record was not quarantined (`accepted_date`). A hostile record stating today's date, and
quarantined for a bad field, dates nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.parsers import (
    arena,
    epoch,
    item_results,
    models_dev,
    openrouter,
    swebench,
)
from bench_pipeline.ingest.parsers.dates import DataDate, Stated, newest
from bench_pipeline.ingest.payload import PayloadError, RawFile, unencodable


@dataclass(frozen=True)
class Dater:
    """Where a source's payload states its dates, and what those dates are called."""

    stated: Callable[[Sequence[RawFile]], list[Stated]]
    what: str


DATERS: dict[str, Dater] = {
    "openrouter_models": Dater(openrouter.models_dates, "model `created`"),
    "openrouter_endpoints": Dater(
        openrouter.endpoints_dates, "model `created` in the endpoint listings"
    ),
    "models_dev": Dater(models_dev.data_dates, "`last_updated`"),
    "arena": Dater(arena.data_dates, "publication date"),
    "epoch": Dater(epoch.data_dates, "run date"),
    "swebench": Dater(swebench.data_dates, "entry `date`"),
}

STATED_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "when": pl.Datetime("us"),
    "where": pl.Utf8,
    "table": pl.Utf8,
    "file": pl.Utf8,
    "record": pl.Int64,
}
"""The frame of a payload's stated dates, as staging stores it for validation."""


def dater_of(source: str) -> Dater | None:
    """The source's dater: its own, or for a per-item results source (its definition has a
    `[board]`) the kind's, reading with the definition's scorer."""
    dater = DATERS.get(source)
    if dater is not None:
        return dater
    definition = source_definitions().get(source)
    if definition is None or definition.board is None:
        return None
    scorer = definition.board.scorer
    return Dater(
        functools.partial(item_results.data_dates, scorer=scorer),
        "result `date` or log `eval.created`",
    )


def _what(source: str) -> str:
    dater = dater_of(source)
    return dater.what if dater is not None else "date"


def stated_dates(source: str, files: Sequence[RawFile]) -> list[Stated] | DataDate:
    """Every date the payload states, with its record; or, when none can be read, the
    undated `DataDate` saying why. Never raises: a date is not worth a run."""
    dater = dater_of(source)
    if dater is None:
        return DataDate(None, f"no data date is derived for the source {source!r}")
    try:
        return dater.stated(files)
    except (PayloadError, ValueError, TypeError, AttributeError, RecursionError) as error:
        return DataDate(None, f"no data date: the payload could not be read for it ({error})")


def data_date(source: str, files: Sequence[RawFile], now: datetime) -> DataDate:
    """The payload's data date counting every record it states (a run's own date counts its
    accepted records only: `accepted_date`); none, with the reason, when it has none."""
    found = stated_dates(source, files)
    if isinstance(found, DataDate):
        return found
    return newest(((s.when, s.where) for s in found), _what(source), now)


def stated_frame(found: Sequence[Stated]) -> pl.DataFrame:
    """`found` as a frame (`STATED_SCHEMA`), to be stored beside the staged tables."""
    return pl.DataFrame(
        {
            "when": [s.when for s in found],
            # a record's name may hold a lone surrogate (a hostile `\ud800`): escaped, as
            # staging escapes its fields, so the frame can be stored
            "where": [unencodable(s.where) or s.where for s in found],
            "table": [s.table for s in found],
            "file": [s.file for s in found],
            "record": [s.record for s in found],
        },
        schema=STATED_SCHEMA,
    )


def accepted_date(
    source: str, stated: pl.DataFrame, accepted: pl.DataFrame, now: datetime
) -> DataDate:
    """The newest date in `stated` (`stated_frame`) whose record is among `accepted` (columns
    `table`, `file`, `record`: the staged rows validation did not quarantine); a date the file
    states (no record) counts while any record of its file and table is accepted."""
    by_record = stated.filter(pl.col("record").is_not_null()).join(
        accepted, on=["table", "file", "record"], how="semi"
    )
    by_file = stated.filter(pl.col("record").is_null()).join(
        accepted.select("table", "file").unique(), on=["table", "file"], how="semi"
    )
    counted = pl.concat([by_record, by_file])
    left_out = (
        stated.filter(pl.col("when").is_not_null()).height
        - counted.filter(pl.col("when").is_not_null()).height
    )
    dated = newest(counted.select("when", "where").iter_rows(), _what(source), now)
    if not left_out:
        return dated
    return DataDate(
        dated.as_of, f"{dated.basis}; {left_out:,} date(s) of quarantined records left out"
    )
