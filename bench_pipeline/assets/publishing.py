"""One publisher at a time: who may write the release, the site and the analyst copy.

Publishing has two paths, `bench run` and the UI's automation (and an operator's launch from
the UI), and one owner at a time: the BENCH_HOME's run lock, `build/bench-run.lock` (see
`bench_pipeline.cli.run_lock`). A `bench run` holds it from start to end; a publishing asset
run by anything else takes it for its own step and fails at once, naming the holder, when it
is held. So a `bench run` never publishes beside an automation run, and an automation run
never publishes from a warehouse a `bench run` is half-way through.

Automation also publishes nothing past a failed upstream: while any asset upstream of any
publishing asset (or one of them itself) has a latest planned run that failed and has not
materialised since, no publishing asset's automation condition is true (they publish
together: the analyst copy holds every table). Automation may
still recompute everything else; once the failed step is fixed and rerun (a `bench run`, or
the asset materialised from the UI), publishing follows again.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Collection, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import dagster as dg

from bench_pipeline.cli.run_lock import (
    HOST_TAG,
    PID_TAG,
    RunLockedError,
    exclusive_run,
    lock_path,
    running_run,
    who_runs,
)
from bench_pipeline.core import settings

FAILED = frozenset({dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED})


def failed_assets(instance: dg.DagsterInstance, keys: Collection[dg.AssetKey]) -> dict:
    """Each of `keys` whose latest planned materialisation belongs to a failed or canceled run
    and that has not materialised since, with that run's id."""
    pending: dict[dg.AssetKey, str] = {}
    latest = {
        r.asset_entry.asset_key: r.asset_entry for r in instance.get_asset_records(list(keys))
    }
    for key in keys:
        planned = instance.get_latest_planned_materialization_info(key)
        if planned is None:
            continue
        entry = latest.get(key)
        done = entry.last_materialization_storage_id if entry is not None else None
        if (done or 0) < planned.storage_id:
            pending[key] = planned.run_id
    if not pending:
        return {}
    runs = instance.get_runs(dg.RunsFilter(run_ids=sorted(set(pending.values()))))
    failed = {run.run_id for run in runs if run.status in FAILED}
    return {key: run_id for key, run_id in pending.items() if run_id in failed}


def upstream_of(graph, keys: Collection[dg.AssetKey]) -> set[dg.AssetKey]:
    """`keys` and every asset above any of them in `graph`."""
    found, frontier = set(keys), list(keys)
    while frontier:
        for parent in graph.get(frontier.pop()).parent_keys:
            if parent not in found:
                found.add(parent)
                frontier.append(parent)
    return found


def owner(holder: dict) -> str:
    """The holder of the run lock, for a message."""
    return who_runs(holder) if holder.get("by") else f"a `bench run` ({who_runs(holder)})"


def publishing_blocked(
    instance: dg.DagsterInstance, graph, published: Collection[dg.AssetKey], home: Path
) -> str | None:
    """Why automation must not publish now, or None when it may. `published` are the
    publishing assets: they publish together (the analyst copy holds every table), so a
    failure above any of them holds back all."""
    holder = running_run(home)
    if holder is not None:
        return f"publishing is owned by {owner(holder)} while it runs"
    failed = failed_assets(instance, upstream_of(graph, published))
    if failed:
        named = ", ".join(
            f"{k.to_user_string()} (run {run_id})" for k, run_id in sorted(failed.items())[:5]
        )
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        return (
            f"nothing is published past a failed upstream: {named}{more} failed and has not "
            "been rerun; fix it and rerun (`bench run`)"
        )
    return None


class PublishingOpen(dg.AutomationCondition):
    """True for a publishing asset only while `publishing_blocked` gives no reason."""

    def __init__(self, published: Collection[dg.AssetKey]) -> None:
        self.published = frozenset(published)

    @property
    def name(self) -> str:
        return "publishing_open"

    @property
    def description(self) -> str:
        return "no `bench run` is running and nothing upstream has an unfixed failed run"

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        reason = publishing_blocked(
            context.asset_graph_view.instance, context.asset_graph, self.published,
            settings.bench_home(),
        )  # fmt: skip
        subset = context.get_empty_subset() if reason else context.candidate_subset
        return dg.AutomationResult(context=context, true_subset=subset)


def in_bench_run(tags: dict[str, str]) -> bool:
    """Whether a run with `tags` is executed by the `bench run` of this process (which holds
    the BENCH_HOME's run lock already)."""
    return tags.get(PID_TAG) == str(os.getpid()) and tags.get(HOST_TAG) == socket.gethostname()


@contextmanager
def publishing(context: dg.AssetExecutionContext) -> Iterator[None]:
    """Own publishing for the block: the `bench run` executing this run owns it already;
    anything else takes the BENCH_HOME's run lock, and fails naming its holder when held."""
    if in_bench_run(dict(context.run.tags)):
        yield
        return
    home = settings.bench_home()
    asset = context.asset_key.to_user_string()
    with ExitStack() as owned:
        try:
            owned.enter_context(exclusive_run(home, by=f"Dagster run {context.run_id} ({asset})"))
        except RunLockedError:
            holder = running_run(home)
            who = owner(holder) if holder else "another publisher"
            raise dg.Failure(
                description=(
                    f"{asset} not published: publishing is owned by {who} (lock "
                    f"{lock_path(home)}); one publisher at a time, and the owner publishes "
                    "what this run would have."
                )
            ) from None
        yield
