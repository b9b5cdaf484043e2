"""The item boards asset: published per-item results (SWE-bench's, and every source of the
per-item results kind) as paired rank boards."""

import dagster as dg

from bench_pipeline.assets.metadata import table_asset_metadata, table_metadata, timed
from bench_pipeline.assets.registry import REGISTRY_KEY
from bench_pipeline.assets.sources import live_key
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.scores.item_boards_store import SOURCE, item_board_frames
from bench_pipeline.scores.load import store_frames

ITEM_BOARDS_KEY = dg.AssetKey(["scores", "item_boards"])
ITEM_SOURCES = sorted(n for n, d in source_definitions().items() if d.board is not None)
"""The per-item results sources (a definition with `[board]`): each publishes a board here."""


@dg.asset(
    key=ITEM_BOARDS_KEY,
    deps=[live_key(SOURCE), *(live_key(name) for name in ITEM_SOURCES), REGISTRY_KEY],
    group_name="scores",
    kinds={"duckdb", "polars"},
    owners=["team:scores"],
    description=(
        "A board per SWE-bench leaderboard with per-item results, and per per-item results "
        "source (long, wide or .eval payloads): score with an exact 95% "
        "interval, exact paired sign-flip tests over shared items with Holm, rank ranges, "
        "ties, cost per resolved instance and dominance; other entries at their published %."
    ),
)
@timed
def item_boards(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connection() as conn:
        frames = item_board_frames(conn)
        store_frames(conn, frames)
        metadata: dict = {}
        for name in frames:
            metadata |= table_metadata(conn, name)
        metadata |= table_asset_metadata(conn, "item_boards")
    return dg.MaterializeResult(metadata=metadata)
