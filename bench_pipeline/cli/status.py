"""`bench status`: what an operator checks first, in plain lines.

The latest release and the site a reader sees, the analyst copy, each source's last run and
the age of its data against its cadence, quarantined records, model runs and grading, the
Dagster runs that failed, and the asset checks failing now with their reason. An empty
`BENCH_HOME` is reported as such and left empty: nothing is created by looking.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import duckdb

from bench_pipeline.cli.instance import default_dagster_home
from bench_pipeline.core import settings
from bench_pipeline.grading.split_decisions import open_splits
from bench_pipeline.ingest import freshness
from bench_pipeline.ingest.catalog import SourceDefinition


@dataclass(frozen=True)
class FailingCheck:
    """An asset check whose latest completed evaluation failed."""

    name: str
    severity: str
    reason: str


def existing_dagster_home() -> Path | None:
    """The Dagster instance folder `bench run` uses, if it exists (never created here)."""
    configured = os.environ.get("DAGSTER_HOME")
    home = Path(configured) if configured else default_dagster_home()
    return home if (home / "dagster.yaml").is_file() else None


def _reason(evaluation: Any) -> str:
    """The check's own description, else its metadata in one line."""
    if evaluation.description:
        return str(evaluation.description)
    parts = []
    for key, value in evaluation.metadata.items():
        shown = getattr(value, "value", value)
        if isinstance(shown, dict | list):
            shown = json.dumps(shown, default=str)
        parts.append(f"{key}: {shown}")
    return "; ".join(parts) or "no reason recorded"


def failing_checks(instance: Any, check_keys: list[Any]) -> list[FailingCheck]:
    """Every check whose latest *completed* evaluation failed. A check planned in a run that
    failed before reaching it has no evaluation; its last completed one counts."""
    import dagster as dg

    storage = instance.event_log_storage
    failing = []
    for key in sorted(check_keys, key=lambda k: k.to_user_string()):
        for record in storage.get_asset_check_execution_history(key, limit=20):
            evaluation = record.evaluation
            if not isinstance(evaluation, dg.AssetCheckEvaluation):
                continue  # planned, never evaluated (its run stopped first)
            if not evaluation.passed:
                failing.append(
                    FailingCheck(
                        key.to_user_string(), evaluation.severity.value, _reason(evaluation)
                    )
                )
            break
    return failing


def _ago(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "never"
    zoned = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    hours = (now - zoned).total_seconds() / 3600
    if hours < 1:
        return f"{max(hours * 60, 0):.0f} min ago"
    if hours < 48:
        return f"{hours:.0f} h ago"
    return f"{hours / 24:.0f} days ago"


def _hours(window: timedelta) -> str:
    return f"{window / timedelta(hours=1):g} h"


def source_lines(
    conn: duckdb.DuckDBPyConnection,
    definitions: dict[str, SourceDefinition],
    cadence: dict[str, tuple[timedelta, timedelta]],
    now: datetime,
) -> list[str]:
    """One line per source: its last run, the date of the data its live tables hold (the
    newest date that payload states, not when it was fetched) judged against the cadence
    (`fresh`, or `STALE` past `freshness_hours`, `UNDATED` when the payload states no date:
    see `ingest.freshness`), `refresh due` when no fetch has read it within the warn window
    (one interval plus grace), and its quarantine. `cadence`: source -> (interval, warn
    window)."""
    last = {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT source, status, finished_at, rows_quarantined, coalesce(reason, '') "
            "FROM source_runs "
            "QUALIFY row_number() OVER (PARTITION BY source ORDER BY finished_at DESC) = 1"
        ).fetchall()
    }
    live = freshness.live_data(conn)
    naive_now = now.astimezone(UTC).replace(tzinfo=None) if now.tzinfo else now
    lines = []
    for name, definition in sorted(definitions.items()):
        if name not in last:
            lines.append(f"  {name:<21} never run")
            continue
        status, finished, quarantined, reason = last[name]
        data = live.get(name)
        if data is None:
            held = "no accepted data yet"
            verdict = "STALE (no accepted data yet)"
        else:
            judged = freshness.judge(data.data_as_of, definition.freshness_hours, naive_now)
            stated = f"{data.data_as_of:%Y-%m-%d}" if data.data_as_of else "not stated"
            held = f"data as of {stated}, read {_ago(data.fetched_at, now)}"
            verdict = judged.describe()
            if naive_now - data.fetched_at > cadence[name][1]:
                verdict += ", refresh due"
        line = (
            f"  {name:<21} last run {status} {_ago(finished, now)}; {held}, "
            f"every {_hours(cadence[name][0])}: {verdict}; {quarantined or 0} quarantined"
        )
        if data is not None and data.data_as_of is None and data.basis:
            line += f"\n  {'':<21} data date: {data.basis}"
        if status != "accepted" and reason:
            line += f"\n  {'':<21} why: {reason}"
        lines.append(line)
    return lines


