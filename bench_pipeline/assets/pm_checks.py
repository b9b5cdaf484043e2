"""The PM suite's checks: the contamination check per setup and task admission per task."""

import dagster as dg

from bench_pipeline.assets.metadata import table_metadata, timed
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.scores.load import store_frames
from bench_pipeline.scores.pm_checks_store import pm_check_frames

PM_SUITE_KEY = dg.AssetKey(["scores", "pm_suite"])
PM_CHECKS_KEY = dg.AssetKey(["scores", "pm_checks"])


@dg.asset(
    key=PM_CHECKS_KEY,
    deps=[PM_SUITE_KEY],
    group_name="scores",
    kinds={"duckdb", "polars"},
    owners=["team:scores"],
    description=(
        "PM suite checks: per setup, public against private cases of the same tasks or "
        "categories (paired gap, exact sign-flip test, Holm; flagged when far better on "
        "public cases), and per task whether its rubric separates setups (share of setup "
        "pairs ordered as the rest of the suite orders them, exact permutation test)."
    ),
)
@timed
def pm_checks(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connection() as conn:
        frames = pm_check_frames(conn)
        store_frames(conn, frames)
        metadata: dict = {}
        for name in frames:
            metadata |= table_metadata(conn, name)
    return dg.MaterializeResult(metadata=metadata)
