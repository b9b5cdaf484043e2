"""The local Dagster instance under `$BENCH_HOME/build/dagster`, for `bench run` and the UI."""

from __future__ import annotations

import os
from pathlib import Path

from bench_pipeline.core import settings

INSTANCE_CONFIG = """\
# Written by bench-pipeline. Local storage under BENCH_HOME; no telemetry.
telemetry:
  enabled: false
"""


def prepare_dagster_home() -> Path:
    """Create the instance folder (with its dagster.yaml) and point DAGSTER_HOME at it,
    unless the operator already chose an instance of their own."""
    configured = os.environ.get("DAGSTER_HOME")
    if configured:
        return Path(configured)
    home = settings.bench_home() / "build" / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_CONFIG)
    os.environ["DAGSTER_HOME"] = str(home)
    return home
