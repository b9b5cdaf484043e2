"""Declarative automation under a real `dagster-daemon`: after one `bench run`, a source
schedule tick that lands a changed OpenRouter listing is followed, with nobody launching a job,
by the registry, indices, a new release and a new site."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from stages import bench_env

from bench_pipeline.cli.instance import INSTANCE_CONFIG
from bench_pipeline.core import settings

pytestmark = pytest.mark.integration

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
DEFINITIONS = Path(__file__).parent / "daemon_definitions.py"
DAEMON = str(Path(sys.executable).with_name("dagster-daemon"))
SCHEDULE = "refresh_openrouter_models_schedule"  # every minute in daemon_definitions.py
WAIT_SECONDS = 900  # a tick, the refresh run, an automation tick and its run, on a busy machine


def _env(home: Path, snapshots: Path) -> dict[str, str]:
    env = bench_env(home, snapshots)
    env["DAGSTER_HOME"] = str(home / "build" / "dagster")
    return env


def _raise_a_price(snapshots: Path) -> str:
    """A new OpenRouter listing: the first priced plain model's prompt price doubled; its id."""
    path = snapshots / "openrouter_models" / "models.json"
    listing = json.loads(path.read_text())
    model = next(
        m
        for m in listing["data"]
        if float(m["pricing"]["prompt"]) > 0 and not set(m["id"]) & {":", "~"}
    )
    model["pricing"]["prompt"] = str(float(model["pricing"]["prompt"]) * 2)
    path.write_text(json.dumps(listing))
    return model["id"]


def _site(home: Path) -> Path:
    return (home / "build" / "site").resolve()


def _latest(home: Path) -> str:
    return (home / "build" / "releases" / "latest").read_text().strip()


def test_a_schedule_tick_that_lands_new_data_ends_in_a_new_site(tmp_path: Path) -> None:
    home, snapshots = tmp_path / "home", tmp_path / "snapshots"
    shutil.copytree(SNAPSHOTS, snapshots)
    env = _env(home, snapshots)
    (home / "build" / "dagster").mkdir(parents=True)
    (home / "build" / "dagster" / "dagster.yaml").write_text(INSTANCE_CONFIG)
    first = subprocess.run(
        [sys.executable, "-m", "bench_pipeline.cli", "run"],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    site, release = _site(home), _latest(home)
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        prices = conn.execute("SELECT count(*) FROM price_history").fetchone()[0]
    started = time.time()
    changed = _raise_a_price(snapshots)

    daemon_log = tmp_path / "daemon.log"
    with daemon_log.open("wb") as log:
        daemon = subprocess.Popen(
            [DAEMON, "run", "-f", str(DEFINITIONS), "-a", "defs"],
            env=env, cwd=settings.REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while _site(home) == site and time.monotonic() < deadline:
                assert daemon.poll() is None, daemon_log.read_text()[-5000:]
                time.sleep(5)
        finally:
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(timeout=60)
    tail = daemon_log.read_text()[-5000:]
    assert _site(home) != site, f"no new site within {WAIT_SECONDS} s\n{tail}"

    # A new release, from the new listing, is what the new site shows.
    assert _latest(home) != release
    assert (home / "build" / "site" / "data" / "market.csv").is_file()
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        accepted = conn.execute(
            "SELECT count(*) FROM source_runs WHERE source = 'openrouter_models' "
            "AND status = 'accepted'"
        ).fetchone()[0]
        added = conn.execute(
            "SELECT model_id, host FROM price_history WHERE source_run_id IN (SELECT run_id "
            "FROM source_runs WHERE source = 'openrouter_models') ORDER BY observed_at DESC"
        ).fetchall()[: conn.execute("SELECT count(*) FROM price_history").fetchone()[0] - prices]
    assert accepted == 2
    assert added == [(changed, None)]  # price history gains the one changed rate, no more

    # Nobody launched a job: the refresh came from the schedule's tick, everything after it
    # from the automation sensor.
    with dg.DagsterInstance.from_config(str(home / "build" / "dagster")) as instance:
        runs = [
            r.dagster_run
            for r in instance.get_run_records()
            if r.create_timestamp.timestamp() >= started
        ]
        site_runs = {
            e.run_id
            for e in instance.fetch_materializations(
                dg.AssetKey(["site", "static_site"]), limit=10
            ).records
        }
    origins = {run.run_id: (run.tags.get("dagster/schedule_name"), run.tags.get(
        "dagster/sensor_name")) for run in runs}  # fmt: skip
    assert runs and all(schedule or sensor for schedule, sensor in origins.values()), origins
    assert any(schedule == SCHEDULE for schedule, _ in origins.values()), origins
    [automated] = [run for run in runs if run.run_id in site_runs]
    assert automated.tags.get("dagster/sensor_name") == "automation", automated.tags
    assert {"registry/models", "release/dataset", "site/static_site"} <= {
        key.to_user_string() for key in automated.asset_selection or ()
    }, automated.asset_selection
