"""Record-by-record validation: cast each field to its type, run the pandera checks, find
duplicate keys; every failing record goes to quarantine with its file, number, field and reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import pandera.polars as pa
import polars as pl
from polars.datatypes import DataTypeClass

from bench_pipeline.ingest.tables import TableSpec

FILE_COLUMN = "_file"
RECORD_COLUMN = "_record"
PROBLEM_COLUMN = "_problem"
PROBLEM_FIELD_COLUMN = "_problem_field"
"""Set on a staged row when its record was already found wrong while staging (by the source's
contract or because no row could be built from it): validation quarantines it as it says."""
ROW = "_row"
FAILURE_SCHEMA = {ROW: pl.UInt32, "field": pl.Utf8, "reason": pl.Utf8}
DATE_SLACK = timedelta(days=1)
"""A date may be at most this far after the run's own day (time zones), never further."""

QUARANTINE_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    "table_name": pl.Utf8,
    "file_name": pl.Utf8,
    "record_number": pl.Int64,
    "record_key": pl.Utf8,
    "field": pl.Utf8,
    "reason": pl.Utf8,
    "record": pl.Utf8,
}


class SchemaDriftError(ValueError):
    """The payload no longer has the columns we expect: the whole run must be rejected."""


@dataclass(frozen=True)
class ValidationResult:
    """Valid rows with their final types, and one quarantine row per failing field."""

    valid: pl.DataFrame
    quarantined: pl.DataFrame

    @property
    def rows_quarantined(self) -> int:
        return count_records(self.quarantined)


def count_records(quarantined: pl.DataFrame) -> int:
    """Distinct records among quarantine rows (a record failing on two fields counts once).

    A record is its table, file, record number and key: one CSV line can feed several
    evaluations (different keys), and two records can share a duplicated key (different numbers).
    """
    if quarantined.is_empty():
        return 0
    record = pl.struct("table_name", "file_name", "record_number", "record_key")
    return quarantined.select(record.n_unique()).item()


def _problem_failures(staged: pl.DataFrame) -> pl.DataFrame:
    """Rows that staging already found wrong (see `PROBLEM_COLUMN`)."""
    return staged.filter(pl.col(PROBLEM_COLUMN).is_not_null()).select(
        ROW,
        pl.col(PROBLEM_FIELD_COLUMN).fill_null("record").alias("field"),
        pl.col(PROBLEM_COLUMN).alias("reason"),
    )


def _as_date(column: pl.Series) -> pl.Series:
    if column.dtype == pl.Date:
        return column
    if isinstance(column.dtype, pl.Datetime):
        return column.dt.date()
    text = column.cast(pl.Utf8).str.slice(0, 10)
    month_only = (text.str.len_chars() == 7).fill_null(False)  # `2025-06`: its first day
    if month_only.any():
        text = text.zip_with(month_only.not_(), text + "-01")
    return text.str.to_date("%Y-%m-%d", strict=False)


def _bound_failures(spec: TableSpec, typed: pl.DataFrame, today: date | None) -> pl.DataFrame:
    """Values no check of pandera's catches: NaN and infinities (polars orders NaN above every
    number, so `ge(0)` passes it), and dates after the run's day plus `DATE_SLACK`."""
    parts = []
    for name, dtype in spec.columns.items():
        column = typed.get_column(name)
        if dtype in (pl.Float64, pl.Float32):
            bad = column.is_not_null() & ~column.is_finite()
            parts.append(
                typed.filter(bad).select(
                    ROW,
                    pl.lit(name).alias("field"),
                    pl.format("not a finite number: {}", pl.col(name)).alias("reason"),
                )
            )
        if today is not None and name in spec.dates:
            latest = today + DATE_SLACK
            bad = (_as_date(column) > latest).fill_null(False)
            parts.append(
                typed.filter(bad).select(
                    ROW,
                    pl.lit(name).alias("field"),
                    pl.format(
                        "dated {}, after the run's day plus one ({})",
                        pl.col(name).cast(pl.Utf8),
                        pl.lit(latest.isoformat()),
                    ).alias("reason"),
                )
            )
    parts += _interval_failures(spec, typed)
    return pl.concat(parts) if parts else pl.DataFrame(schema=FAILURE_SCHEMA)


