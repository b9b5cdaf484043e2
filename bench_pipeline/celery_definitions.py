r"""The scale-out code location: everything in `bench_pipeline.definitions`, plus model runs on
Celery workers.

`celery_model_runs` materialises `runs/model_runs` with dagster-celery's executor: each run's
step goes to a Redis queue and whichever worker is free executes it, writing its events into
the shared (PostgreSQL) instance. Submit one run per partition (or a few), so that partitions
spread over the workers:

    dagster job execute -m bench_pipeline.celery_definitions -a defs -j celery_model_runs \\
        -c deploy/celery/celery.yaml --tags '{"dagster/partition": "<setup>:<suite>:<case>@<v>"}'

The workers import this module (it names the job they execute), so it must be importable on
every worker, with the same BENCH_HOME. The partitions must already be registered in the
instance (by `runs/task_bank`, in `prepare_inputs`), and the model runs' inputs materialised
in the warehouse. Setup is in deploy/README.md.

Everything else keeps the in-process executor: use this module *instead of*
`bench_pipeline.definitions` as the code location of a scaled-out deployment, not beside it
(the same assets in two code locations would clash).
"""

import os

import dagster as dg
from dagster_celery import celery_executor

from bench_pipeline.assets.runs import MODEL_RUNS_KEY
from bench_pipeline.definitions import build_definitions

CELERY_RUN_JOB = "celery_model_runs"

celery_model_runs = dg.define_asset_job(
    CELERY_RUN_JOB,
    selection=dg.AssetSelection.assets(MODEL_RUNS_KEY),
    executor_def=celery_executor,
    description=(
        "Model runs of the partitions given, each run's step executed by a Celery worker "
        "(run config: deploy/celery/celery.yaml). One run per partition spreads them over "
        "the workers."
    ),
)


def build_celery_definitions(source_mode: str = "recorded") -> dg.Definitions:
    """`build_definitions(source_mode)` with the `celery_model_runs` job added."""
    return dg.Definitions.merge(
        build_definitions(source_mode), dg.Definitions(jobs=[celery_model_runs])
    )


defs = build_celery_definitions(os.environ.get("BENCH_SOURCE_MODE", "recorded"))
