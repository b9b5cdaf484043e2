"""Task bank, setups, dated rates, executed model runs (partitioned) and submitted runs.

`model_runs` is partitioned by setup, each partition keyed by the setup's name
(`<model record>@<harness>`, dynamic partitions registered by `task_bank` as the setups
change), with every current PM and Navigator case version inside: Dagster's bookkeeping grows
with the setups, not the bank. A backfill over many partitions runs as one Dagster run
(single-run backfill policy): the calls of all its partitions share one concurrency limit
instead of one process each.
"""

import time
from datetime import UTC, datetime

import dagster as dg
from pydantic import Field

from bench_pipeline.assets.metadata import table_asset_metadata, table_metadata, timed
from bench_pipeline.assets.sources import live_key
from bench_pipeline.assets.versions import outside_metadata, tables_version
from bench_pipeline.core import settings
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.batch import run_model_batch, store_task_bank
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.runs.demo_submissions import DEMO_SUBMITTER, store_demo_submissions
from bench_pipeline.runs.execute import BatchReport
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.runs.plan import planned_partitions
from bench_pipeline.runs.rates import rates_by_api_id, refresh_model_rates
from bench_pipeline.runs.shared import configured_store
from bench_pipeline.runs.submitters import demo_submitters
from bench_pipeline.site.markup import usd
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

GROUP = "runs"
PROGRESS_SECONDS = 2.0
PROGRESS_PREFIX = "model runs:"


def progress_line(report: BatchReport) -> str:
    """One progress message (`bench run` prints the latest ones it finds in the run log)."""
    finished = report.skipped + report.recorded + len(report.failures)
    return (
        f"{PROGRESS_PREFIX} {finished}/{report.planned} runs, {report.calls} model calls, "
        f"{report.from_cache} from cache, cost so far {usd(report.cost_usd)}"
    )


MODEL_RUN_PARTITIONS_NAME = "model_runs"
MODEL_RUN_PARTITIONS = dg.DynamicPartitionsDefinition(name=MODEL_RUN_PARTITIONS_NAME)
TASK_BANK_KEY = dg.AssetKey(["runs", "task_bank"])
RATES_KEY = dg.AssetKey(["runs", "model_rates"])
MODEL_RUNS_KEY = dg.AssetKey(["runs", "model_runs"])
SUBMITTED_KEY = dg.AssetKey(["runs", "submitted_runs"])


def register_partitions(instance: dg.DagsterInstance, keys: list[str]) -> list[str]:
    """Make the instance's partitions exactly `keys`: add the new ones, drop keys of case
    versions or setups no longer in the config or proposed (their runs stay in the
    warehouse). Returns the keys added."""
    name = MODEL_RUN_PARTITIONS_NAME
    known = instance.get_dynamic_partitions(name)
    wanted = set(keys)
    for stale in (key for key in known if key not in wanted):
        instance.delete_dynamic_partition(name, stale)
    new = [key for key in keys if key not in set(known)]
    if new:
        instance.add_dynamic_partitions(name, new)
    return new


def current_partitions() -> list[str]:
    """Every partition key of the task bank and setups in the repository now."""
    return planned_partitions(load_bank(), load_setups())


