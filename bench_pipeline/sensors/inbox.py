"""Sensors that notice new files in an inbox folder and ask for the asset that takes them.

The cursor is the set of file contents already asked for (16 hex digits of each file's
SHA-256), kept by Dagster across restarts: a file is asked for once (even if renamed), a file
changed in place is new, and a restart between two ticks neither repeats nor misses one. The
run key is derived from the new contents, so even a cursor lost mid-tick cannot start the same
intake twice. The asset itself also skips contents it has recorded, so intake stays exact
even if the sensor is bypassed (a manual materialisation, `bench run`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from bench_pipeline.core.inbox import inbox_files, inbox_sha256

DIGITS = 16


def _seen(cursor: str | None) -> set[str]:
    if not cursor:
        return set()
    return set(json.loads(cursor))


def new_files(folder: Path, cursor: str | None) -> tuple[list[tuple[Path, str]], str]:
    """The inbox files whose content the cursor has not seen, and the cursor with them.

    Unreadable files are left for the next tick (not added to the cursor)."""
    seen = _seen(cursor)
    new: list[tuple[Path, str]] = []
    for path in inbox_files(folder):
        digest = inbox_sha256(path)
        if digest is None or digest[:DIGITS] in seen:
            continue
        seen.add(digest[:DIGITS])
        new.append((path, digest[:DIGITS]))
    return new, json.dumps(sorted(seen))


def inbox_sensor(
    name: str,
    folder: Callable[[], Path],
    asset_key: dg.AssetKey,
    description: str,
) -> dg.SensorDefinition:
    """A sensor asking for `asset_key` whenever `folder()` holds files it has not seen."""

    @dg.sensor(
        name=name,
        asset_selection=[asset_key],
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=description,
    )
    def _sensor(context: dg.SensorEvaluationContext):
        new, cursor = new_files(folder(), context.cursor)
        if not new:
            return dg.SkipReason(f"no new files in {folder()}")
        key = hashlib.sha256("".join(sorted(d for _, d in new)).encode()).hexdigest()[:DIGITS]
        context.update_cursor(cursor)
        return dg.RunRequest(
            run_key=f"{name}-{key}",
            tags={"bench/inbox_files": ",".join(p.name for p, _ in new)[:1000]},
        )

    return _sensor
