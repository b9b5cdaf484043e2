"""Ingestion assets: for every outside source, raw → staging → validated → live, with checks.

Each asset only wires the source client and the warehouse to the plain functions of
`bench_pipeline.ingest.engine`; a rejected run is a normal outcome, reported in metadata.
"""

import functools
import itertools
from datetime import datetime, timedelta

import dagster as dg

from bench_pipeline.assets.metadata import (
    column_schema,
    outside_text,
    table_asset_metadata,
    table_metadata,
    timed,
)
from bench_pipeline.assets.versions import versioned_output
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.ingest import engine, freshness, prestage
from bench_pipeline.ingest.catalog import SourceDefinition
from bench_pipeline.ingest.sources import parser_for
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.ingest.validation import stored_failures

GROUP = "ingestion"
"""Each source's assets form the group `ingestion_<source>` (`source_group`), so the graph
names the source beside its raw, staging, validated and live nodes."""
CHECK_NON_EMPTY = "non_empty"
CHECK_UNIQUE_KEY = "unique_key"
CHECK_VALUES = "values_valid"
REFRESH_GRACE = timedelta(hours=1)
"""How long a scheduled refresh may take to land before the source counts as overdue."""
_TICK_FORMAT = "%Y-%m-%d %H:%M"  # minute keys: one per tick of any cron


def client_key(source: str) -> str:
    return f"{source}_source"


def source_group(source: str) -> str:
    return f"{GROUP}_{source}"


def live_key(source: str) -> dg.AssetKey:
    return dg.AssetKey([source, "live"])


@functools.lru_cache(maxsize=64)
def cadence_interval(cron: str) -> timedelta:
    """The longest gap between two ticks of the cadence over a year (UTC, as schedules run).

    Dagster's public time-window partitions tick exactly as its schedules do, each window
    ending where the next begins: the gaps are read from the keys (the ticks), and only the
    last window is asked for its end (asking each of 400 took about 0.3 s for a 6-hourly
    cron, paid by every process that builds the definitions). Cached: every definition of
    the source asks.
    """
    start = datetime(2025, 1, 1)
    ticks = dg.TimeWindowPartitionsDefinition(
        cron_schedule=cron, start=start, end=start + timedelta(days=366), fmt=_TICK_FORMAT
    )
    keys = ticks.get_partition_keys()[:400]
    starts = [datetime.strptime(key, _TICK_FORMAT) for key in keys]
    last = ticks.time_window_for_partition_key(keys[-1])
    return max([b - a for a, b in itertools.pairwise(starts)] + [last.end - last.start])


def warn_window(definition: SourceDefinition) -> timedelta:
    """How long after a refresh the source's freshness turns WARN: one cadence interval plus
    `REFRESH_GRACE`."""
    return cadence_interval(definition.cadence_cron) + REFRESH_GRACE


def freshness_policy(definition: SourceDefinition) -> dg.FreshnessPolicy:
    """Dagster's freshness expectation for the source's live asset, from its cadence: WARN once
    a scheduled refresh is overdue (one cadence interval plus `REFRESH_GRACE`), FAIL past the
    definition's `freshness_hours`.

    Dagster's freshness daemon judges it by the asset's last materialisation, and a rejected run
    materialises `live` too (what depends on it must still run, on the last good data). So the
    policy catches a source that stopped refreshing (schedule off, runs failing); it cannot see
    the date of the data (Dagster times materialisations only). The `fresh` check is what
    judges the data: the date the last *accepted* payload states (`ingest.freshness`), so a
    capture months old is flagged however recently it was fetched, and so is a source that
    keeps refreshing but whose data is rejected.
    """
    fail = timedelta(hours=definition.freshness_hours)
    warn = warn_window(definition)
    if warn >= fail:
        raise ValueError(
            f"{definition.name}: freshness_hours ({definition.freshness_hours}) must exceed one "
            f"interval of its cadence {definition.cadence_cron!r} plus {REFRESH_GRACE} ({warn}), "
            "or the source would be overdue between scheduled refreshes"
        )
    return dg.FreshnessPolicy.time_window(fail_window=fail, warn_window=warn)


def _hours(window: timedelta) -> str:
    return f"{window / timedelta(hours=1):g}"


def _run_metadata(run: engine.SourceRun) -> dict:
    return {
        "run_id": run.run_id,
        "status": run.status,
        "reason": outside_text(run.reason or ""),  # quotes the payload: outside text
        "mode": run.mode,
        "content_sha256": run.content_sha256 or "",
        "rows_staged": dg.MetadataValue.json(run.rows_staged),
        "rows_valid": dg.MetadataValue.json(run.rows_valid),
        "rows_quarantined": run.rows_quarantined,
    }


