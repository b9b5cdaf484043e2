"""A sensor that notices models new on OpenRouter and proposes a drop for each.

After each new accepted OpenRouter ingestion it proposes a setup for every listed model that
is new on OpenRouter and no declared setup calls yet (`bench_pipeline.runs.proposals`),
stores the proposals in `setup_proposals`, adds their model-run partitions, and asks for the
two free assets that make them runnable: `runs/task_bank` (the proposed setups into `setups`,
marked proposed) and `runs/model_rates` (the ingestion's rates). It never asks for
`runs/model_runs`: paid calls start only when an operator launches the proposed partitions.

The cursor is the source run id of the last ingestion handled, so a restart neither repeats
nor misses one. A tick cut short after storing its proposals finds them stored and asks for
the same partitions (adding a partition twice is a no-op), and the run key is the ingestion's,
so the same ingestion never starts the free run twice.
"""

from datetime import UTC, datetime

import dagster as dg

from bench_pipeline.assets.runs import MODEL_RUN_PARTITIONS, RATES_KEY, TASK_BANK_KEY
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import WarehouseBusyError, connect, migrate
from bench_pipeline.resources.models import load_judges
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.proposals import companies_by_author, propose_new_models
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import SetupCatalog, load_setups

NAME = "new_openrouter_models"
LOCK_WAIT_SECONDS = 10.0
"""How long a tick waits for a busy warehouse before trying again on the next tick."""
PREPARE = (TASK_BANK_KEY, RATES_KEY)


def known_companies(catalog: SetupCatalog) -> dict[str, str]:
    """Company by API author as the config spells it: declared models, then judges."""
    pairs = [(m.api_id, m.company) for m in catalog.models.values()]
    return companies_by_author([*pairs, *((j.api_id, j.company) for j in load_judges())])


@dg.sensor(
    name=NAME,
    asset_selection=list(PREPARE),
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description=(
        "After each new accepted OpenRouter ingestion, proposes a drop for every model new on "
        "OpenRouter (added within 14 days of the listing's newest) that no setup in setups/ "
        "calls yet: its exact API id in the default harness, priced from "
        "that ingestion's rates. Records it in `setup_proposals`, adds its runs/model_runs "
        "partitions and refreshes runs/task_bank and runs/model_rates (no model calls). It "
        "never starts paid model runs: to run a proposed drop, select its partitions (keys "
        "start with the setup id in `setup_proposals`) and launch a backfill."
    ),
)
def new_openrouter_models(context: dg.SensorEvaluationContext, warehouse: WarehouseResource):
    catalog = load_setups()
    try:
        with connect(warehouse.db_path(), wait_seconds=LOCK_WAIT_SECONDS) as conn:
            migrate(conn, settings.migrations_dir())
            found = propose_new_models(
                conn, context.cursor, catalog, load_bank(), known_companies(catalog),
                datetime.now(UTC),
            )  # fmt: skip
    except WarehouseBusyError:
        return dg.SkipReason("the warehouse is busy (a run holds it); trying again next tick")
    if found is None:
        handled = context.cursor or "none"
        return dg.SkipReason(f"no new accepted OpenRouter ingestion (last handled: {handled})")
    run_id = found.ingestion.run_id
    if not found.proposals:
        return dg.SensorResult(
            cursor=run_id,
            skip_reason=f"OpenRouter ingestion {run_id}: no new model ({found.left_out})",
        )
    context.log.info(
        f"OpenRouter ingestion {run_id}: proposed {len(found.proposals)} setups "
        f"({len(found.partition_keys)} partitions); left out: {found.left_out}"
    )
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=f"{NAME}-{run_id}",
                asset_selection=list(PREPARE),
                tags={
                    "bench/openrouter_run": run_id,
                    "bench/proposed_models": str(len(found.proposals)),
                },
            )
        ],
        dynamic_partitions_requests=[MODEL_RUN_PARTITIONS.build_add_request(found.partition_keys)],
        cursor=run_id,
    )
