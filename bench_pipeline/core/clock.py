"""The pipeline's clock: naive UTC, the way the warehouse's TIMESTAMP columns hold time."""

from __future__ import annotations

from datetime import UTC, datetime


def now_utc() -> datetime:
    """The current time in UTC without a timezone (DuckDB TIMESTAMP, not TIMESTAMPTZ)."""
    return datetime.now(UTC).replace(tzinfo=None)
