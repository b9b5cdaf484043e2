"""Each source's cadence is a Dagster freshness policy on its raw asset (materialised by every
fetch, even one whose payload is unchanged and goes no further), evaluated by Dagster's own
freshness daemon and shown by the UI's GraphQL; the `fresh` check dates the last accepted
run, so a source whose runs keep being rejected is flagged too."""

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.freshness import FreshnessState, TimeWindowFreshnessPolicy
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import InProcessTestWorkspaceLoadTarget, freeze_time
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._daemon.freshness import FreshnessDaemon
from dagster._time import get_current_datetime
from dagster_graphql.test.utils import execute_dagster_graphql

from bench_pipeline.assets.sources import (
    REFRESH_GRACE,
    cadence_interval,
    freshness_policy,
    live_key,
    raw_key,
)
from bench_pipeline.definitions import defs
from bench_pipeline.ingest import engine
from bench_pipeline.ingest.catalog import source_definitions

pytestmark = pytest.mark.assets

SOURCE = "openrouter_models"  # every 6 hours; warns after 7 hours, fails after 24
DATA_DATE = datetime(2026, 8, 14, 15, 55, 10)
"""The newest `created` of the recorded listing: the date of its data."""
FRESH_CHECK = dg.AssetCheckKey(live_key(SOURCE), "fresh")
UI_QUERY = """
query ($path: [String!]!) {
  assetNodes(assetKeys: [{path: $path}]) {
    internalFreshnessPolicy {
      ... on TimeWindowFreshnessPolicy { failWindowSeconds warnWindowSeconds }
    }
    freshnessStatusInfo { freshnessStatus }
  }
}
"""


def test_every_raw_asset_expects_freshness_on_its_sources_cadence() -> None:
    graph = defs.resolve_asset_graph()
    catalog = source_definitions()
    assert catalog
    for name, definition in catalog.items():
        policy = graph.get(raw_key(name)).freshness_policy
        assert graph.get(live_key(name)).freshness_policy is None  # one policy per source
        assert isinstance(policy, TimeWindowFreshnessPolicy), name
        assert policy.fail_window.to_timedelta() == timedelta(hours=definition.freshness_hours)
        assert policy.warn_window is not None
        warn = policy.warn_window.to_timedelta()
        assert warn == cadence_interval(definition.cadence_cron) + REFRESH_GRACE, name
        # One missed scheduled refresh warns before the catalogue's tolerance fails.
        assert cadence_interval(definition.cadence_cron) < warn < policy.fail_window.to_timedelta()


def test_the_cadence_interval_is_the_longest_gap_between_scheduled_refreshes() -> None:
    assert cadence_interval("30 */6 * * *") == timedelta(hours=6)
    assert cadence_interval("0 5 * * *") == timedelta(days=1)
    assert cadence_interval("0 4 * * 1") == timedelta(days=7)
    assert cadence_interval("0 9 * * 1-5") == timedelta(days=3)  # Friday to Monday


def test_a_tolerance_shorter_than_the_cadence_is_refused() -> None:
    definition = source_definitions()[SOURCE]
    with pytest.raises(ValueError, match="freshness_hours"):
        freshness_policy(definition.model_copy(update={"freshness_hours": 7}))
    freshness_policy(definition.model_copy(update={"freshness_hours": 8}))


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.DagsterInstance]:
    """A temporary (non-ephemeral) Dagster instance over a warehouse in tmp_path."""
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    monkeypatch.delenv("BENCH_SNAPSHOTS", raising=False)
    with dg.instance_for_test() as instance:
        yield instance


@pytest.fixture
def workspace(instance: dg.DagsterInstance) -> Iterator[WorkspaceProcessContext]:
    """The code location `dagster dev` serves, loaded in this process, over `instance`."""
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name="bench_pipeline.definitions", attribute="defs")
    )
    with WorkspaceProcessContext(instance, InProcessTestWorkspaceLoadTarget(origin)) as context:
        yield context


