"""How old a source's live data is, judged by the date of the data, not of the fetch.

The live tables hold the source's last accepted run; that run's `data_as_of` is the newest date
its payload states (`ingest.dating`). A capture made months ago and fetched a minute ago is
months old: it is STALE once older than the source's `freshness_hours`, however recently it was
read. A run whose payload states no date is UNDATED, never judged by its fetch time. Both are
warnings: the pipeline goes on with the data it has and says how old it is.

One home for the rule: `bench status`, the `fresh` asset check and the about page all call
`judge`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

import duckdb

Verdict = Literal["fresh", "STALE", "UNDATED", "NO DATA"]


@dataclass(frozen=True)
class LiveData:
    """A source's live data: the accepted run the live tables hold and the date of its data."""

    source: str
    run_id: str
    data_as_of: datetime | None
    basis: str | None
    fetched_at: datetime
    """When that payload was last read: the run's end, or a later fetch that found it unchanged."""


@dataclass(frozen=True)
class Freshness:
    verdict: Verdict
    age: timedelta | None
    """The data's age at the moment judged (None without a data date)."""
    allowed: timedelta

    def describe(self) -> str:
        """`STALE (data 234 days old, allowed 3 days)` and the like."""
        allowed = f"allowed {days_or_hours(self.allowed)}"
        if self.age is None:
            return f"{self.verdict} ({allowed})"
        return f"{self.verdict} (data {days_or_hours(self.age)} old, {allowed})"


def days_or_hours(span: timedelta) -> str:
    hours = span / timedelta(hours=1)
    if abs(hours) < 48:
        return f"{hours:.0f} h"
    return f"{hours / 24:.0f} days"


def judge(data_as_of: datetime | None, freshness_hours: int, now: datetime) -> Freshness:
    """The verdict on data dated `data_as_of` (naive UTC) at `now` (naive UTC)."""
    allowed = timedelta(hours=freshness_hours)
    if data_as_of is None:
        return Freshness("UNDATED", None, allowed)
    age = max(now - data_as_of, timedelta(0))  # data dated after `now`: no age, not a negative one
    return Freshness("STALE" if age > allowed else "fresh", age, allowed)


def _has_data_dates(conn: duckdb.DuckDBPyConnection) -> bool:
    """False for a warehouse (or an analyst copy) made before runs recorded their data date."""
    return bool(
        conn.execute(
            "SELECT count(*) FROM information_schema.columns "
            "WHERE table_name = 'source_runs' AND column_name = 'data_as_of'"
        ).fetchall()[0][0]
    )


def live_data(conn: duckdb.DuckDBPyConnection) -> dict[str, LiveData]:
    """Per source, its live data (the last accepted run), with when it was last read."""
    dated = _has_data_dates(conn)
    columns = "r.data_as_of, r.data_as_of_basis" if dated else "NULL, NULL"
    rows = conn.execute(
        f"SELECT r.source, r.run_id, {columns}, "
        "greatest(r.finished_at, (SELECT max(c.checked_at) FROM source_checks c "
        "WHERE c.live_run_id = r.run_id)) "
        "FROM source_runs r WHERE r.status = 'accepted' "
        "QUALIFY row_number() OVER (PARTITION BY r.source "
        "ORDER BY r.finished_at DESC, r.run_id DESC) = 1"
    ).fetchall()
    return {
        source: LiveData(
            source,
            run_id,
            naive_utc(as_of) if as_of is not None else None,
            basis if dated else "not recorded (the run predates data dates)",
            naive_utc(fetched),
        )
        for source, run_id, as_of, basis, fetched in rows
    }


def naive_utc(moment: datetime) -> datetime:
    """A time as the warehouse keeps it, UTC without a zone (the analyst copy gives its
    times with their zone)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


_DAYS = ("Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays")


def cadence_words(cron: str) -> str:
    """A source's schedule in words (`every 6 hours`, `daily at 03:00 UTC`, `weekly, Mondays
    at 04:00 UTC`); any other cron is named as it is."""
    fields = cron.split()
    if len(fields) != 5:
        return f"on the schedule `{cron}` (UTC)"
    minute, hour, day, month, weekday = fields
    if not minute.isdigit() or day != "*" or month != "*":
        return f"on the schedule `{cron}` (UTC)"
    if hour.startswith("*/") and hour[2:].isdigit() and weekday == "*":
        at = f" (at minute {int(minute)})" if int(minute) else ""
        return f"every {int(hour[2:])} hours{at}"
    if not hour.isdigit():
        return f"on the schedule `{cron}` (UTC)"
    clock = f"{int(hour):02d}:{int(minute):02d} UTC"
    if weekday == "*":
        return f"daily at {clock}"
    if weekday.isdigit() and int(weekday) < 7:
        return f"weekly, {_DAYS[int(weekday)]} at {clock}"
    return f"on the schedule `{cron}` (UTC)"
