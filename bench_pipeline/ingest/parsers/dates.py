"""The date of a payload's data: the newest date the payload itself states.

A fetch time says when we asked, not how old the answer is: a capture made months ago and read
a minute ago is months old. Each source's parser module says where its payload states a date
(OpenRouter's `created`, models.dev's `last_updated`, Epoch's run dates, LMArena's publication
date, SWE-bench's entry dates); this module turns those candidates into one `DataDate` with a
sentence saying how it was found. No candidate gives no date (never the fetch time), and a
date after the run's day (plus a day's slack) is not believed: one mistyped year would make
a source look fresh for ever.

Each date is `Stated` with the record stating it (its table, file and record number, as the
parser numbers the records), so only records that pass validation date a run: a record
quarantined for a bad price must not make months-old data look fresh by stating today's date.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

FUTURE_SLACK = timedelta(days=1)
"""How far past the run's time a stated date may be and still be believed (time zones)."""
_TEXT_DATE = re.compile(r"^\s*(\d{4})-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?)?")


@dataclass(frozen=True)
class DataDate:
    """When a payload's data is from (naive UTC, as the warehouse stores time), or None when
    the payload states no date, and how it was derived."""

    as_of: datetime | None
    basis: str


@dataclass(frozen=True)
class Stated:
    """One date a payload states, and where: `table`, `file` and `record` name the staged row
    made from the stating record (`record` None: the file states it, e.g. in its name, and it
    counts while any record of the file in `table` is accepted)."""

    when: datetime | None
    where: str
    table: str
    file: str
    record: int | None = None


def text_date(value: Any) -> datetime | None:
    """`YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS…]` (read as UTC) or `YYYY-MM` (its first day) as a
    naive UTC datetime; anything else is None."""
    if not isinstance(value, str):
        return None
    match = _TEXT_DATE.match(value)
    if match is None:
        return None
    year, month, day, hour, minute, second = (
        int(part) if part else None for part in match.groups()
    )
    try:
        return datetime(year or 0, month or 0, day or 1, hour or 0, minute or 0, second or 0)
    except ValueError:
        return None


def unix_date(value: Any) -> datetime | None:
    """Unix seconds (an integer, not a boolean) as a naive UTC datetime, or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    try:
        return datetime.fromtimestamp(value, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        return None


def newest(candidates: Iterable[tuple[datetime | None, str]], what: str, now: datetime) -> DataDate:
    """The newest of `candidates` ((date, where it is stated) pairs; None dates skipped) that
    is not after `now` plus `FUTURE_SLACK`, described as the newest `what`."""
    latest = now + FUTURE_SLACK
    best: tuple[datetime, str] | None = None
    counted = future = 0
    for when, where in candidates:
        if when is None:
            continue
        if when > latest:
            future += 1
            continue
        counted += 1
        if best is None or when > best[0]:
            best = (when, where)
    ignored = f"; {future} date(s) after the run ignored" if future else ""
    if best is None:
        return DataDate(None, f"no {what} stated in the payload{ignored}")
    return DataDate(best[0], f"newest {what} among {counted:,} stated: {best[1]}{ignored}")
