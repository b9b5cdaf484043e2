"""The ingestion engine's accepted path on a real DuckDB file: first run, replacement, the raw
store and the bookkeeping tables."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from faults_pipeline import working_runs

from bench_pipeline.ingest import engine
from bench_pipeline.ingest.payload import RawFile, content_sha256

pytestmark = pytest.mark.store


def _listing(models: list[dict]) -> bytes:
    return json.dumps({"data": models}).encode()


def test_first_run_is_accepted_and_recorded(seeded) -> None:
    warehouse, run = seeded.warehouse, seeded.run
    payload = _listing(seeded.models)

    row = warehouse.run_row(run.run_id)
    assert row is not None
    assert row["source"] == "openrouter_models"
    assert row["mode"] == "recorded"
    assert row["status"] == "accepted"
    assert row["rows_valid"] == 50
    assert row["rows_quarantined"] == 0
    assert row["previous_rows"] is None  # nothing was accepted before
    assert row["reason"] is None
    assert row["content_sha256"] == content_sha256([RawFile("models.json", payload)])
    assert row["finished_at"] >= row["started_at"]

    live = warehouse.query("SELECT model_id, source_run_id FROM openrouter_models")
    assert sorted(m for m, _ in live) == sorted(m["id"] for m in seeded.models)
    assert {r for _, r in live} == {run.run_id}
    assert warehouse.query(
        "SELECT table_name, rows_valid FROM source_run_tables WHERE run_id = ?", [run.run_id]
    ) == [("openrouter_models", 50)]
    assert warehouse.quarantine(run.run_id) == []

    # The raw payload is kept byte for byte, under its content hash.
    [(name, sha, size, stored)] = warehouse.query(
        "SELECT file_name, sha256, bytes, stored_path FROM raw_files WHERE run_id = ?", [run.run_id]
    )
    assert (name, size) == ("models.json", len(payload))
    assert sha == hashlib.sha256(payload).hexdigest()
    assert Path(stored).read_bytes() == payload
    assert Path(stored).is_relative_to(warehouse.raw_root / "openrouter_models")


def test_live_values_are_typed_and_prices_exact(seeded) -> None:
    first = seeded.models[0]
    [(context, prompt, completion, created, variable, inputs)] = seeded.warehouse.query(
        "SELECT context_length, prompt_usd_per_m, completion_usd_per_m, created_at, "
        "variable_pricing, input_modalities FROM openrouter_models WHERE model_id = ?",
        [first["id"]],
    )
    assert context == first["context_length"]
    assert prompt == Decimal(first["pricing"]["prompt"]).scaleb(6)
    assert completion == Decimal(first["pricing"]["completion"]).scaleb(6)
    assert created == datetime.fromtimestamp(first["created"], UTC).replace(tzinfo=None)
    assert variable is False
    assert inputs == ",".join(first["architecture"]["input_modalities"])


def test_accepted_second_run_replaces_live_rows(seeded, openrouter_listing) -> None:
    warehouse = seeded.warehouse
    models = openrouter_listing["data"][10:70]  # 40 kept, 10 dropped, 20 new
    models[0]["pricing"]["prompt"] = "0.000123"
    run = warehouse.ingest("openrouter_models", files={"models.json": _listing(models)})

    assert run.status == "accepted", run.reason
    assert run.previous_rows == 50
    live = warehouse.query("SELECT model_id, source_run_id FROM openrouter_models")
    assert sorted(m for m, _ in live) == sorted(m["id"] for m in models)
    assert {r for _, r in live} == {run.run_id}  # every live row carries the new run
    assert warehouse.query(
        "SELECT prompt_usd_per_m FROM openrouter_models WHERE model_id = ?", [models[0]["id"]]
    ) == [(Decimal("123"),)]

    row = warehouse.run_row(run.run_id)
    assert row["status"] == "accepted"
    assert row["rows_valid"] == 60
    assert row["previous_rows"] == 50  # the rows of the last accepted run
    assert warehouse.query("SELECT run_id, status FROM source_runs ORDER BY finished_at") == [
        (seeded.run.run_id, "accepted"),
        (run.run_id, "accepted"),
    ]


def test_previous_rows_follows_the_last_accepted_run(seeded, openrouter_listing) -> None:
    warehouse = seeded.warehouse
    second = warehouse.ingest(
        "openrouter_models", files={"models.json": _listing(openrouter_listing["data"][:80])}
    )
    rejected = warehouse.ingest("openrouter_models", files={"models.json": b'{"data": []}'})
    third = warehouse.ingest(
        "openrouter_models", files={"models.json": _listing(openrouter_listing["data"][:70])}
    )
    assert (second.status, rejected.status, third.status) == ("accepted", "rejected", "accepted")
    assert warehouse.run_row(second.run_id)["previous_rows"] == 50
    assert warehouse.run_row(rejected.run_id)["previous_rows"] == 80
    assert warehouse.run_row(third.run_id)["previous_rows"] == 80  # not the rejected run's 0


def test_exactly_the_minimum_row_ratio_is_accepted(seeded) -> None:
    half = seeded.models[:25]  # 25 = 0.5 × 50: not fewer than the minimum
    run = seeded.warehouse.ingest("openrouter_models", files={"models.json": _listing(half)})
    assert run.status == "accepted", run.reason
    assert seeded.warehouse.checksums()["openrouter_models"][0] == 25


def test_the_live_payload_again_is_recorded_unchanged_without_staging(seeded) -> None:
    warehouse = seeded.warehouse
    tables = ("raw_files", "source_runs", "source_run_claims", "quarantine", "source_run_groups")
    before = {t: warehouse.query(f"SELECT count(*) FROM {t}")[0][0] for t in tables}
    live = warehouse.checksums()

    run = warehouse.ingest("openrouter_models", files={"models.json": _listing(seeded.models)})

    assert run.status == "unchanged" and run.unchanged
    assert run.run_id == seeded.run.run_id  # the run whose rows are live
    assert run.content_sha256 == seeded.run.content_sha256
    assert run.rows_staged == {} and run.rows_valid == {}  # nothing staged or validated
    assert {t: warehouse.query(f"SELECT count(*) FROM {t}")[0][0] for t in tables} == before
    assert warehouse.checksums() == live
    [(source, sha, live_run)] = warehouse.query(
        "SELECT source, content_sha256, live_run_id FROM source_checks"
    )
    assert (source, sha, live_run) == ("openrouter_models", run.content_sha256, run.run_id)
    assert working_runs(warehouse.path) == []  # nothing staged or validated was even written


def test_a_payload_is_unchanged_only_against_the_live_run(seeded, openrouter_listing) -> None:
    warehouse = seeded.warehouse
    other = warehouse.ingest(
        "openrouter_models", files={"models.json": _listing(openrouter_listing["data"][:60])}
    )
    assert other.status == "accepted", other.reason
    # The first payload again is news now: the live tables hold the other one.
    again = warehouse.ingest("openrouter_models", files={"models.json": _listing(seeded.models)})
    assert again.status == "accepted", again.reason
    assert again.run_id != seeded.run.run_id
    paths = warehouse.query("SELECT DISTINCT stored_path FROM raw_files")
    assert len(paths) == 2  # its bytes were already stored once, by hash
    # A rejected payload is never "unchanged": fetched again, it is checked again.
    empty = {"models.json": b'{"data": []}'}
    first, second = (warehouse.ingest("openrouter_models", files=empty) for _ in range(2))
    assert (first.status, second.status) == ("rejected", "rejected")
    assert first.run_id != second.run_id


def test_freshness_counts_a_fetch_that_found_the_live_payload(seeded) -> None:
    from datetime import timedelta

    from bench_pipeline.assets.sources import last_good_data

    warehouse = seeded.warehouse
    with warehouse.connect() as conn:
        accepted = conn.execute("SELECT max(finished_at) FROM source_runs").fetchall()[0][0]
        checked = accepted + timedelta(hours=30)
        conn.execute(
            "INSERT INTO source_checks VALUES ('openrouter_models', ?, 'recorded', 'x', ?)",
            [checked, seeded.run.run_id],
        )
        when, hours = last_good_data(conn, "openrouter_models", checked + timedelta(hours=2))
    assert when == checked and hours == 2


def test_every_recorded_source_is_accepted(warehouse) -> None:
    expected = {
        "arena": {"arena_models": 141, "arena_ratings": 16121},
        "epoch": {"epoch_models": 591, "evaluation_rows": 838},
        "models_dev": {"modelsdev_models": 5258},
        "openrouter_endpoints": {"openrouter_endpoints": 4},
        "openrouter_models": {"openrouter_models": 414},
    }
    runs = {source: warehouse.ingest(source) for source in expected}

    for source, run in runs.items():
        assert run.status == "accepted", (source, run.reason)
        assert run.rows_valid == expected[source]
        for table, rows in expected[source].items():
            assert warehouse.query(f"SELECT source_run_id, count(*) FROM {table} GROUP BY ALL") == [
                (run.run_id, rows)
            ]
    assert runs["epoch"].rows_quarantined == 32
    assert warehouse.query(
        "SELECT source, table_name, field, reason, count(*) FROM quarantine GROUP BY ALL"
    ) == [("epoch", "evaluation_rows", "model_version", "missing a required value", 32)]


def test_freshness_reads_the_last_accepted_run_not_the_last_run(seeded) -> None:
    from datetime import timedelta

    from bench_pipeline.assets.sources import last_good_data
    from bench_pipeline.ingest.engine import now_utc

    with seeded.warehouse.connect() as conn:
        accepted = conn.execute(
            "SELECT max(finished_at) FROM source_runs WHERE status = 'accepted'"
        ).fetchall()[0][0]
        conn.execute(
            "INSERT INTO source_runs (source, run_id, mode, started_at, finished_at, status, "
            "rows_valid, rows_quarantined, previous_rows, reason, content_sha256) "
            "VALUES ('openrouter_models', 'later-rejected', 'recorded', "
            "?, ?, 'rejected', 0, 0, 50, 'no valid rows', NULL)",
            [accepted + timedelta(hours=30), accepted + timedelta(hours=30)],
        )
        when, hours = last_good_data(conn, "openrouter_models", accepted + timedelta(hours=48))
        assert when == accepted and hours == 48
        assert last_good_data(conn, "arena", now_utc()) is None


def _swebench_entry(folder: str, date: str) -> str:
    """One leaderboard entry as JSON text (`date` spelled as given: it may be a bare number)."""
    details = {f"repo__{folder}-{i}": {"resolved": i % 2 == 0, "cost": 0.5, "api_calls": 3}
               for i in range(3)}  # fmt: skip
    return (
        f'{{"name": "Entry {folder}", "folder": "{folder}", "resolved": 41.5, "date": {date}, '
        f'"cost": 12.25, "tags": ["Model: m-{folder}"], "checked": true, '
        f'"per_instance_details": {json.dumps(details)}}}'
    )


def test_exact_numbers_polars_cannot_hold_quarantine_their_entry(warehouse) -> None:
    """A date sent as a number too large (`1E+999`) or too small (`5E-400`) for polars used to
    reject the run, or (a polars panic, a BaseException) leave it unrecorded: now only those
    entries are quarantined, naming the field, and every per-item result is kept."""
    entries = [
        _swebench_entry("a", '"2025-06-01"'),
        _swebench_entry("b", "5E-400"),
        _swebench_entry("c", "1E+999"),
    ]
    document = '{"leaderboards": [{"name": "bash-only", "results": [' + ", ".join(entries) + "]}]}"
    run = warehouse.ingest("swebench", files={"leaderboards.json": document.encode()})
    assert run.status == "accepted", engine.describe(run)
    assert run.rows_valid == {"swebench_entries": 1, "swebench_item_results": 9}
    assert warehouse.query(
        "SELECT table_name, record_number, field FROM quarantine ORDER BY record_number"
    ) == [("swebench_entries", 2, "date"), ("swebench_entries", 3, "date")]
    assert warehouse.query("SELECT folder FROM swebench_entries") == [("a",)]


def test_prices_that_change_unit_reject_the_run_and_keep_the_live_rows(warehouse) -> None:
    """Every price of the listing sent per thousand tokens instead of per token: each value
    still passes its bounds, but the medians moved 1,000×, so the run is rejected, naming the
    columns, and the live table keeps the last accepted prices."""
    listing = json.loads(
        (
            Path(__file__).resolve().parents[1] / "sources/snapshots/openrouter_models/models.json"
        ).read_bytes()
    )
    first = warehouse.ingest(
        "openrouter_models", files={"models.json": json.dumps(listing).encode()}
    )
    assert first.status == "accepted", first.reason
    before = warehouse.checksums()
    for model in listing["data"]:
        for key, price in (model.get("pricing") or {}).items():
            if isinstance(price, str) and key in ("prompt", "completion"):
                model["pricing"][key] = str(Decimal(price) * 1000)
    run = warehouse.ingest("openrouter_models", files={"models.json": json.dumps(listing).encode()})
    assert run.status == "rejected"
    assert "openrouter_models.prompt_usd_per_m: median" in run.reason
    assert "openrouter_models.completion_usd_per_m: median" in run.reason
    assert "a change of unit?" in run.reason
    assert warehouse.checksums() == before
    assert warehouse.query(
        "SELECT table_column, n_values > 0 FROM source_run_scales WHERE run_id = ? ORDER BY 1",
        [run.run_id],
    ) == [
        ("openrouter_models.completion_usd_per_m", True),
        ("openrouter_models.context_length", True),
        ("openrouter_models.prompt_usd_per_m", True),
    ]
