"""Publication for analysts: a read-only copy of the warehouse, replaced atomically."""

import dagster as dg

from bench_pipeline.assets.indices import ARENA_KEY, INDEX_KEY, MARKET_KEY
from bench_pipeline.assets.metadata import timed
from bench_pipeline.assets.publishing import publishing
from bench_pipeline.assets.release import RELEASE_KEY
from bench_pipeline.assets.versions import outside_metadata
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import publish_read_only_copy
from bench_pipeline.release.database import describe_analyst_copy
from bench_pipeline.resources.warehouse import WarehouseResource


@dg.asset(
    key=["warehouse", "analyst_copy"],
    deps=[INDEX_KEY, MARKET_KEY, ARENA_KEY, RELEASE_KEY],  # after the release's price history
    group_name="publish",
    kinds={"duckdb"},
    owners=["team:platform"],
    description=(
        "A complete copy of the warehouse at `$BENCH_HOME/build/warehouse/bench.duckdb`, written "
        "to a new file and renamed into place. Analysts open it read-only at any time; the "
        "pipeline's own file stays free for its single writer. Rewritten whenever the "
        "warehouse changed in a run, a rejected source run included."
    ),
)
@timed
def analyst_copy(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    with publishing(context), warehouse.connection() as conn:
        outside = outside_metadata(dg.AssetKey(["warehouse", "analyst_copy"]), conn)
        target = publish_read_only_copy(
            conn, settings.analyst_copy_path(), describe=describe_analyst_copy
        )
        tables = conn.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() "
            "WHERE database_name = current_database()"
        ).fetchall()
        rows = sum(
            conn.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchall()[0][0]
            for schema, name in tables
        )
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(target)),
            "bytes": target.stat().st_size,
            "tables": len(tables),
            "rows": rows,
            **outside,
        }
    )
