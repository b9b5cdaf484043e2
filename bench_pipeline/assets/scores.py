"""The three run-based boards: PM suite, UseCaseRank and the Navigator Index.

Each is recomputed from the stored runs, grades and reviews every time (never from stored
scores); `bench_pipeline.scores.load` does the work and can rebuild any board as of a past
date. The downloads are published by the release, from `release/published.py`.
"""

from collections.abc import Callable
from datetime import UTC, datetime

import dagster as dg
import duckdb
import polars as pl

from bench_pipeline.assets.grading import REVIEWS_KEY
from bench_pipeline.assets.item_boards import item_boards
from bench_pipeline.assets.metadata import table_asset_metadata, table_metadata, timed
from bench_pipeline.assets.navigator_v1 import NAVIGATOR_V1_KEY
from bench_pipeline.assets.pm_checks import pm_checks
from bench_pipeline.assets.runs import SUBMITTED_KEY
from bench_pipeline.assets.versions import outside_metadata, tables_version
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.scores.load import navigator_frames, pm_frames, store_frames, usecase_frames
from bench_pipeline.taskbank import load_bank

GROUP = "scores"
Frames = Callable[[duckdb.DuckDBPyConnection, datetime], dict[str, pl.DataFrame]]


def _board(key: str, deps: list[dg.AssetKey], frames: Frames, description: str):
    @dg.asset(
        key=["scores", key],
        deps=deps,
        group_name=GROUP,
        kinds={"duckdb", "polars"},
        owners=["team:scores"],
        description=description,
    )
    @timed
    def _asset(warehouse: WarehouseResource) -> dg.MaterializeResult:
        with warehouse.connection() as conn:
            metadata: dict = outside_metadata(dg.AssetKey(["scores", key]), conn)
            tables = frames(conn, datetime.now(UTC))
            store_frames(conn, tables)
            for name in tables:
                metadata |= table_metadata(conn, name)
            version = tables_version(conn, list(tables))
            metadata |= table_asset_metadata(conn, next(iter(tables)))
        return dg.MaterializeResult(metadata=metadata, data_version=version)

    return _asset


pm_board = _board(
    "pm_suite", [REVIEWS_KEY], lambda conn, now: pm_frames(conn, load_bank(), now),
    "PM suite: run, task, category and setup scores with 95% margins, ranked or provisional, "
    "critical-failure caps, and drop verdicts. Runs wait until graded and reviewed.",
)  # fmt: skip
usecase_board_asset = _board(
    "usecase_rank", [SUBMITTED_KEY, REVIEWS_KEY], usecase_frames,
    "UseCaseRank: submitted runs scored on five metrics, trust, hard flags (runs under review "
    "count nowhere), recency-weighted group scores with 90% intervals, Bradley-Terry blend "
    "and trend arrows against the board of 7 days before.",
)  # fmt: skip
navigator_board_asset = _board(
    "navigator_index", [REVIEWS_KEY, NAVIGATOR_V1_KEY],
    lambda conn, now: navigator_frames(conn, load_bank(), now),
    "Navigator Index v2: category scores and the Index, exact paired sign-flip tests with "
    "Holm, rank ranges, ties, dominance, runs waiting on a judge split; and classic v1: "
    "results with the display rule, the fit ranking, the library.",
)  # fmt: skip
SCORE_ASSETS = [pm_board, usecase_board_asset, navigator_board_asset, item_boards, pm_checks]
SCORE_KEYS = [a.key for a in SCORE_ASSETS]
