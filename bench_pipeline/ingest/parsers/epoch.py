"""Epoch AI Benchmarking Hub CSVs → one row per (evaluation, published row), scores in percent."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from bench_pipeline.ingest.catalog import EvaluationSpec
from bench_pipeline.ingest.parsers.dates import Stated, text_date
from bench_pipeline.ingest.payload import PayloadError, RawFile, read_csv, staged_frame
from bench_pipeline.ingest.tables import EPOCH_MODELS, EVALUATION_ROWS

MODELS_FILE = "epoch_capabilities_index.csv"
MODEL_VERSION = "Model version"


def _scaled(value: str | None, scale: float) -> str | None:
    """Scale a published number to percent; text that is not a number is kept for validation."""
    if value is None or scale == 1:
        return value
    try:
        return repr(float(value) * scale)
    except ValueError:
        return value


def _evaluation_rows(raw: RawFile, spec: EvaluationSpec) -> list[tuple[str, int, dict]]:
    required = [MODEL_VERSION, spec.score_column, spec.key_column]
    records = read_csv(raw, required + [c for c in (spec.stderr_column,) if c])
    return [
        (
            raw.name,
            number,
            {
                "evaluation_id": spec.id,
                "row_key": record.get(spec.key_column),
                "model_version": record.get(MODEL_VERSION),
                "agent": record.get(spec.agent_column) if spec.agent_column else None,
                "organization": record.get("Organization"),
                "release_date": record.get("Release date"),
                "run_date": record.get(spec.run_date_column) if spec.run_date_column else None,
                "score": _scaled(record.get(spec.score_column), spec.scale),
                "stderr": _scaled(record.get(spec.stderr_column), spec.scale)
                if spec.stderr_column
                else None,
                "log_url": record.get(spec.log_column) or None if spec.log_column else None,
                "source_file": raw.name,
            },
        )
        for number, record in enumerate(records, start=1)
    ]


def _model_rows(raw: RawFile) -> list[tuple[str, int, dict]]:
    records = read_csv(raw, [MODEL_VERSION, "Model accessibility", "Display name"])
    return [
        (
            raw.name,
            number,
            {
                "model_version": record.get(MODEL_VERSION),
                "display_name": record.get("Display name"),
                "model_name": record.get("Model name"),
                "organization": record.get("Organization"),
                "accessibility": record.get("Model accessibility"),
                "release_date": record.get("Release date"),
                "eci_score": record.get("ECI Score"),
            },
        )
        for number, record in enumerate(records, start=1)
    ]


def parse(
    files: Sequence[RawFile], evaluations: Sequence[EvaluationSpec]
) -> dict[str, pl.DataFrame]:
    by_name = {raw.name: raw for raw in files}
    wanted = {spec.file for spec in evaluations}
    if not wanted & set(by_name):
        raise PayloadError(f"none of the evaluation files ({', '.join(sorted(wanted))}) is present")
    rows = []
    for spec in evaluations:
        if spec.file in by_name:
            rows += _evaluation_rows(by_name[spec.file], spec)
    models = _model_rows(by_name[MODELS_FILE]) if MODELS_FILE in by_name else []
    return {
        EVALUATION_ROWS.name: staged_frame(list(EVALUATION_ROWS.columns), rows),
        EPOCH_MODELS.name: staged_frame(list(EPOCH_MODELS.columns), models),
    }


RUN_DATE_COLUMNS = ("Started at", "Run date")
"""Where Epoch's files date a run: its own evaluations' `Started at`, external ones' `Run date`
(a model's `Release date` is when the lab released it, not when it was measured)."""


def data_dates(files: Sequence[RawFile]) -> list[Stated]:
    """The run dates of every evaluation file's records, numbered as `_evaluation_rows`
    numbers them (a file no evaluation reads stages no rows, so its dates never count)."""
    found: list[Stated] = []
    for raw in files:
        if not raw.name.endswith(".csv"):
            continue
        try:
            records = read_csv(raw, ())
        except PayloadError:
            continue
        for number, record in enumerate(records, start=1):
            for column in RUN_DATE_COLUMNS:
                stated = text_date(record.get(column))
                if stated is not None:
                    where = f"{column} of {record.get(MODEL_VERSION)} in {raw.name}"
                    found.append(Stated(stated, where, EVALUATION_ROWS.name, raw.name, number))
    return found
