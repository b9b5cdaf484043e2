"""Writing the registry and the best evaluation score per model into the warehouse."""

from __future__ import annotations

import json
from collections.abc import Mapping

import duckdb
import polars as pl

from bench_pipeline.core.allocation import without_collector
from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import registered, write_frame
from bench_pipeline.ingest.catalog import EvaluationSpec
from bench_pipeline.registry.matching import Registry

BEST_SCORES_SQL = """
WITH scored AS (
    SELECT a.model_id, r.evaluation_id, r.score, d.direction, a.settings, r.model_version,
           r.agent, r.row_key, r.source_file, r.source_run_id,
           row_number() OVER (
               PARTITION BY a.model_id, r.evaluation_id
               ORDER BY CASE WHEN d.direction = 'lower' THEN r.score ELSE -r.score END,
                        r.model_version, r.row_key
           ) AS place,
           count(*) OVER (PARTITION BY a.model_id, r.evaluation_id) AS rows_considered
    FROM evaluation_rows r
    JOIN model_aliases a ON a.source = 'epoch' AND a.source_key = r.model_version
    JOIN {directions} d USING (evaluation_id)
)
SELECT * EXCLUDE (place) FROM scored WHERE place = 1
"""


def _frame(rows: list[dict], columns: list[str]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={c: pl.Utf8 for c in columns}, orient="row")


@without_collector
def write_registry(
    conn: duckdb.DuckDBPyConnection,
    registry: Registry,
    evaluations: tuple[EvaluationSpec, ...],
    entry_models: Mapping[str, str | None] | None = None,
) -> None:
    """Replace the registry tables and recompute `evaluation_scores`, in one transaction.

    `entry_models` (`entries.entries_placed`: SWE-bench entry `leaderboard NUL folder` →
    model) replaces `swebench_entry_models`; none leaves it empty.
    """
    models = _frame(
        [vars(m) for m in registry.models.values()],
        ["model_id", "name", "organization", "origin_source", "origin_key", "lab"],
    )
    aliases = _frame(
        [
            {
                "source": a.source,
                "source_key": a.key,
                "model_id": a.model_id,
                "method": a.method,
                "name": a.name,
                "settings": json.dumps(dict(a.settings), sort_keys=True) if a.settings else None,
                "host": a.host,
            }
            for a in registry.aliases
        ],
        ["source", "source_key", "model_id", "method", "name", "settings", "host"],
    )
    unmatched = _frame(
        [
            {
                "source": u.source,
                "source_key": u.key,
                "name": u.name,
                "normalised_name": u.normalised_name,
                "model_id": u.model_id,
                "reason": u.reason,
                "lab": u.lab,
            }
            for u in registry.unmatched
        ],
        ["source", "source_key", "name", "normalised_name", "model_id", "reason", "lab"],
    )
    quarantined = _frame(
        [
            {
                "source": q.source,
                "source_key": q.key,
                "name": q.name,
                "resembles": q.resembles,
                "reason": q.reason,
            }
            for q in registry.quarantined
        ],
        ["source", "source_key", "name", "resembles", "reason"],
    )
    placed = sorted((entry_models or {}).items())
    entries = pl.DataFrame(
        {
            "leaderboard": [key.split("\0", 1)[0] for key, _ in placed],
            "folder": [key.split("\0", 1)[1] for key, _ in placed],
            "model_id": [model_id for _, model_id in placed],
        },
        schema={"leaderboard": pl.Utf8, "folder": pl.Utf8, "model_id": pl.Utf8},
    )
    directions = pl.DataFrame(
        {
            "evaluation_id": [e.id for e in evaluations],
            "direction": [e.direction for e in evaluations],
        }
    )
    with transaction(conn), registered(conn, directions) as directions_view:
        for table, frame in (
            ("models", models),
            ("model_aliases", aliases),
            ("unmatched_models", unmatched),
            ("quarantined_models", quarantined),
            ("swebench_entry_models", entries),
        ):
            write_frame(conn, table, frame, mode="replace")
        conn.execute("DELETE FROM evaluation_scores")
        conn.execute(
            "INSERT INTO evaluation_scores BY NAME "
            + BEST_SCORES_SQL.format(directions=directions_view)
        )