def _refresh(instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """What `refresh_<source>_schedule` runs: the source's four assets and their checks."""
    result = defs.resolve_job_def(f"refresh_{SOURCE}").execute_in_process(instance=instance)
    assert result.success
    return result


def _daemon_state(workspace: WorkspaceProcessContext, key: dg.AssetKey) -> FreshnessState:
    """One iteration of Dagster's freshness daemon (as `dagster dev` runs it), then the state it
    recorded for `key`."""
    list(FreshnessDaemon().run_iteration(workspace))
    records = workspace.instance.get_freshness_state_records([key])
    return records[key].freshness_state


def _ui(workspace: WorkspaceProcessContext, key: dg.AssetKey) -> dict:
    result = execute_dagster_graphql(
        workspace.create_request_context(), UI_QUERY, {"path": key.path}
    )
    assert not result.errors, result.errors
    [node] = result.data["assetNodes"]
    return node


def test_dagster_flags_a_source_that_stopped_refreshing(
    instance: dg.DagsterInstance, workspace: WorkspaceProcessContext
) -> None:
    key = raw_key(SOURCE)
    _refresh(instance)
    refreshed = get_current_datetime()
    definition = source_definitions()[SOURCE]
    warn = cadence_interval(definition.cadence_cron) + REFRESH_GRACE
    fail = timedelta(hours=definition.freshness_hours)

    expected = [
        (timedelta(minutes=5), FreshnessState.PASS, "HEALTHY"),
        (warn + timedelta(minutes=5), FreshnessState.WARN, "WARNING"),
        (fail + timedelta(minutes=5), FreshnessState.FAIL, "DEGRADED"),
    ]
    for later, state, status in expected:
        with freeze_time(refreshed + later):
            assert _daemon_state(workspace, key) == state, later
            node = _ui(workspace, key)
        assert node["freshnessStatusInfo"]["freshnessStatus"] == status, later
        assert node["internalFreshnessPolicy"] == {
            "failWindowSeconds": fail.total_seconds(),
            "warnWindowSeconds": warn.total_seconds(),
        }

    # A source never refreshed is not reported fresh.
    other = raw_key("arena")
    assert _daemon_state(workspace, other) == FreshnessState.UNKNOWN
    assert _ui(workspace, other)["freshnessStatusInfo"]["freshnessStatus"] == "UNKNOWN"


def _live_metadata(instance: dg.DagsterInstance) -> dict:
    event = instance.get_latest_materialization_event(live_key(SOURCE))
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _fresh_check(instance: dg.DagsterInstance) -> dg.AssetCheckEvaluation:
    job = defs.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection=set(), asset_check_selection={FRESH_CHECK}
    )
    result = job.execute_in_process(instance=instance)
    [evaluation] = result.get_asset_check_evaluations()
    return evaluation


def test_a_source_whose_runs_are_rejected_is_flagged_with_its_last_good_data(
    instance: dg.DagsterInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The warehouse's clock, set by the test: the last accepted run finished 20 hours ago, the
    # moment its data is dated (so the fetch time and the data's age agree until the end).
    now = DATA_DATE + timedelta(hours=20)
    clock = {"now": now - timedelta(hours=20)}
    monkeypatch.setattr(engine, "now_utc", lambda: clock["now"])
    _refresh(instance)
    accepted = _live_metadata(instance)
    assert accepted["status"] == "accepted"
    assert accepted["last_good_data"] == str(now - timedelta(hours=20))

    # Now the source serves an error page: the run is rejected, the live tables are kept.
    clock["now"] = now
    broken = tmp_path / "snapshots"
    (broken / SOURCE).mkdir(parents=True)
    (broken / SOURCE / "models.json").write_text("<html>502 Bad Gateway</html>")
    monkeypatch.setenv("BENCH_SNAPSHOTS", str(broken))
    _refresh(instance)
    rejected = _live_metadata(instance)
    assert rejected["status"] == "rejected"
    assert rejected["run_id"] != accepted["run_id"]
    # The rejected run materialised `live` (Dagster's policy counts that as a refresh), and
    # its materialisation says which data the live tables still hold.
    assert rejected["last_good_data"] == accepted["last_good_data"]

    # The `fresh` check dates the data of the last *accepted* run, not the rejected one of
    # just now: 23 hours old, it passes ...
    clock["now"] = now + timedelta(hours=3)
    assert _fresh_check(instance).passed
    # ... 25 hours old, past `freshness_hours`, it flags the source with its last good data.
    clock["now"] = now + timedelta(hours=5)
    overdue = _fresh_check(instance)
    assert not overdue.passed
    assert overdue.severity == dg.AssetCheckSeverity.WARN
    assert overdue.metadata["last_good_data"].value == accepted["last_good_data"]
    assert overdue.metadata["hours_old"].value == 25
    assert overdue.metadata["allowed_hours"].value == 24
    assert overdue.metadata["data_as_of"].value == str(DATA_DATE)
    assert overdue.metadata["verdict"].value == "STALE"
    # Dagster records the failed check on the instance, where the UI shows it on the asset.
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([FRESH_CHECK])
    assert record[FRESH_CHECK].evaluation.passed is False


def test_a_capture_months_old_is_stale_however_recently_fetched(
    instance: dg.DagsterInstance,
) -> None:
    """The recorded listing, fetched a moment ago, holds data from 2026-08-14: the check warns
    (STALE, a warning: nothing downstream is blocked) and says how old the data is."""
    result = _refresh(instance)
    assert result.success
    metadata = _live_metadata(instance)
    assert metadata["status"] == "accepted"
    assert metadata["data_as_of"] == str(DATA_DATE)
    assert "newest model `created`" in metadata["data_as_of_basis"]
    stale = _fresh_check(instance)
    assert not stale.passed and stale.severity == dg.AssetCheckSeverity.WARN
    assert stale.metadata["verdict"].value == "STALE"
    age = (engine.now_utc() - DATA_DATE) / timedelta(hours=1)
    assert abs(stale.metadata["hours_old"].value - age) < 1
    assert stale.description is not None and stale.description.startswith(f"{SOURCE}: STALE (data ")
