"""Which function dates which source's payload (see `bench_pipeline.ingest.parsers.dates`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.parsers import (
    arena,
    epoch,
    item_results,
    models_dev,
    openrouter,
    swebench,
)
from bench_pipeline.ingest.parsers.dates import DataDate
from bench_pipeline.ingest.payload import PayloadError, RawFile

Dater = Callable[[Sequence[RawFile], datetime], DataDate]

DATERS: dict[str, Dater] = {
    "openrouter_models": openrouter.models_data_date,
    "openrouter_endpoints": openrouter.endpoints_data_date,
    "models_dev": models_dev.data_date,
    "arena": arena.data_date,
    "epoch": epoch.data_date,
    "swebench": swebench.data_date,
}


def data_date(source: str, files: Sequence[RawFile], now: datetime) -> DataDate:
    """The payload's data date; a source without a dater, or a payload the dater cannot read,
    has none (with the reason), never the fetch time. Never raises: a date is not worth a run."""
    dater = DATERS.get(source)
    if dater is None and _item_source(source):
        dater = item_results.data_date
    if dater is None:
        return DataDate(None, f"no data date is derived for the source {source!r}")
    try:
        return dater(files, now)
    except (PayloadError, ValueError, TypeError, AttributeError, RecursionError) as error:
        return DataDate(None, f"no data date: the payload could not be read for it ({error})")


def _item_source(source: str) -> bool:
    """Whether `source` is of the per-item results kind (its definition has `[board]`)."""
    definition = source_definitions().get(source)
    return definition is not None and definition.board is not None
