"""Writing the registry and the best evaluation score per model into the warehouse."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from operator import attrgetter

import duckdb
import polars as pl

from bench_pipeline.core.allocation import without_collector
from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import registered, write_frame
from bench_pipeline.ingest.catalog import EvaluationSpec
from bench_pipeline.registry.candidates import all_candidates, catalogue_labs
from bench_pipeline.registry.entries import entries_placed, entry_listings, entry_tags
from bench_pipeline.registry.matching import AliasFile, Registry, registry_placing

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


def _frame(records: Sequence[object], columns: Mapping[str, str]) -> pl.DataFrame:
    """The records' attributes (`column: attribute`) as text columns, each read by one
    `map` (no dict per row: the registry writes hundreds of thousands of rows)."""
    return pl.DataFrame(
        {column: list(map(attrgetter(name), records)) for column, name in columns.items()},
        schema={column: pl.Utf8 for column in columns},
    )


def _settings(settings: Mapping[str, str]) -> str | None:
    return json.dumps(dict(settings), sort_keys=True) if settings else None


def registry_frames(
    registry: Registry, entry_models: Mapping[str, str | None] | None = None
) -> dict[str, pl.DataFrame]:
    """The registry tables' rows, by table, in the order they are written.

    `entry_models` (`entries.entries_placed`: SWE-bench entry `leaderboard NUL folder` →
    model) is `swebench_entry_models`; none leaves it empty.
    """
    models = _frame(
        list(registry.models.values()),
        {c: c for c in ("model_id", "name", "organization", "origin_source", "origin_key", "lab")},
    )
    aliases = _frame(
        registry.aliases,
        {"source": "source", "source_key": "key", "model_id": "model_id", "method": "method",
         "name": "name"},
    ).with_columns(
        pl.Series("settings", list(map(_settings, map(attrgetter("settings"), registry.aliases))),
                  pl.Utf8),
        pl.Series("host", list(map(attrgetter("host"), registry.aliases)), pl.Utf8),
        pl.Series("evidence", list(map(attrgetter("evidence"), registry.aliases)), pl.Utf8),
    )  # fmt: skip
    unmatched = _frame(
        registry.unmatched,
        {"source": "source", "source_key": "key", "name": "name",
         "normalised_name": "normalised_name", "model_id": "model_id", "reason": "reason",
         "lab": "lab"},
    )  # fmt: skip
    quarantined = _frame(
        registry.quarantined,
        {"source": "source", "source_key": "key", "name": "name", "resembles": "resembles",
         "reason": "reason"},
    )  # fmt: skip
    refused = _frame(
        registry.refused,
        {"source": "source", "source_key": "key", "model_id": "model_id",
         "would_join": "would_join", "kind": "kind", "reason": "reason"},
    )  # fmt: skip
    placed = sorted((entry_models or {}).items())
    entries = pl.DataFrame(
        {
            "leaderboard": [key.split("\0", 1)[0] for key, _ in placed],
            "folder": [key.split("\0", 1)[1] for key, _ in placed],
            "model_id": [model_id for _, model_id in placed],
        },
        schema={"leaderboard": pl.Utf8, "folder": pl.Utf8, "model_id": pl.Utf8},
    )
    return {
        "models": models,
        "model_aliases": aliases,
        "unmatched_models": unmatched,
        "quarantined_models": quarantined,
        "refused_merges": refused,
        "swebench_entry_models": entries,
    }


@without_collector
def write_registry(
    conn: duckdb.DuckDBPyConnection,
    registry: Registry,
    evaluations: tuple[EvaluationSpec, ...],
    entry_models: Mapping[str, str | None] | None = None,
) -> None:
    """Replace the registry tables (`registry_frames`) and recompute `evaluation_scores`, in
    one transaction."""
    frames = registry_frames(registry, entry_models)
    directions = pl.DataFrame(
        {
            "evaluation_id": [e.id for e in evaluations],
            "direction": [e.direction for e in evaluations],
        }
    )
    with transaction(conn), registered(conn, directions) as directions_view:
        for table, frame in frames.items():
            write_frame(conn, table, frame, mode="replace")
        conn.execute("DELETE FROM evaluation_scores")
        conn.execute(
            "INSERT INTO evaluation_scores BY NAME "
            + BEST_SCORES_SQL.format(directions=directions_view)
        )


@without_collector
def rebuild_registry(
    conn: duckdb.DuckDBPyConnection, aliases: AliasFile, evaluations: tuple[EvaluationSpec, ...]
) -> None:
    """Match every live listing and write the registry tables (`write_registry`), with the
    SWE-bench board entries placed from the same build (the item boards read them: a second
    registry build for them cost as much as this one).

    The cycle collector stays paused from the first candidate to the last row written, and
    the candidates and the registry (millions of objects at 50x the recorded data) are freed
    by reference counting before it runs again: paused stage by stage, the first collection
    after each stage walked every object still alive (about 7% of the build's CPU time).
    """
    tags = entry_tags(conn)
    labs = catalogue_labs(conn, aliases)
    listings, listing_of = entry_listings(tags, labs)
    registry, matched = registry_placing(
        all_candidates(conn, aliases, labs=labs), aliases, listings
    )
    write_registry(conn, registry, evaluations, entries_placed(tags, listing_of, matched))
