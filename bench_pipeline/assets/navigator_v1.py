"""Navigator classic v1's offline demo comparison (`runs.v1_comparison.run_library_demo`)."""

import dagster as dg

from bench_pipeline.assets.metadata import table_metadata, timed
from bench_pipeline.assets.runs import RATES_KEY, TASK_BANK_KEY
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.v1_comparison import run_library_demo

NAVIGATOR_V1_KEY = dg.AssetKey(["runs", "navigator_v1"])


@dg.asset(
    key=NAVIGATOR_V1_KEY,
    deps=[TASK_BANK_KEY, RATES_KEY],
    group_name="runs",
    kinds={"duckdb"},
    owners=["team:runs"],
    description=(
        "Navigator classic v1: in simulated mode, every task of the v1 library "
        "(tasks/navigator_v1.toml) on every declared setup, scored by the simulated pinned "
        "judge; stored once per library, setups and configuration. In live mode nothing runs: "
        "the project pays for no v1 run, so real ones come only from `bench compare`."
    ),
)
@timed
def navigator_v1(warehouse: WarehouseResource, models: ModelCallsResource) -> dg.MaterializeResult:
    comparison = run_library_demo(warehouse.connection, simulated=models.mode == "simulated")
    with warehouse.connection() as conn:
        metadata = table_metadata(conn, "v1_runs")
    return dg.MaterializeResult(
        metadata=metadata | {"comparison": comparison or "none (not simulated mode)"}
    )