@dg.asset(
    key=TASK_BANK_KEY,
    group_name=GROUP,
    kinds={"duckdb"},
    owners=["team:runs"],
    description=(
        "The task bank (tasks/) and the setups (setups/, plus those proposed for models new "
        "on OpenRouter, marked `proposed`) as loaded: every case version and setup ever "
        "seen, which are current, and one model-run partition per executable setup, named "
        "`<model record>@<harness>`. Private cases' text is never stored."
    ),
)
@timed
def task_bank(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    with warehouse.connection() as conn:
        outside = outside_metadata(TASK_BANK_KEY, conn)
        stored = store_task_bank(conn, load_bank(), load_setups())
        new = register_partitions(context.instance, stored.partitions)
        metadata = table_metadata(conn, "task_cases") | table_metadata(conn, "setups")
        metadata |= table_asset_metadata(conn, "task_cases")
        version = tables_version(conn, ["task_cases", "setups"])
    return dg.MaterializeResult(
        data_version=version,
        metadata=metadata
        | outside
        | {
            "new partitions": len(new),
            "proposed setups": len(stored.catalog.proposed),
            **stored.counts,
        },
    )


@dg.asset(
    key=RATES_KEY,
    deps=[live_key("openrouter_models")],
    group_name=GROUP,
    kinds={"duckdb"},
    owners=["team:runs"],
    description=(
        "Dated rates by exact API id: each accepted OpenRouter ingestion (effective from its "
        "day, kept for good) plus setups/pricing.toml, which wins on the same day."
    ),
)
@timed
def model_rates(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connection() as conn:
        outside = outside_metadata(RATES_KEY, conn)
        rows = refresh_model_rates(conn)
        metadata = table_metadata(conn, "model_rates") | table_asset_metadata(conn, "model_rates")
        version = tables_version(conn, ["model_rates"])
    return dg.MaterializeResult(
        metadata=metadata | outside | {"rate rows": rows}, data_version=version
    )


class ModelRunsConfig(dg.Config):
    """Launchpad options of a model-run backfill."""

    cases: list[str] = Field(
        default_factory=list,
        description="Only these cases of each setup, as `<suite>:<case id>` (default: every "
        "current PM and Navigator case version).",
    )


@dg.asset(
    key=MODEL_RUNS_KEY,
    deps=[TASK_BANK_KEY, RATES_KEY],
    partitions_def=MODEL_RUN_PARTITIONS,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name=GROUP,
    kinds={"duckdb"},
    owners=["team:runs"],
    description=(
        "One setup's answers to every current PM and Navigator case version (every input, "
        "three repeats for a noisy case), costed at the rate in effect on the run date. "
        "Resumable: a stored run is never run again and a cached response is never paid for "
        "twice; `bench run` launches only the partitions with runs to make."
    ),
)
@timed
def model_runs(
    context: dg.AssetExecutionContext,
    config: ModelRunsConfig,
    warehouse: WarehouseResource,
    models: ModelCallsResource,
) -> dg.MaterializeResult:
    keys = list(context.partition_keys)
    last = [0.0]

    def progress(report: BatchReport) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            context.log.info(progress_line(report))

    report = run_model_batch(
        keys,
        warehouse.connection,
        models.providers(),
        bank=load_bank(),
        setups=load_setups(),
        locks=warehouse.locks_dir(),
        concurrency=models.concurrency,
        progress=progress,
        waiting=lambda key: context.log.info(f"waiting for partition {key}: another run holds it"),
        cases=config.cases,
        store=configured_store(),
    )
    with warehouse.connection() as conn:
        metadata = table_metadata(conn, "model_runs") | table_asset_metadata(conn, "model_runs")
    summary: dict[str, int | float | str] = {
        "partitions": len(keys),
        "runs planned": report.planned,
        "runs resumed past": report.skipped,
        "runs recorded": report.recorded,
        "model calls": report.calls,
        "served from cache": report.from_cache,
        "cost of this batch (USD)": format_usd(report.cost_usd),
        "runs without a known cost": report.unpriced,
        "failed runs": len(report.failures),
        "model mode": models.mode,
        "seconds": round(report.seconds, 2),
    }
    context.log.info(progress_line(report))
    if report.failures:
        first = next(iter(report.failures.values()))
        raise dg.Failure(
            description=f"{len(report.failures)} runs failed for good (first: {first}); "
            "the others are stored, and a rerun resumes from them",
            metadata=summary,
        )
    return dg.MaterializeResult(metadata=metadata | summary)


@dg.asset(
    key=SUBMITTED_KEY,
    deps=[TASK_BANK_KEY, RATES_KEY],
    group_name=GROUP,
    kinds={"duckdb"},
    owners=["team:runs"],
    description=(
        "Use-case runs submitted as JSON files in $BENCH_HOME/inbox/submissions/: valid ones "
        "kept (costed from our dated rates), each rejected file recorded with its field and "
        "reason; only files signed by a registered submitter ($BENCH_SUBMITTERS) are taken. "
        "Files are never moved; a file already recorded is not recorded again; every "
        "file is read before the warehouse is opened. In simulated model mode (the offline "
        "demo) also the demo's simulated runs, labelled simulated and ranked apart."
    ),
)
@timed
def submitted_runs(
    warehouse: WarehouseResource, models: ModelCallsResource
) -> dg.MaterializeResult:
    with warehouse.connection() as conn:
        outside = outside_metadata(SUBMITTED_KEY, conn)
    bank = load_bank()
    report = ingest_inbox(warehouse.connection, settings.submissions_inbox(), bank)
    demo = 0
    with warehouse.connection() as conn:
        if models.mode == "simulated":
            records = list(load_setups().models.values())
            demo = store_demo_submissions(
                conn,
                bank,
                records,
                rates_by_api_id(conn, (r.api_id for r in records)),
                datetime.now(UTC),
                demo_submitters(settings.demo_submitters_path(), DEMO_SUBMITTER),
            )
        metadata = table_metadata(conn, "submitted_runs")
        metadata |= table_asset_metadata(conn, "submitted_runs")
        version = tables_version(conn, ["submitted_runs", "submission_files"])
    rejected = {r.source or "?": r.reason for r in report.rejected}
    return dg.MaterializeResult(
        data_version=version,
        metadata=metadata
        | outside
        | {
            "accepted": len(report.accepted),
            "rejected": len(report.rejected),
            "seen before": report.seen_before,
            "waiting for the submitters file": len(report.waiting),
            "simulated demo runs added": demo,
            "rejections": dg.MetadataValue.json(rejected),
        },
    )


RUN_ASSETS = [task_bank, model_rates, model_runs, submitted_runs]
