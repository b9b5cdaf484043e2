"""The code location `tests/test_automation_daemon.py` gives a real `dagster-daemon`: the
project's definitions, with the OpenRouter models schedule ticking every minute and running
(the real one ticks every six hours and starts stopped), so a test can wait for a tick."""

import dagster as dg

from bench_pipeline.definitions import build_definitions
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.sensors.schedules import source_schedule

SOURCE = "openrouter_models"


def every_minute(base: dg.Definitions) -> dg.Definitions:
    """`base` with the source's schedule every minute and running."""
    fast = source_definitions()[SOURCE].model_copy(update={"cadence_cron": "* * * * *"})
    schedule = source_schedule(fast, default_status=dg.DefaultScheduleStatus.RUNNING)
    return dg.Definitions(
        assets=base.assets,
        asset_checks=base.asset_checks,
        resources=base.resources,
        jobs=base.jobs,
        schedules=[s for s in base.schedules or () if s.name != schedule.name] + [schedule],
        sensors=base.sensors,
        executor=base.executor,
    )


defs = every_minute(build_definitions())
