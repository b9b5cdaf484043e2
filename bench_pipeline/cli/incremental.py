"""What `bench run` has to recompute: the assets whose inputs changed since they last ran.

An asset is out of date when it was never materialised, its last attempt failed, a blocking
check of it failed last time (so the check runs again before anything below it), its code
version changed (`assets/versions.py`), a dependency's data version differs from the one
Dagster recorded when it last ran, what it reads beside its inputs changed (files outside the
warehouse, or tables written beside the asset graph: their digest against the one it
recorded), or a dependency is itself out of date. Raw fetches are
not judged here: `bench run` always fetches, and a payload identical to the live one keeps
its data version, so nothing below it looks changed.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import dagster as dg
import duckdb

from bench_pipeline.assets.versions import OUTSIDE_INPUTS_KEY, outside_inputs

DATA_VERSION_TAG = "dagster/data_version"
CODE_VERSION_TAG = "dagster/code_version"
INPUT_VERSION_TAG = "dagster/input_data_version/"
# Dagster's documented materialisation tags (their constants live in a private module).


@dataclass
class Plan:
    """The out-of-date assets, each with the first reason found."""

    reasons: dict[dg.AssetKey, str] = field(default_factory=dict)

    @property
    def keys(self) -> set[dg.AssetKey]:
        return set(self.reasons)


def _version(entry) -> str | None:
    mat = entry.last_materialization if entry is not None else None
    return mat.asset_materialization.tags.get(DATA_VERSION_TAG) if mat else None


def out_of_date(
    definitions: dg.Definitions,
    instance: dg.DagsterInstance,
    conn: duckdb.DuckDBPyConnection,
    candidates: Collection[dg.AssetKey],
    changed: Collection[dg.AssetKey] = (),
) -> Plan:
    """Which of `candidates` must be recomputed (see the module docstring). `changed` are
    assets about to change in this run without being candidates (model-run partitions to
    launch): their dependents count as out of date."""
    graph = definitions.resolve_asset_graph()
    keys = list(graph.toposorted_asset_keys)
    entries = {
        record.asset_entry.asset_key: record.asset_entry
        for record in instance.get_asset_records(keys)
    }
    plan = Plan()
    pending = set(changed)
    blocked = _failed_blocking_checks(graph, instance)
    for key in keys:
        if key not in candidates:
            continue
        reason = blocked.get(key) or _reason(graph, key, entries, pending | plan.keys, conn)
        if reason:
            plan.reasons[key] = reason
    return plan


def _failed_blocking_checks(graph, instance: dg.DagsterInstance) -> dict[dg.AssetKey, str]:
    """Assets whose blocking check failed at its latest evaluation, with that check."""
    keys = [k for k in graph.asset_check_keys if graph.get_check_spec(k).blocking]
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    found: dict[dg.AssetKey, str] = {}
    for key, record in latest.items():
        # a check planned but never evaluated (its run failed first) is "last attempt failed"
        if getattr(record.evaluation, "passed", True) is False:
            found.setdefault(key.asset_key, f"its blocking check {key.name} failed")
    return found


def _reason(graph, key, entries, dirty, conn) -> str | None:
    entry = entries.get(key)
    mat = entry.last_materialization if entry is not None else None
    if mat is None:
        return "never materialised"
    # the latest run that planned it is not the one that materialised it: it failed or
    # skipped it (local storage keeps no failure records, only that run's id)
    if entry.last_run_id is not None and entry.last_run_id != mat.run_id:
        return "its last attempt failed"
    materialization = mat.asset_materialization
    node = graph.get(key)
    if node.code_version and materialization.tags.get(CODE_VERSION_TAG) != node.code_version:
        return "its code changed"
    for dep in sorted(node.parent_keys, key=lambda k: k.to_user_string()):
        name = dep.to_user_string()
        if dep in dirty:
            return f"{name} is recomputed"
        if graph.get(dep).is_partitioned:
            continue  # partition changes arrive through `changed`
        recorded = materialization.tags.get(INPUT_VERSION_TAG + name)
        if recorded != _version(entries.get(dep)):
            return f"{name} changed"
    digest = outside_inputs(key, conn)
    if digest is not None:
        recorded = materialization.metadata.get(OUTSIDE_INPUTS_KEY)
        if recorded is None or recorded.value != digest:
            return "what it reads beside its inputs changed"
    return None


def partitions_with_work(conn: duckdb.DuckDBPyConnection, keys: list[str]) -> set[str]:
    """The model-run partitions among `keys` with a planned run not stored yet: a batch of
    the others would only skip past stored runs, so `bench run` does not launch them."""
    from bench_pipeline.runs.plan import setup_partition_key, work_items
    from bench_pipeline.runs.proposals import with_proposals
    from bench_pipeline.runs.store import stored_run_ids
    from bench_pipeline.taskbank import load_bank
    from bench_pipeline.taskbank.setups import load_setups

    items = work_items(keys, load_bank(), with_proposals(conn, load_setups()))
    done = stored_run_ids(conn, {item.partition_key for item in items})
    return {setup_partition_key(item.setup) for item in items if item.run_id not in done}


def stretches(keys: list[str], wanted: Collection[str]) -> list[tuple[str, str]]:
    """The first and last key of each unbroken stretch of `keys` (registered order) that are
    all `wanted`: one Dagster run covers a range, and every key in it counts as run."""
    found: list[tuple[str, str]] = []
    start: str | None = None
    previous = ""
    for key in keys:
        if key in wanted:
            start = start or key
        elif start is not None:
            found.append((start, previous))
            start = None
        previous = key
    if start is not None:
        found.append((start, previous))
    return found
