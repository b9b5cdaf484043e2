"""One schedule per outside source, on the cadence its definition declares.

A tick never starts a second writer of a source's tables: while a run that materialises any
of the source's assets is queued or going (its own refresh job, or a `bench run` job that
includes the source), the tick is skipped, and the skip reason names that run. The next tick
tries again. A run that has been "in progress" for longer than `STALE_AFTER` is taken to be
one whose process died without saying so (a killed `bench run` leaves its run STARTED) and no
longer holds the schedule back.
"""

import time
from collections.abc import Iterable
from datetime import timedelta

import dagster as dg

from bench_pipeline.assets.sources import source_group
from bench_pipeline.ingest.catalog import SourceDefinition

IN_PROGRESS = (
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)
STALE_AFTER = timedelta(hours=6)
"""Longer than any source refresh or `bench run` takes; an older unfinished run is dead."""


def source_job(definition: SourceDefinition):
    return dg.define_asset_job(
        name=f"refresh_{definition.name}",
        selection=dg.AssetSelection.groups(source_group(definition.name)),
        description=f"Fetch, validate and publish {definition.title}.",
    )


def _job_assets(repository: dg.RepositoryDefinition | None, job_name: str) -> frozenset:
    """The asset keys a job of this code location materialises (empty if it is not ours)."""
    if repository is None or not repository.has_job(job_name):
        return frozenset()
    return frozenset(repository.get_job(job_name).asset_layer.executable_asset_keys)


def overlapping_runs(context: dg.ScheduleEvaluationContext, job_name: str) -> list[dg.DagsterRun]:
    """Unfinished runs (not older than `STALE_AFTER`) that are `job_name` or materialise any
    asset it does: a run's own asset selection when it has one, else its whole job."""
    try:
        repository = context.repository_def
    except dg.DagsterInvariantViolationError:  # a context built without its definitions
        repository = None
    ours = _job_assets(repository, job_name)
    oldest = time.time() - STALE_AFTER.total_seconds()
    found = []
    for record in context.instance.get_run_records(dg.RunsFilter(statuses=list(IN_PROGRESS))):
        run = record.dagster_run
        if (record.start_time or record.create_timestamp.timestamp()) < oldest:
            continue
        theirs = run.asset_selection or _job_assets(repository, run.job_name)
        if run.job_name == job_name or ours & theirs:
            found.append(run)
    return found


def source_schedule(
    definition: SourceDefinition,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
) -> dg.ScheduleDefinition:
    """The source's refresh on its cadence (stopped until an operator starts it)."""
    job = source_job(definition)

    @dg.schedule(
        name=f"refresh_{definition.name}_schedule",
        job=job,
        cron_schedule=definition.cadence_cron,
        execution_timezone="UTC",
        default_status=default_status,
        description=(
            f"Refresh {definition.title} on its cadence ({definition.cadence_cron}); a tick "
            "is skipped while another run is writing the source's tables."
        ),
    )
    def refresh(context: dg.ScheduleEvaluationContext):
        busy = overlapping_runs(context, job.name)
        if busy:
            runs = ", ".join(f"{run.run_id} ({run.job_name}, {run.status.value})" for run in busy)
            return dg.SkipReason(
                f"{job.name} not started: {definition.title} is still being written by run "
                f"{runs}; a source is refreshed by one run at a time. The next tick tries again."
            )
        return dg.RunRequest(tags={"bench/source": definition.name})

    return refresh


def source_schedules(definitions: Iterable[SourceDefinition]) -> list[dg.ScheduleDefinition]:
    return [source_schedule(definition) for definition in definitions]
