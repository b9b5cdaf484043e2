"""What `tests/test_scale_out.py` runs on Celery workers: stand-in workloads for now.

Each step sleeps a moment (so that one worker cannot take every step) and records, as
materialisation metadata, the process and the worker that ran it. Two shapes of work:

- `independent_assets`: one run of several independent assets, so the executor has several
  steps to hand to different workers at once;
- `partitions`: one asset with static partitions, one run per partition, the runs submitted
  at the same time: the shape of the model-run assets to come.

A `Workload` is all the test needs, so the real work can take a stand-in's place: where the
job is (a module and the attribute holding its `Definitions`, loaded by `dagster job execute
-m MODULE -a ATTRIBUTE -j JOB`, by the workers too, so they must import it), the job's name
(its executor must be `dagster_celery.celery_executor`), the tags of each run to submit (all
submitted at once, each from its own process) and how many steps those runs have in all.
"""

import os
import socket
import time
from dataclasses import dataclass

import dagster as dg
from dagster_celery import celery_executor

STEP_SECONDS = 1.5
# Set by the test on each worker's environment, so a step can say which worker ran it.
WORKER_LABEL = "BENCH_WORKER_LABEL"
PARTITIONS = ("p0", "p1", "p2", "p3")
INDEPENDENT_PROBES = 6


@dataclass(frozen=True)
class Workload:
    module: str
    attribute: str  # the module-level Definitions
    job: str
    runs: tuple[dict[str, str], ...]  # the tags of each run, all submitted at once
    steps: int  # steps over all the runs
    reports_process: bool  # steps record pid / worker label (the stand-ins do)


def _where_am_i() -> dict[str, object]:
    time.sleep(STEP_SECONDS)
    return {
        "pid": os.getpid(),
        "parent_pid": os.getppid(),
        "hostname": socket.gethostname(),
        "worker_label": os.environ.get(WORKER_LABEL, ""),
    }


def _probe(index: int) -> dg.AssetsDefinition:
    @dg.asset(
        key=["celery_probe", f"step_{index}"],
        group_name="celery_probe",
        description="Sleeps, then records the process and the Celery worker that ran it.",
    )
    def probe() -> dg.MaterializeResult:
        return dg.MaterializeResult(metadata=_where_am_i())

    return probe


@dg.asset(
    key=["celery_probe", "partitioned"],
    group_name="celery_probe",
    partitions_def=dg.StaticPartitionsDefinition(list(PARTITIONS)),
    description="One partition per run; records the process and the worker that ran it.",
)
def partitioned_probe(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"partition": context.partition_key, **_where_am_i()})


defs = dg.Definitions(
    assets=[*(_probe(i) for i in range(INDEPENDENT_PROBES)), partitioned_probe],
    jobs=[
        dg.define_asset_job(
            "independent_assets",
            selection=dg.AssetSelection.all() - dg.AssetSelection.assets(partitioned_probe),
            executor_def=celery_executor,
        ),
        dg.define_asset_job(
            "partitions",
            selection=dg.AssetSelection.assets(partitioned_probe),
            partitions_def=partitioned_probe.partitions_def,
            executor_def=celery_executor,
        ),
    ],
)


WORKLOADS = {
    "independent_assets": Workload(
        module=__name__,
        attribute="defs",
        job="independent_assets",
        runs=({},),
        steps=INDEPENDENT_PROBES,
        reports_process=True,
    ),
    "partitions": Workload(
        module=__name__,
        attribute="defs",
        job="partitions",
        runs=tuple({"dagster/partition": key} for key in PARTITIONS),
        steps=len(PARTITIONS),
        reports_process=True,
    ),
}
