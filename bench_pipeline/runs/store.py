"""Runs, the task bank and the setups in the warehouse (plain functions over a connection)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows, registered
from bench_pipeline.taskbank import TaskBank
from bench_pipeline.taskbank.setups import SetupCatalog

RUN_COLUMNS = (
    "run_id", "partition_key", "setup_id", "suite", "case_id", "case_version", "input_id",
    "repeat", "run_date", "request_hash", "output", "finish_reason", "max_tokens",
    "prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens",
    "reasoning_tokens", "cost_usd", "cost_warnings", "wall_seconds", "ttft_seconds",
    "retries", "provider", "simulated", "evidence_sha256", "recorded_at",
)  # fmt: skip


_CASE_UPDATE = ("suite", "case_id", "version", "title", "category", "private", "noisy", "core",
                "prototype")  # fmt: skip
_CASE_UPDATE_SCHEMA = pa.schema(
    [(name, pa.bool_() if name in _CASE_UPDATE[5:] else pa.string()) for name in _CASE_UPDATE]
)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _delete_runs(conn: duckdb.DuckDBPyConnection, table: str, run_ids: Sequence[str]) -> None:
    if run_ids:
        conn.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT unnest(?))", [list(run_ids)])


def store_runs(conn: duckdb.DuckDBPyConnection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write finished runs (replacing any row of the same run id) and clear their failures."""
    ids = [row["run_id"] for row in rows]
    with transaction(conn):
        _delete_runs(conn, "model_runs", ids)
        _delete_runs(conn, "run_failures", ids)
        insert_rows(conn, "model_runs", RUN_COLUMNS, [[r[c] for c in RUN_COLUMNS] for r in rows])


def store_failures(conn: duckdb.DuckDBPyConnection, failures: Mapping[str, str]) -> None:
    """Record runs that failed for good (their last failure only)."""
    rows = [[run_id, error.split(": ", 1)[0], error, _now()] for run_id, error in failures.items()]
    with transaction(conn):
        _delete_runs(conn, "run_failures", list(failures))
        insert_rows(conn, "run_failures", ("run_id", "partition_key", "error", "failed_at"), rows)


def stored_run_ids(conn: duckdb.DuckDBPyConnection, partition_keys: Iterable[str]) -> set[str]:
    """Run ids already stored for these partitions."""
    keys = sorted(set(partition_keys))
    if not keys:
        return set()
    rows = conn.execute(
        "SELECT run_id FROM model_runs WHERE partition_key IN (SELECT unnest(?))", [keys]
    ).fetchall()
    return {run_id for (run_id,) in rows}


def store_bank_and_setups(
    conn: duckdb.DuckDBPyConnection, bank: TaskBank, catalog: SetupCatalog
) -> dict[str, int]:
    """Record every case version and setup seen (new ones added, `current` refreshed); the
    text of cases is not stored (private cases never leave the task bank files)."""
    now = _now()
    case_rows = [
        [c.suite, c.id, c.version, c.task, c.title, c.category, c.provenance, c.private,
         c.noisy, c.core, c.prototype, len(c.prompts()), True, now]
        for c in bank
    ]  # fmt: skip
    setup_rows = [
        [s.setup_id, s.label, s.model.id, s.model.api_id, s.model.company,
         s.model.reasoning_effort, s.model.temperature, s.model.context_limit,
         s.model.pricing_date, s.model.local, s.model.base_url, s.harness.id,
         s.harness.environment, s.executable, True, now]
        for s in catalog.setups
    ]  # fmt: skip
    with transaction(conn):
        conn.execute("UPDATE task_cases SET current = false")
        conn.execute("UPDATE setups SET current = false")
        seen_cases = pa.Table.from_pylist(
            [
                dict(zip(_CASE_UPDATE, (*r[:3], r[4], r[5], *r[7:11]), strict=True))
                for r in case_rows
            ],
            schema=_CASE_UPDATE_SCHEMA,
        )
        with registered(conn, seen_cases) as view:
            conn.execute(
                f"UPDATE task_cases SET current = true, title = v.title, category = v.category, "
                f"private = v.private, noisy = v.noisy, core = v.core, prototype = v.prototype "
                f"FROM {view} AS v WHERE task_cases.suite = v.suite "
                f"AND task_cases.case_id = v.case_id AND task_cases.version = v.version"
            )
        known = set(conn.execute("SELECT suite, case_id, version FROM task_cases").fetchall())
        insert_rows(
            conn, "task_cases",
            ("suite", "case_id", "version", "task", "title", "category", "provenance",
             "private", "noisy", "core", "prototype", "inputs", "current", "first_loaded"),
            [r for r in case_rows if tuple(r[:3]) not in known],
        )  # fmt: skip
        conn.execute(
            "UPDATE setups SET current = true WHERE setup_id IN (SELECT unnest(?))",
            [[r[0] for r in setup_rows]],
        )
        seen = {s for (s,) in conn.execute("SELECT setup_id FROM setups").fetchall()}
        insert_rows(
            conn, "setups",
            ("setup_id", "label", "model_record", "api_id", "company", "reasoning_effort",
             "temperature", "context_limit", "pricing_date", "local", "base_url", "harness",
             "environment", "executable", "current", "first_loaded"),
            [r for r in setup_rows if r[0] not in seen],
        )  # fmt: skip
    return {"case_versions": len(case_rows), "setups": len(setup_rows)}