def raw_version(run: engine.SourceRun) -> dg.DataVersion:
    """The run that stages the payload: a new run's own id, or for a payload unchanged since
    the live run, that run's id (what the stages below last ran on, so nothing below looks
    changed).

    Not the payload's digest: with it, a payload staged before by a run that did not end
    live looked unchanged, so its new run was never staged. A run killed after staging left
    its stored output to be validated after the next fetch had closed it as abandoned
    (files removed); a rejected run an operator accepted (`bench accept`) was never judged
    again. Each new run id is news, so a new run is always staged; only the live payload
    is skipped.
    """
    return dg.DataVersion(run.run_id)


def raw_key(source: str) -> dg.AssetKey:
    return dg.AssetKey([source, "raw"])


def source_assets(definition: SourceDefinition) -> list[dg.AssetsDefinition]:
    name = definition.name
    owner = ["team:ingestion"]
    tags = {"source": name}
    policy = freshness_policy(definition)

    @dg.asset(
        key=[name, "raw"],
        group_name=source_group(name),
        kinds={"python"},
        owners=owner,
        tags=tags,
        required_resource_keys={client_key(name), "warehouse"},
        freshness_policy=policy,
        description=(
            f"{definition.title}: the payload as received, stored by SHA-256; its data version "
            "is the run that stages it, and a payload identical to the live one keeps the live "
            "run's, so it changes nothing below it. "
            f"Freshness: WARN after {_hours(warn_window(definition))} hours without a "
            f"refresh, FAIL after {definition.freshness_hours} hours; the `fresh` check on "
            "`live` dates the last accepted run."
        ),
    )
    @timed
    def raw(context: dg.AssetExecutionContext) -> dg.Output[engine.SourceRun]:
        client = getattr(context.resources, client_key(name))
        with context.resources.warehouse.connection() as conn:
            run = engine.fetch_and_store(
                conn, definition, lambda: client.fetch(definition), settings.raw_dir(), client.mode
            )
            # inside `bench run` only
            prestage.submit(conn, run, definition, parser_for(definition))
        context.log.info(engine.describe(run) if run.status != "pending" else run.run_id)
        metadata = _run_metadata(run) | {"changed": not run.unchanged}
        return versioned_output(run, metadata, raw_version(run))

    @dg.asset(
        key=[name, "staging"],
        ins={"run": dg.AssetIn(key=[name, "raw"])},
        group_name=source_group(name),
        kinds={"duckdb"},
        owners=owner,
        tags=tags,
        required_resource_keys={"warehouse"},
        description=f"{definition.title}: records parsed from the payload, values as sent.",
    )
    @timed
    def staging(context: dg.AssetExecutionContext, run: engine.SourceRun) -> dg.Output:
        ahead = prestage.take(run.run_id)
        with context.resources.warehouse.connection() as conn:
            staged = engine.stage(conn, run, definition, parser_for(definition), ahead)
        rows = {"dagster/row_count": sum(staged.rows_staged.values())}
        where = {"staged_ahead": ahead is not None}
        return dg.Output(staged, metadata=_run_metadata(staged) | rows | where)

    @dg.asset(
        key=[name, "validated"],
        ins={"run": dg.AssetIn(key=[name, "staging"])},
        group_name=source_group(name),
        kinds={"duckdb", "pandera"},
        owners=owner,
        tags=tags,
        required_resource_keys={"warehouse"},
        description=f"{definition.title}: records checked one by one; failures quarantined.",
    )
    @timed
    def validated(context: dg.AssetExecutionContext, run: engine.SourceRun) -> dg.Output:
        with context.resources.warehouse.connection() as conn:
            checked = engine.validate(conn, run, definition)
            schema = column_schema(conn, definition.tables[0])
        rows = {"dagster/row_count": sum(checked.rows_valid.values())}
        schema_md = {"dagster/column_schema": dg.MetadataValue.table_schema(schema)}
        return dg.Output(checked, metadata=_run_metadata(checked) | rows | schema_md)

    @dg.asset(
        key=live_key(name),
        ins={"run": dg.AssetIn(key=[name, "validated"])},
        group_name=source_group(name),
        kinds={"duckdb"},
        owners=owner,
        tags=tags,
        required_resource_keys={"warehouse"},
        description=(
            f"{definition.title}: live tables {', '.join(definition.tables)}, replaced in one "
            f"transaction only when the run passes the sanity check; its data version is the "
            f"accepted run the tables hold. The `fresh` check judges the date of its data. "
            f"{definition.attribution}"
        ),
    )
    @timed
    def live(context: dg.AssetExecutionContext, run: engine.SourceRun) -> dg.MaterializeResult:
        with context.resources.warehouse.connection() as conn:
            published = engine.publish(conn, run, definition)
            good = last_good_data(conn, name, engine.now_utc())
            data = freshness.live_data(conn).get(name)
            metadata = _run_metadata(published) | {
                "last_good_data": str(good[0]) if good else "never",
                "data_as_of": str(data.data_as_of) if data and data.data_as_of else "not stated",
                "data_as_of_basis": (data.basis or "") if data else "",
            }
            for table in definition.tables:
                metadata |= table_metadata(conn, table)
            metadata |= table_asset_metadata(conn, definition.tables[0])
            holds = engine.live_run_id(conn, name)
        context.log.info(engine.describe(published))
        return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(holds))

    return [raw, staging, validated, live]


