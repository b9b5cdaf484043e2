"""Inbox sensors on a real (ephemeral) Dagster instance: a restart between two ticks neither
repeats nor misses a file, and the run they ask for takes the files into the warehouse."""

import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from signing import register, signed_json
from test_submissions import for_bank, valid

from bench_pipeline.definitions import build_definitions
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.assets


def _tick(definitions: dg.Definitions, name: str, instance: dg.DagsterInstance, cursor):
    sensor = definitions.resolve_sensor_def(name)
    with dg.build_sensor_context(instance=instance, cursor=cursor, definitions=definitions) as ctx:
        result = sensor.evaluate_tick(ctx)
    return result


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    register(tmp_path)  # the default submitters file of this home
    return tmp_path


def test_the_submissions_sensor_asks_once_per_new_file_across_restarts(home: Path) -> None:
    inbox = home / "inbox" / "submissions"
    inbox.mkdir(parents=True)
    bank = load_bank()
    (inbox / "a.json").write_text(json.dumps(for_bank(bank, valid())))
    (inbox / "broken.json").write_text("{")

    with dg.instance_for_test() as instance:
        first = _tick(build_definitions(), "new_submissions", instance, None)
        assert len(first.run_requests) == 1
        assert first.run_requests[0].tags["bench/inbox_files"] == "a.json,broken.json"

        # A restart: new Definitions, the persisted cursor only.
        again = _tick(build_definitions(), "new_submissions", instance, first.cursor)
        assert again.run_requests == [] and "no new files" in again.skip_message

        # The same content under another name is not new; a changed file and a new one are.
        (inbox / "a-copy.json").write_text((inbox / "a.json").read_text())
        (inbox / "broken.json").write_text("{}")
        (inbox / "b.json").write_text(json.dumps(for_bank(bank, valid(turns=7))))
        cursor = again.cursor or first.cursor
        third = _tick(build_definitions(), "new_submissions", instance, cursor)
        assert len(third.run_requests) == 1
        assert third.run_requests[0].tags["bench/inbox_files"] == "b.json,broken.json"
        assert third.run_requests[0].run_key != first.run_requests[0].run_key


def test_the_run_a_sensor_asks_for_takes_the_files_in(home: Path) -> None:
    inbox = home / "inbox" / "submissions"
    inbox.mkdir(parents=True)
    (inbox / "a.json").write_text(signed_json(for_bank(load_bank(), valid())))
    (inbox / "bad.json").write_text(json.dumps(valid(turns=-1)))
    definitions = build_definitions()
    with dg.instance_for_test() as instance:
        request = _tick(definitions, "new_submissions", instance, None).run_requests[0]
        job = definitions.resolve_implicit_global_asset_job_def().get_subset(
            asset_selection=set(request.asset_selection or [])
        )
        result = job.execute_in_process(instance=instance, tags=request.tags)
        assert result.success
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        files = dict(conn.execute("SELECT file_name, status FROM submission_files").fetchall())
    assert files == {"a.json": "accepted", "bad.json": "rejected"}