def _interval_failures(spec: TableSpec, typed: pl.DataFrame) -> list[pl.DataFrame]:
    """Rows whose value lies outside the interval the same row gives for it (`spec.within`)."""
    parts = []
    for name, (low, high) in spec.within.items():
        value = pl.col(name)
        outside = ((value < pl.col(low)) | (value > pl.col(high))).fill_null(False)
        parts.append(
            typed.filter(outside).select(
                ROW,
                pl.lit(name).alias("field"),
                pl.format(
                    "{} outside its own interval [{}, {}] ({}, {})",
                    value,
                    pl.col(low),
                    pl.col(high),
                    pl.lit(low),
                    pl.lit(high),
                ).alias("reason"),
            )
        )
    return parts


def _check_columns(spec: TableSpec, staged: pl.DataFrame) -> None:
    missing = [name for name in spec.columns if name not in staged.columns]
    if missing:
        files = (
            sorted(set(staged.get_column(FILE_COLUMN).to_list())) if FILE_COLUMN in staged else []
        )
        raise SchemaDriftError(
            f"{spec.name}: column(s) {', '.join(missing)} missing from "
            f"{', '.join(files) or 'payload'}"
        )


def _cast_failures(spec: TableSpec, staged: pl.DataFrame, typed: pl.DataFrame) -> pl.DataFrame:
    """Rows whose value was present but could not be read as the column's type."""
    parts = []
    for name, dtype in spec.columns.items():
        lost = staged.get_column(name).is_not_null() & typed.get_column(name).is_null()
        if not lost.any():
            continue
        parts.append(
            staged.filter(lost).select(
                ROW,
                pl.lit(name).alias("field"),
                pl.format(
                    "expected {}, got {}",
                    pl.lit(str(dtype)),
                    pl.col(name).cast(pl.Utf8, strict=False).fill_null("a value of another type"),
                ).alias("reason"),
            )
        )
    return pl.concat(parts) if parts else pl.DataFrame(schema=FAILURE_SCHEMA)


def _check_failures(spec: TableSpec, typed: pl.DataFrame) -> pl.DataFrame:
    """Run pandera's value checks lazily so that every failing record is reported."""
    empty = pl.DataFrame(schema=FAILURE_SCHEMA)
    if typed.is_empty():
        return empty
    try:
        spec.schema().validate(typed, lazy=True)
    except pa.errors.SchemaErrors as errors:
        cases = errors.failure_cases
        whole_frame = cases.filter(pl.col("index").is_null())
        if not whole_frame.is_empty():
            first = whole_frame.row(0, named=True)
            raise SchemaDriftError(
                f"{spec.name}: {first['column']} failed {first['check']} ({first['failure_case']})"
            ) from errors
        rows = typed.get_column(ROW).gather(cases.get_column("index"))  # position → row id
        return cases.with_columns(rows.alias(ROW)).select(
            ROW,
            pl.col("column").alias("field"),
            pl.when(pl.col("check") == "not_nullable")
            .then(pl.lit("missing a required value"))
            .otherwise(pl.format("failed {}: {}", pl.col("check"), _shown(pl.col("failure_case"))))
            .alias("reason"),
        )
    return empty


SHOWN_CHARACTERS = 120
"""How much of a failing value a reason quotes (the record itself is kept whole)."""


def _shown(value: pl.Expr) -> pl.Expr:
    """A failing value as a reason quotes it: cut after `SHOWN_CHARACTERS`, with its length."""
    text = value.cast(pl.Utf8)
    long = text.str.len_chars() > SHOWN_CHARACTERS
    cut = pl.format(
        "{}… ({} characters)", text.str.slice(0, SHOWN_CHARACTERS), text.str.len_chars()
    )
    return pl.when(long).then(cut).otherwise(text)


def _duplicate_failures(spec: TableSpec, typed: pl.DataFrame) -> pl.DataFrame:
    duplicated = typed.select(pl.struct(list(spec.key)).is_duplicated()).to_series()
    return typed.filter(duplicated).select(
        ROW,
        pl.lit(",".join(spec.key)).alias("field"),
        pl.lit("duplicate key: another record in this run has the same key").alias("reason"),
    )


def cast_column(column: pl.Series, dtype: pl.DataType | DataTypeClass) -> pl.Series:
    """Read a staged column as `dtype`; an unreadable value becomes null (and is reported)."""
    if column.dtype == pl.Utf8:
        if dtype == pl.Boolean:
            return column.str.to_lowercase().replace_strict(
                {"true": True, "false": False}, default=None, return_dtype=pl.Boolean
            )
        if dtype == pl.Date:
            return column.str.to_date("%Y-%m-%d", strict=False)
        if isinstance(dtype, pl.Datetime):
            return column.str.to_datetime(
                strict=False, time_unit="us", time_zone="UTC"
            ).dt.replace_time_zone(None)
    return column.cast(dtype, strict=False)