def live_table_checks(definition: SourceDefinition) -> list[dg.AssetChecksDefinition]:
    """Non-empty (warning), unique keys and valid values (errors that block downstream)."""
    checks = []
    for table in definition.tables:
        spec = TABLES[table]
        checks.extend(
            [
                _check(definition.name, table, CHECK_NON_EMPTY, _non_empty, blocking=False),
                _check(definition.name, table, CHECK_UNIQUE_KEY, _unique_key(spec.key)),
                _check(definition.name, table, CHECK_VALUES, _values_valid(spec)),
            ]
        )
    return [*checks, _freshness_check(definition)]


def _freshness_check(definition: SourceDefinition) -> dg.AssetChecksDefinition:
    """Warn when the data the live tables hold is older than the source's cadence allows,
    judged by the date its payload states (`ingest.freshness`), not by when it was fetched: a
    rejected run refreshes the asset but not the data, and a capture fetched a minute ago may
    be months old. A warning only: the pipeline goes on, saying how old the data is."""

    @dg.asset_check(
        asset=live_key(definition.name),
        name="fresh",
        blocking=False,
        required_resource_keys={"warehouse"},
        description=(
            f"The data of {definition.title} (the date its last accepted payload states) is at "
            f"most {definition.freshness_hours} hours old."
        ),
    )
    def fresh(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        now = engine.now_utc()
        with context.resources.warehouse.connection() as conn:
            age = last_good_data(conn, definition.name, now)
            data = freshness.live_data(conn).get(definition.name)
        judged = freshness.judge(data.data_as_of if data else None, definition.freshness_hours, now)
        return dg.AssetCheckResult(
            passed=data is not None and judged.verdict == "fresh",
            severity=dg.AssetCheckSeverity.WARN,
            description=(
                f"{definition.name}: {judged.describe()}" if data else "no accepted data yet"
            ),
            metadata={
                "verdict": judged.verdict if data else "NO DATA",
                "data_as_of": str(data.data_as_of) if data and data.data_as_of else "not stated",
                "data_as_of_basis": (data.basis or "") if data else "",
                "hours_old": (
                    round(judged.age / timedelta(hours=1), 1) if judged.age is not None else -1
                ),
                "allowed_hours": definition.freshness_hours,
                "last_good_data": str(age[0]) if age else "never",
            },
        )

    return fresh


def last_good_data(conn, source: str, now) -> tuple[object, float] | None:
    """(when the last accepted run finished, or a later fetch found its payload unchanged;
    its age in hours), or None if never accepted. This is when the data was last *read*;
    how old the data is comes from its own date (`ingest.freshness`)."""
    row = conn.execute(
        "SELECT greatest(max(r.finished_at), max(c.checked_at)) FROM source_runs r "
        "LEFT JOIN source_checks c ON c.live_run_id = r.run_id "
        "WHERE r.source = ? AND r.status = 'accepted'",
        [source],
    ).fetchall()[0][0]
    if row is None:
        return None
    return row, (now - row).total_seconds() / 3600


def _check(source: str, table: str, what: str, evaluate, blocking: bool = True):
    @dg.asset_check(
        asset=live_key(source),
        name=f"{table}_{what}",
        blocking=blocking,
        required_resource_keys={"warehouse"},
        description=f"{table}: {what.replace('_', ' ')}.",
    )
    def check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        with context.resources.warehouse.connection() as conn:
            passed, detail = evaluate(conn, table)
        return dg.AssetCheckResult(
            passed=passed,
            severity=dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN,
            metadata={"detail": detail},
        )

    return check


def _non_empty(conn, table: str) -> tuple[bool, str]:
    count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return count > 0, f"{count} rows"


def _unique_key(key: tuple[str, ...]):
    def evaluate(conn, table: str) -> tuple[bool, str]:
        columns = ", ".join(key)
        dupes = conn.execute(
            f"SELECT count(*) FROM (SELECT {columns} FROM {table} GROUP BY ALL HAVING count(*) > 1)"
        ).fetchone()[0]
        return dupes == 0, f"{dupes} duplicated key(s) on ({columns})"

    return evaluate


def _values_valid(spec):
    def evaluate(conn, table: str) -> tuple[bool, str]:
        frame = fetch_frame(conn, f"SELECT * EXCLUDE (source_run_id) FROM {table}")
        failing = stored_failures(spec, frame)
        return failing == 0, f"{failing} row(s) fail validation"

    return evaluate
