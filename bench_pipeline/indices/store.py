"""Computing the Known Good Index and capability indices from the warehouse, and storing
them with the inputs they were computed from (the indices are relative: a new model moves
everyone, so each value keeps the computation that produced it)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

import duckdb
import polars as pl

from bench_pipeline.core.clock import now_utc
from bench_pipeline.core.warehouse import fetch_frame, transaction
from bench_pipeline.core.writer import write_frame
from bench_pipeline.indices.intervals import capability_intervals, known_good_intervals
from bench_pipeline.indices.rules import (
    capability_indices,
    known_good_index,
    normalise,
)

PUBLISHER = "Epoch AI"
# The best score per model and evaluation, with the standard error and log viewer link of the
# publisher's row it was taken from (the evidence the pages link and the intervals use).
SCORES_SQL = """
SELECT s.model_id, s.evaluation_id, s.score, s.source_run_id, r.stderr, r.log_url
FROM evaluation_scores s
LEFT JOIN evaluation_rows r USING (evaluation_id, row_key)
ORDER BY s.model_id, s.evaluation_id
"""


@dataclass(frozen=True)
class IndexComputation:
    computation_id: str
    source_run_ids: tuple[str, ...]
    inputs_sha256: str
    normalised: pl.DataFrame
    known_good: pl.DataFrame
    capability: pl.DataFrame


def inputs_digest(scores: pl.DataFrame) -> str:
    """A digest of exactly the scores the indices were computed from."""
    digest = hashlib.sha256()
    for row in (
        scores.select("model_id", "evaluation_id", "score")
        .sort("model_id", "evaluation_id")
        .iter_rows()
    ):
        digest.update(f"{row[0]}\t{row[1]}\t{row[2]!r}\n".encode())
    return digest.hexdigest()


def compute(conn: duckdb.DuckDBPyConnection, directions: Mapping[str, str]) -> IndexComputation:
    scores = fetch_frame(conn, SCORES_SQL)
    names = fetch_frame(conn, "SELECT model_id, name AS model_name FROM models")
    normalised = (
        normalise(scores, directions)
        if scores.height
        else scores.with_columns(pl.lit(None, pl.Float64).alias("normalised"))
    )
    digest = inputs_digest(scores)
    computation_id = f"indices-{digest[:16]}"

    def named(frame: pl.DataFrame) -> pl.DataFrame:
        frame = frame.join(names, on="model_id", how="left")
        return frame.select(
            "model_id",
            "model_name",
            *[c for c in frame.columns if c not in ("model_id", "model_name")],
        ).with_columns(pl.lit(computation_id).alias("computation_id"))

    return IndexComputation(
        computation_id=computation_id,
        source_run_ids=tuple(sorted(set(scores.get_column("source_run_id").to_list()))),
        inputs_sha256=digest,
        normalised=normalised.with_columns(pl.lit(PUBLISHER).alias("publisher")),
        known_good=named(known_good_intervals(known_good_index(normalised), scores)),
        capability=named(capability_intervals(capability_indices(normalised), scores)),
    )


def store(conn: duckdb.DuckDBPyConnection, result: IndexComputation) -> None:
    """Replace the current index tables; append history only for a new computation."""
    frames = {
        "evaluation_normalised": result.normalised,
        "known_good_index": result.known_good,
        "capability_indices": result.capability,
    }
    with transaction(conn):
        for table, frame in frames.items():
            write_frame(conn, table, frame, mode="replace")
        seen = conn.execute(
            "SELECT count(*) FROM index_computations WHERE computation_id = ?",
            [result.computation_id],
        ).fetchall()[0][0]
        if not seen:
            conn.execute(
                "INSERT INTO index_computations VALUES (?, ?, ?, ?, ?)",
                [
                    result.computation_id,
                    now_utc(),
                    json.dumps(list(result.source_run_ids)),
                    result.inputs_sha256,
                    result.known_good.filter(pl.col("eligible")).height,
                ],
            )
            # the live table now holds exactly this computation's rows
            conn.execute(
                "INSERT INTO known_good_index_history SELECT computation_id, model_id, "
                "known_good_index, index_components FROM known_good_index"
            )
