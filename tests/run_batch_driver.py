"""Run the pipeline up to and including the model runs, as `bench run` does (for tests that
kill it midway). Environment: BENCH_HOME, BENCH_SETUPS, BENCH_MODEL_MODE, ..."""

import sys

from bench_pipeline.cli.instance import prepare_dagster_home
from bench_pipeline.cli.main import declared_run_tags


def main() -> int:
    prepare_dagster_home()
    import dagster as dg

    from bench_pipeline.definitions import PIPELINE_JOBS, RUN_JOB, build_definitions

    definitions = build_definitions()
    instance = dg.DagsterInstance.get()
    for name, _selection, _description in PIPELINE_JOBS[:2]:
        for tags in declared_run_tags(instance) if name == RUN_JOB else [{}]:
            result = definitions.resolve_job_def(name).execute_in_process(
                instance=instance, tags=tags, raise_on_error=False
            )
            if not result.success:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