def validate_records(
    spec: TableSpec, staged: pl.DataFrame, today: date | None = None
) -> ValidationResult:
    """Split staged records into valid typed rows and quarantined ones (never dropped silently).

    `today` is the run's day: dates after it (plus `DATE_SLACK`) are quarantined.
    """
    _check_columns(spec, staged)
    staged = staged.with_row_index(ROW)
    for name in (FILE_COLUMN, PROBLEM_COLUMN, PROBLEM_FIELD_COLUMN):
        if name not in staged.columns:
            staged = staged.with_columns(pl.lit(None, pl.Utf8).alias(name))
    if RECORD_COLUMN not in staged.columns:
        staged = staged.with_columns(pl.col(ROW).cast(pl.Int64).alias(RECORD_COLUMN))
    typed = pl.DataFrame(
        [staged.get_column(ROW)]
        + [cast_column(staged.get_column(name), dtype) for name, dtype in spec.columns.items()]
    )
    failures = [_problem_failures(staged)]
    for find in (
        lambda rows: _cast_failures(spec, _same_rows(staged, rows), rows),
        lambda rows: _bound_failures(spec, rows, today),
        lambda rows: _check_failures(spec, rows),
        lambda rows: _duplicate_failures(spec, rows),
    ):
        typed = _without(typed, failures)
        failures.append(find(typed))
    failed_rows = pl.concat(failures)
    valid = _without(typed, failures).drop(ROW)
    return ValidationResult(valid=valid, quarantined=_quarantine_rows(spec, staged, failed_rows))


def stored_failures(spec: TableSpec, stored: pl.DataFrame) -> int:
    """How many records of a live table, as read back from the warehouse, fail validation.

    A column stored as the type the spec gives it is checked as it is: its text would read
    back as the same value, so writing every value out as text and parsing it again (about
    a second per million rows) could find nothing more. Any other column is turned into text
    first and read as staging reads a value, so a value its type cannot hold still fails."""
    retyped = [name for name, dtype in stored.schema.items() if dtype != spec.columns.get(name)]
    return validate_records(
        spec, stored.with_columns(pl.col(name).cast(pl.Utf8) for name in retyped)
    ).rows_quarantined


def _without(typed: pl.DataFrame, failures: list[pl.DataFrame]) -> pl.DataFrame:
    """`typed` without the rows of any failure; `typed` already lacks those of every failure
    but the last, so when the last found none the frame is kept as it is (no copy)."""
    if failures[-1].is_empty():
        return typed
    failed = pl.concat(failures).get_column(ROW).implode()
    return typed.filter(~pl.col(ROW).is_in(failed))


def _same_rows(staged: pl.DataFrame, typed: pl.DataFrame) -> pl.DataFrame:
    """The staged rows `typed` (a subset of them, in order) still holds."""
    if typed.height == staged.height:
        return staged
    return staged.filter(pl.col(ROW).is_in(typed.get_column(ROW).implode()))


def _quarantine_rows(spec: TableSpec, staged: pl.DataFrame, failures: pl.DataFrame) -> pl.DataFrame:
    if failures.is_empty():
        return pl.DataFrame(schema=QUARANTINE_SCHEMA)
    records = staged.filter(pl.col(ROW).is_in(failures.get_column(ROW).implode()))
    internal = (ROW, FILE_COLUMN, RECORD_COLUMN, PROBLEM_COLUMN, PROBLEM_FIELD_COLUMN)
    data_columns = [c for c in staged.columns if c not in internal]
    records = records.select(
        ROW,
        pl.col(FILE_COLUMN).alias("file_name"),
        pl.col(RECORD_COLUMN).cast(pl.Int64).alias("record_number"),
        pl.concat_str(
            [pl.col(k).cast(pl.Utf8, strict=False).fill_null("∅") for k in spec.key], separator="/"
        ).alias("record_key"),
        pl.struct(data_columns).struct.json_encode().alias("record"),
    )
    return (
        failures.join(records, on=ROW, how="left")
        .with_columns(pl.lit(spec.name).alias("table_name"))
        .sort(ROW, "field")
        .select(list(QUARANTINE_SCHEMA))
        .cast(pl.Schema(QUARANTINE_SCHEMA))
    )
