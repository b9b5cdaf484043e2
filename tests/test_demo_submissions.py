"""The offline demo's simulated use-case runs: made from each model's latent skill, stored once,
labelled simulated everywhere, and ranked on boards of their own, never beside a real run."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from signing import SUBMITTERS, signed_json
from test_submissions import for_bank, valid

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.providers.simulated import SIMULATED_MARKER, latent_skill
from bench_pipeline.runs.demo_submissions import (
    DEMO_SUBMITTER,
    RUNS_PER_GROUP,
    store_demo_submissions,
)
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.runs.submitters import demo_submitters
from bench_pipeline.scores.load import usecase_frames
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.store

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def bank():
    return load_bank()


@pytest.fixture
def conn(tmp_path: Path):
    connection = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(connection, settings.migrations_dir())
    yield connection
    connection.close()


def _store(conn: duckdb.DuckDBPyConnection, bank, home: Path) -> int:
    demo = demo_submitters(home / "demo-submitters.toml", DEMO_SUBMITTER)
    return store_demo_submissions(conn, bank, list(load_setups().models.values()), {}, NOW, demo)


def _rows(conn: duckdb.DuckDBPyConnection) -> list[tuple]:
    return conn.execute(
        "SELECT run_id, model_name, model_settings, outcome, retries, first_try, step_ins, "
        "wall_time_seconds, started_at, received_at, evidence_log, simulated "
        "FROM submitted_runs ORDER BY run_id"
    ).fetchall()


def test_demo_runs_are_seeded_stored_once_and_labelled(bank, conn, tmp_path: Path) -> None:
    records = list(load_setups().models.values())
    public = [c for c in bank.suite("usecase") if not c.private]
    assert _store(conn, bank, tmp_path) == len(records) * len(public) * RUNS_PER_GROUP
    assert _store(conn, bank, tmp_path) == 0  # stored once: a rerun adds and changes nothing
    rows = _rows(conn)
    other = duckdb.connect(str(tmp_path / "other.duckdb"))
    migrate(other, settings.migrations_dir())
    _store(other, bank, tmp_path / "second")  # another home: another demo secret
    assert _rows(other) == rows  # the seed, not the run, decides every value
    for _id, _model, chosen, *_rest, log, simulated in rows:
        assert simulated is True and json.loads(chosen)["simulated"] is True
        assert log.startswith(SIMULATED_MARKER)
    assert {r[3] for r in rows} == {"success", "partial", "fail"}
    # An honest failure (not first try, no retry) is among them and is not flagged.
    frames = usecase_frames(conn, NOW)
    runs = frames["usecase_runs"]
    assert runs["flags"].to_list() == [""] * runs.height
    assert any(r[3] == "fail" and r[4] == 0 and not r[5] for r in rows)


def test_better_latent_skill_scores_higher(bank, conn, tmp_path: Path) -> None:
    _store(conn, bank, tmp_path)
    groups = usecase_frames(conn, NOW)["usecase_groups"]
    skill = {
        m.api_id: latent_skill(m.api_id, m.reasoning_effort)
        for m in load_setups().models.values()
        if not m.reasoning_effort
    }
    means = {model: groups.filter(groups["model"] == model)["score"].mean() for model in skill}
    best, worst = max(skill, key=skill.__getitem__), min(skill, key=skill.__getitem__)
    assert means[best] > means[worst]


def test_simulated_runs_never_mix_with_real_ones(bank, conn, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "real.json").write_text(signed_json(for_bank(bank, valid())))
    report = ingest_inbox(
        lambda: _borrow(conn), inbox, bank, rates={}, now=NOW, submitters=SUBMITTERS
    )
    assert len(report.accepted) == 1
    _store(conn, bank, tmp_path)
    frames = usecase_frames(conn, NOW)
    runs = frames["usecase_runs"]
    real = runs.filter(~runs["simulated"])
    assert real["run_id"].to_list() == report.accepted
    groups = frames["usecase_groups"]
    real_groups = groups.filter(~groups["simulated"])
    assert real_groups.height == 1 and real_groups["runs"].to_list() == [1]
    assert not set(real_groups["group"]) & set(groups.filter(groups["simulated"])["group"])
    # The real run's speed is measured against real runs only: it is the fastest, so 1.
    assert real["metric_speed"].to_list() == [1.0]
    assert conn.execute("SELECT count(*) FROM submitted_runs WHERE NOT simulated").fetchone() == (
        1,
    )


class _borrow:
    """A context manager lending the test's open connection (the intake opens its own)."""

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self.conn = conn

    def __enter__(self) -> duckdb.DuckDBPyConnection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        return None