def release_lines(conn: duckdb.DuckDBPyConnection, now: datetime) -> list[str]:
    """The latest release, the site and the analyst copy, with where each is."""
    latest = conn.execute(
        "SELECT release_id, created_at, tables, rows_total FROM releases "
        "ORDER BY created_at DESC LIMIT 1"
    ).fetchall()
    lines = []
    if latest:
        release_id, created, tables, rows = latest[0]
        lines.append(
            f"Latest release: {release_id}, made {created:%Y-%m-%d %H:%M} UTC "
            f"({_ago(created, now)}), {len(json.loads(tables))} tables, {rows:,} rows"
        )
    else:
        lines.append("Latest release: none yet (scores, release and site have not been built)")
    site = settings.downloads_dir().parent
    if (site / "index.html").is_file():
        built = datetime.fromtimestamp((site / "index.html").stat().st_mtime, UTC)
        lines.append(
            f"Site: {site} (built {built:%Y-%m-%d %H:%M} UTC, {_ago(built, now)}); "
            "`bench serve` shows it"
        )
    else:
        lines.append(f"Site: not built yet ({site})")
    copy = settings.analyst_copy_path()
    if copy.is_file():
        copied = datetime.fromtimestamp(copy.stat().st_mtime, UTC)
        lines.append(f"Analyst copy: {copy} (copied {_ago(copied, now)})")
    else:
        lines.append(f"Analyst copy: not written yet ({copy})")
    return lines


def activity_lines(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Quarantine, model runs, grading, reviews and open judge splits, and the last failed
    Dagster runs."""
    (held,) = conn.execute(
        "SELECT count(*) FROM quarantine q WHERE q.run_id IN (SELECT run_id FROM source_runs "
        "QUALIFY row_number() OVER (PARTITION BY source ORDER BY finished_at DESC) = 1)"
    ).fetchall()[0]
    runs, simulated, failed = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE simulated), (SELECT count(*) FROM run_failures) "
        "FROM model_runs"
    ).fetchall()[0]
    cycles, grades, flagged, looks, people, practice = conn.execute(
        "SELECT (SELECT count(*) FROM grading_cycles), (SELECT count(*) FROM grades), "
        "(SELECT count(DISTINCT judge) FROM sentinel_flags), "
        "(SELECT count(DISTINCT run_id) FROM second_look), "
        "(SELECT count(*) FROM reviews WHERE NOT simulated), "
        "(SELECT count(*) FROM practice_reviews)"
    ).fetchall()[0]
    label = " (all simulated)" if runs and simulated == runs else ""
    waiting = open_splits(conn)
    lines = [
        f"Quarantined records in the sources' last runs: {held}",
        f"Model runs: {runs} stored{label}, {failed} failed",
        f"Grading: {cycles} cycles, {grades} grades, {flagged} judges flagged by sentinels, "
        f"{looks} runs on the second-look list, {people} reviews by people "
        f"(and {practice} practice reviews of simulated runs, kept apart)",
        f"Judge splits waiting for a person: {len(waiting)} in "
        f"{len({s.run_id for s in waiting})} runs, which count nowhere until decided"
        + (" (`bench splits` lists them, `bench decide` settles one)" if waiting else ""),
        "Failed Dagster runs (last 5):",
    ]
    failures = conn.execute(
        "SELECT failed_at, job_name, message FROM run_failure_log ORDER BY failed_at DESC LIMIT 5"
    ).fetchall()
    lines += [f"  {at:%Y-%m-%d %H:%M} {job}: {message}" for at, job, message in failures]
    return lines if failures else [*lines, "  (none)"]


def print_status(
    conn: duckdb.DuckDBPyConnection,
    failing: list[FailingCheck] | None,
    out: TextIO,
    *,
    definitions: dict[str, SourceDefinition],
    cadence: dict[str, tuple[timedelta, timedelta]],
    now: datetime | None = None,
) -> None:
    """The whole report; `failing` is None when there is no Dagster instance to ask."""
    now = now or datetime.now(UTC)
    for line in release_lines(conn, now):
        print(line, file=out)
    print(
        "\nSources (last run; the date the live data states, judged against the cadence):",
        file=out,
    )
    for line in source_lines(conn, definitions, cadence, now):
        print(line, file=out)
    print("", file=out)
    for line in activity_lines(conn):
        print(line, file=out)
    print("Asset checks failing now:", file=out)
    if failing is None:
        print("  (no Dagster instance yet)", file=out)
    for check in failing or []:
        print(f"  {check.name} ({check.severity}): {check.reason}", file=out)
    if failing == []:
        print("  (none)", file=out)


def nothing_yet() -> str | None:
    """The sentence for a home nothing has run in, or None."""
    if settings.warehouse_path().is_file():
        return None
    return (
        f"nothing has run yet in BENCH_HOME={settings.bench_home()} (no warehouse at "
        f"{settings.warehouse_path()}): `bench run` builds everything"
    )


def unreadable_warehouse(path: Path, error: BaseException) -> str:
    """The one line `bench status` prints for a warehouse it cannot open or read (truncated,
    overwritten, on a failing disk), instead of a traceback or nothing."""
    from bench_pipeline.cli.summary import stopped_because

    return (
        f"The warehouse {path} cannot be read ({stopped_because(error)}): it is damaged or "
        "not a warehouse; restore it from a backup or the analyst copy, or move it aside and "
        "`bench run` builds a new one."
    )
