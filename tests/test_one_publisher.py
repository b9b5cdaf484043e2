"""One publisher: `bench run` and the UI's automation never publish at once, and automation
never publishes past a failed upstream run (`bench_pipeline.assets.publishing`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from stages import bench_env, bench_home, offline_resources

from bench_pipeline.assets.automation import AUTOMATION_SENSOR
from bench_pipeline.assets.publish import analyst_copy
from bench_pipeline.assets.publishing import publishing_blocked
from bench_pipeline.assets.release import RELEASE_KEY, release_dataset
from bench_pipeline.assets.site import SITE_KEY
from bench_pipeline.cli.run_lock import exclusive_run
from bench_pipeline.core import settings
from tests.test_run_group import assert_one_run_group

pytestmark = pytest.mark.assets

COMMAND = [sys.executable, "-m", "bench_pipeline.cli", "run"]
PUBLISHED = (RELEASE_KEY, SITE_KEY, analyst_copy.key)
TASK_BANK = dg.AssetKey(["runs", "task_bank"])
HOLD = (
    "import sys; from pathlib import Path; from bench_pipeline.cli.run_lock import exclusive_run\n"
    "with exclusive_run(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.read()\n"
)


def _raise_a_price(snapshots: Path) -> None:
    """A new OpenRouter listing: the first priced plain model's prompt price doubled."""
    path = snapshots / "openrouter_models" / "models.json"
    listing = json.loads(path.read_text())
    model = next(m for m in listing["data"] if float(m["pricing"]["prompt"]) > 0)
    model["pricing"]["prompt"] = str(float(model["pricing"]["prompt"]) * 2)
    path.write_text(json.dumps(listing))


def _latest(home: Path) -> str:
    return (home / "build" / "releases" / "latest").read_text().strip()


def _tick(
    definitions: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None
) -> tuple[str | None, set[dg.AssetKey]]:
    """One evaluation of the automation sensor, as the daemon asks the code server for it:
    its new cursor and the assets its run requests name."""
    sensor = definitions.get_sensor_def(AUTOMATION_SENSOR)
    context = dg.build_sensor_context(
        instance=instance, repository_def=definitions.get_repository_def(), cursor=cursor
    )
    result = sensor.evaluate_tick(context)
    requested = {key for run in result.run_requests for key in run.asset_selection or ()}
    return result.cursor, requested


@pytest.mark.integration
@pytest.mark.timeout(1500)
def test_automation_publishes_nothing_after_a_bench_run_that_failed_before_its_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A good `bench run`, then a changed listing and a broken task file: the second
    `bench run` fails before its release. The automation sensor's evaluation then recomputes
    what the listing changed but requests no release, site or analyst copy."""
    from bench_pipeline.definitions import build_definitions

    home, snapshots, tasks = tmp_path / "home", tmp_path / "snapshots", tmp_path / "tasks"
    shutil.copytree(settings.REPO_ROOT / "sources" / "snapshots", snapshots)
    shutil.copytree(settings.tasks_dir(), tasks)
    env = bench_env(home, snapshots) | {"BENCH_TASKS": str(tasks)}
    first = subprocess.run(COMMAND, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    release = _latest(home)

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DAGSTER_HOME", str(home / "build" / "dagster"))
    definitions = build_definitions()
    with dg.DagsterInstance.get() as instance:
        assert_one_run_group(instance, first.stdout)
        cursor, requested = _tick(definitions, instance, None)
        assert not requested & set(PUBLISHED), requested  # nothing changed since the run

        _raise_a_price(snapshots)
        sorted(tasks.rglob("*.toml"))[0].write_text("this is = = not TOML\n")
        failed = subprocess.run(COMMAND, env=env, capture_output=True, text=True, timeout=900)
        assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
        assert "stopped before the release" in failed.stdout, failed.stdout[-3000:]

        _, requested = _tick(definitions, instance, cursor)
        graph = definitions.resolve_asset_graph()
        reason = publishing_blocked(instance, graph, PUBLISHED, home)
    # automation recomputes what the new listing changes ...
    assert dg.AssetKey(["market", "market_data"]) in requested, requested
    # ... but publishes nothing past the failed task bank
    assert not requested & set(PUBLISHED), requested
    assert reason is not None and TASK_BANK.to_user_string() in reason, reason
    assert _latest(home) == release


@pytest.fixture
def held_by_bench_run(tmp_path: Path):
    """Another process holding the BENCH_HOME's run lock, as a running `bench run` does."""
    home = tmp_path / "home"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    try:
        yield home, holder.pid
    finally:
        holder.communicate("", timeout=30)


def test_automation_neither_plans_nor_publishes_while_a_bench_run_holds_the_lock(
    held_by_bench_run: tuple[Path, int],
) -> None:
    home, pid = held_by_bench_run
    definitions = dg.Definitions(assets=[release_dataset], resources=offline_resources(home))
    with dg.DagsterInstance.ephemeral() as instance, bench_home(home):
        reason = publishing_blocked(
            instance, definitions.resolve_asset_graph(), [RELEASE_KEY], home
        )
        result = dg.materialize(
            [release_dataset], instance=instance, resources=offline_resources(home),
            raise_on_error=False,
        )  # fmt: skip
    assert reason is not None and f"pid {pid}" in reason, reason
    assert not result.success
    [failure] = result.get_step_failure_events()
    message = failure.event_specific_data.error.message  # type: ignore[union-attr]
    assert "not published: publishing is owned by a `bench run`" in message, message
    assert f"pid {pid}" in message, message
    assert not (home / "build" / "releases").exists()  # nothing was written


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_bench_run_refuses_while_an_automation_run_publishes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    by = "Dagster run 0f1e2d3c (release/dataset)"
    with exclusive_run(home, by=by):
        started = time.monotonic()
        refused = subprocess.run(
            COMMAND, env=bench_env(home), capture_output=True, text=True, timeout=240
        )
    assert refused.returncode == 3, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert by in refused.stdout, refused.stdout
    assert not (home / "build" / "releases").exists()
    assert time.monotonic() - started < 240
