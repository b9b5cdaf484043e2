"""Fault injection on the ingestion path: every bad payload, failing server or killed process
leaves every live table exactly as it was and is recorded as a rejected run with its reason
(or, for record-level faults, publishes the good rows and quarantines the bad ones)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from loopback import LoopbackServer, Reply

from bench_pipeline.core import settings
from bench_pipeline.resources.sources import LiveHttpClient

pytestmark = pytest.mark.store

MODELS_PATH = "/api/v1/models"  # where openrouter_models' live URL points, under base_url


def _listing(models: list[dict]) -> bytes:
    return json.dumps({"data": models}).encode()


def _assert_rejected_and_untouched(seeded, run, reason: str) -> dict:
    """The run was rejected for `reason`, recorded as such, and no live table changed."""
    warehouse = seeded.warehouse
    assert run.status == "rejected"
    assert reason in (run.reason or "")
    assert warehouse.checksums() == seeded.checksums
    row = warehouse.run_row(run.run_id)
    assert row is not None, "the rejected run left no source_runs row"
    assert row["status"] == "rejected"
    assert row["reason"] == run.reason
    assert row["previous_rows"] == 50
    live_runs = warehouse.query("SELECT DISTINCT source_run_id FROM openrouter_models")
    assert live_runs == [(seeded.run.run_id,)]
    return row


# --- payload faults ----------------------------------------------------------------------------


def test_empty_response_is_rejected(seeded) -> None:
    run = seeded.warehouse.ingest("openrouter_models", files={"models.json": b'{"data": []}'})
    row = _assert_rejected_and_untouched(seeded, run, "no valid rows")
    assert row["rows_valid"] == 0


def test_snapshot_with_40_percent_of_last_rows_is_rejected(seeded) -> None:
    shrunk = seeded.models[:20]  # 20 of the 50 accepted last time, min_row_ratio 0.5
    run = seeded.warehouse.ingest("openrouter_models", files={"models.json": _listing(shrunk)})
    row = _assert_rejected_and_untouched(
        seeded, run, "openrouter_models: 20 valid rows, fewer than 0.5 × the 50"
    )
    assert row["rows_valid"] == 20


def test_truncated_download_is_rejected(seeded) -> None:
    payload = _listing(seeded.models)
    truncated = payload[: len(payload) // 2]
    run = seeded.warehouse.ingest("openrouter_models", files={"models.json": truncated})
    _assert_rejected_and_untouched(seeded, run, "not valid JSON")
    assert run.reason.startswith("unreadable payload: models.json")
    # The broken bytes are kept as received, for whoever investigates.
    [(stored,)] = seeded.warehouse.query(
        "SELECT stored_path FROM raw_files WHERE run_id = ?", [run.run_id]
    )
    assert Path(stored).read_bytes() == truncated
    assert seeded.warehouse.quarantine(run.run_id) == []


def test_records_with_wrong_types_are_quarantined_and_the_rest_published(seeded) -> None:
    warehouse = seeded.warehouse
    models = [dict(m, pricing=dict(m["pricing"])) for m in seeded.models]
    models[4]["context_length"] = "lots"
    models[9]["pricing"]["prompt"] = "abc"
    models[14]["context_length"] = "lots"
    models[14]["pricing"]["prompt"] = "abc"
    bad = {models[i]["id"] for i in (4, 9, 14)}

    run = warehouse.ingest("openrouter_models", files={"models.json": _listing(models)})

    assert run.status == "accepted", run.reason
    assert run.rows_valid == {"openrouter_models": 47}
    assert run.rows_quarantined == 3
    live = warehouse.query("SELECT model_id, source_run_id FROM openrouter_models")
    assert {m for m, _ in live} == {m["id"] for m in models} - bad
    assert {r for _, r in live} == {run.run_id}
    quarantined = [
        (
            q["table_name"],
            q["file_name"],
            q["record_number"],
            q["record_key"],
            q["field"],
            q["reason"],
        )
        for q in warehouse.quarantine(run.run_id)
    ]
    money = "Decimal(precision=24, scale=12)"
    # A field of the wrong JSON type breaks the contract (one reason per record, the first);
    # a string that is no number is caught when validation casts it.
    assert quarantined == [
        (
            "openrouter_models",
            "models.json",
            5,
            models[4]["id"],
            "context_length",
            "contract: expected integer, got string 'lots'",
        ),
        (
            "openrouter_models",
            "models.json",
            10,
            models[9]["id"],
            "prompt_usd_per_m",
            f"expected {money}, got abc",
        ),
        (
            "openrouter_models",
            "models.json",
            15,
            models[14]["id"],
            "context_length",
            "contract: expected integer, got string 'lots'",
        ),
    ]
    record = json.loads(warehouse.quarantine(run.run_id)[0]["record"])
    assert record["model_id"] == models[4]["id"]
    assert record["context_length"] == "lots"
    row = warehouse.run_row(run.run_id)
    assert (row["status"], row["rows_valid"], row["rows_quarantined"]) == ("accepted", 47, 3)
    # Only the source's own table changed.
    after = warehouse.checksums()
    assert {t: c for t, c in after.items() if t != "openrouter_models"} == {
        t: c for t, c in seeded.checksums.items() if t != "openrouter_models"
    }


def _with_duplicate(models: list[dict]) -> tuple[list[dict], str]:
    models = [dict(m) for m in models]
    models[21] = dict(models[21], id=models[20]["id"], name="Same id, other record")
    return models, models[20]["id"]


def test_duplicate_keys_quarantine_both_records(seeded) -> None:
    warehouse = seeded.warehouse
    models, duplicated = _with_duplicate(seeded.models)
    run = warehouse.ingest("openrouter_models", files={"models.json": _listing(models)})

    assert run.status == "accepted", run.reason
    assert run.rows_valid == {"openrouter_models": 48}
    quarantined = warehouse.quarantine(run.run_id)
    assert [(q["record_number"], q["record_key"], q["field"]) for q in quarantined] == [
        (21, duplicated, "model_id"),
        (22, duplicated, "model_id"),
    ]
    assert all(q["reason"].startswith("duplicate key") for q in quarantined)
    assert {json.loads(q["record"])["name"] for q in quarantined} == {
        models[20]["name"],
        "Same id, other record",
    }
    assert warehouse.query(
        "SELECT count(*) FROM openrouter_models WHERE model_id = ?", [duplicated]
    ) == [(0,)]


def test_duplicate_keys_count_as_two_quarantined_records(seeded) -> None:
    models, _ = _with_duplicate(seeded.models)
    run = seeded.warehouse.ingest("openrouter_models", files={"models.json": _listing(models)})
    assert len(seeded.warehouse.quarantine(run.run_id)) == 2
    assert seeded.warehouse.run_row(run.run_id)["rows_quarantined"] == 2


def test_epoch_schema_drift_is_rejected(seeded) -> None:
    warehouse = seeded.warehouse
    first = warehouse.ingest("epoch")  # the recorded real Epoch snapshot
    assert first.status == "accepted", first.reason
    before = warehouse.checksums()
    assert before["evaluation_rows"][0] == 838

    folder = settings.REPO_ROOT / "sources" / "snapshots" / "epoch"
    files = {path.name: path.read_bytes() for path in folder.glob("*.csv")}
    header, rest = files["gpqa_diamond.csv"].split(b"\n", 1)
    files["gpqa_diamond.csv"] = header.replace(b"mean_score", b"score_mean") + b"\n" + rest
    run = warehouse.ingest("epoch", files=files)

    assert run.status == "rejected"
    assert "gpqa_diamond.csv" in run.reason
    assert "mean_score" in run.reason
    assert warehouse.checksums() == before
    row = warehouse.run_row(run.run_id)
    assert (row["status"], row["reason"]) == ("rejected", run.reason)
    assert row["previous_rows"] == sum(first.rows_valid.values())  # 838 + 591
    assert warehouse.query("SELECT DISTINCT source_run_id FROM evaluation_rows") == [
        (first.run_id,)
    ]


# --- live HTTP -------------------------------------------------------------------------------


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(60)
def test_live_fetch_retries_through_500_and_429_then_accepts(seeded, openrouter_listing) -> None:
    payload = json.dumps(openrouter_listing).encode()  # the whole real response, 414 models
    script = [
        Reply(500, body="upstream error"),
        Reply(429, headers={"Retry-After": "1"}, body="rate limited"),
        Reply(200, headers={"Content-Type": "application/json"}, body=payload),
    ]
    with LoopbackServer({MODELS_PATH: script}) as server:
        client = LiveHttpClient(base_url=server.url, backoff_base_seconds=0.01, max_retries=2)
        run = seeded.warehouse.ingest("openrouter_models", client=client)
        gaps = server.gaps(MODELS_PATH)

    assert len(gaps) == 2  # three requests
    assert gaps[1] >= 0.95  # the 429's Retry-After: 1 was honoured
    assert run.status == "accepted", run.reason
    assert run.mode == "live"
    row = seeded.warehouse.run_row(run.run_id)
    assert (row["status"], row["mode"], row["rows_valid"]) == ("accepted", "live", 414)
    assert seeded.warehouse.query(
        "SELECT source_run_id, count(*) FROM openrouter_models GROUP BY ALL"
    ) == [(run.run_id, 414)]


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(60)
def test_live_server_that_always_fails_is_a_rejected_run(seeded) -> None:
    with LoopbackServer({MODELS_PATH: [Reply(500, body="down")]}) as server:
        client = LiveHttpClient(base_url=server.url, backoff_base_seconds=0.01, max_retries=2)
        run = seeded.warehouse.ingest("openrouter_models", client=client)
        requests = server.requests(MODELS_PATH)

    assert len(requests) == 3
    row = _assert_rejected_and_untouched(seeded, run, "fetch failed")
    assert "HTTP 500" in row["reason"]
    assert row["mode"] == "live"
    assert row["rows_valid"] == 0
    assert seeded.warehouse.query(
        "SELECT count(*) FROM raw_files WHERE run_id = ?", [run.run_id]
    ) == [(0,)]


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(60)
def test_live_server_answering_200_with_an_html_page_is_rejected(seeded) -> None:
    page = b"<!DOCTYPE html><html><body>Just a moment...</body></html>"
    with LoopbackServer({MODELS_PATH: [Reply(200, body=page)]}) as server:
        client = LiveHttpClient(base_url=server.url, backoff_base_seconds=0.01, max_retries=2)
        run = seeded.warehouse.ingest("openrouter_models", client=client)

    _assert_rejected_and_untouched(seeded, run, "not valid JSON")


# --- the process killed mid-swap -------------------------------------------------------------

KILLED_INGESTION = textwrap.dedent(
    """
    import json
    import sys
    import threading
    import time
    from pathlib import Path

    from bench_pipeline.ingest import engine
    from bench_pipeline.ingest.catalog import source_definitions
    from bench_pipeline.ingest.payload import RawFile
    from bench_pipeline.ingest.sources import PARSERS
    from bench_pipeline.core.warehouse import connect

    database, raw_root = Path(sys.argv[1]), Path(sys.argv[2])
    count, pad = int(sys.argv[3]), "x" * int(sys.argv[4])
    models = [
        {
            "id": f"synthetic/model-{i}",
            "canonical_slug": f"synthetic/model-{i}-{pad}",
            "name": f"Synthetic {i} {pad}",
            "created": 1780000000 + i,
            "context_length": 1_000_000 + i,  # near the seeded median: no change of unit
            "architecture": {"modality": "text->text", "input_modalities": ["text"],
                             "output_modalities": ["text"], "tokenizer": "Other"},
            "pricing": {"prompt": "0.000001", "completion": "0.000002"},
            "knowledge_cutoff": pad,
            "expiration_date": pad,
        }
        for i in range(count)
    ]
    payload = [RawFile("models.json", json.dumps({"data": models}).encode())]
    del models
    definition = source_definitions()["openrouter_models"]


    def on_stage(stage):
        if stage == "swapping":
            # Return at once so DELETE and INSERT run; announce a moment later, mid-INSERT.
            def announce():
                time.sleep(0.05)
                print("SWAPPING", flush=True)

            threading.Thread(target=announce, daemon=True).start()
        elif stage == "committed":
            print("COMMITTED", flush=True)


    with connect(database) as conn:
        run = engine.fetch_and_store(conn, definition, lambda: payload, raw_root, "recorded")
        run = engine.stage(conn, run, definition, PARSERS["openrouter_models"])
        run = engine.validate(conn, run, definition)
        print("RUN", run.run_id, run.status, sum(run.rows_valid.values()), flush=True)
        engine.publish(conn, run, definition, on_stage=on_stage)
    print("RETURNED", flush=True)
    time.sleep(60)
    """
)
KILLED_MODELS = 40_000
KILLED_PAD = 600  # characters in four text fields: makes the INSERT take a few tenths of a second


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(120)
def test_sigkill_mid_swap_leaves_live_tables_and_runs_untouched(
    seeded, openrouter_listing, tmp_path: Path
) -> None:
    warehouse = seeded.warehouse
    script = tmp_path / "killed_ingestion.py"
    script.write_text(KILLED_INGESTION)
    stderr_path = tmp_path / "killed_ingestion.stderr"
    command = [
        sys.executable,
        str(script),
        str(warehouse.path),
        str(warehouse.raw_root),
        str(KILLED_MODELS),
        str(KILLED_PAD),
    ]
    with stderr_path.open("w") as stderr:
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=settings.REPO_ROOT
        )
    try:
        assert child.stdout is not None
        lines = []
        for line in child.stdout:
            lines.append(line)
            if line.startswith("SWAPPING"):
                os.kill(child.pid, signal.SIGKILL)
                break
        else:
            pytest.fail(f"no SWAPPING marker; stdout {lines}, stderr {stderr_path.read_text()}")
        assert child.wait(timeout=30) == -signal.SIGKILL
        lines += child.stdout.read().splitlines(keepends=True)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()

    run_line = next(line.split() for line in lines if line.startswith("RUN "))
    killed_run_id = run_line[1]
    assert run_line[2:] == ["pending", str(KILLED_MODELS)]
    assert not any(line.startswith(("COMMITTED", "RETURNED")) for line in lines), lines

    # The child really worked on this file (its raw payload is recorded) ...
    assert warehouse.query("SELECT count(*) FROM raw_files WHERE run_id = ?", [killed_run_id]) == [
        (1,)
    ]
    # ... and nothing of its half-done swap survived.
    assert warehouse.checksums() == seeded.checksums
    assert warehouse.run_row(killed_run_id) is None
    assert warehouse.query("SELECT run_id FROM source_runs") == [(seeded.run.run_id,)]
    assert warehouse.query(
        "SELECT count(*) FROM source_run_tables WHERE run_id = ?", [killed_run_id]
    ) == [(0,)]

    # The warehouse still takes a normal ingestion afterwards.
    models = openrouter_listing["data"][10:70]
    run = warehouse.ingest("openrouter_models", files={"models.json": _listing(models)})
    assert run.status == "accepted", run.reason
    assert run.previous_rows == 50  # the last accepted run is still the seed
    assert warehouse.query(
        "SELECT source_run_id, count(*) FROM openrouter_models GROUP BY ALL"
    ) == [(run.run_id, 60)]


# --- payload caps ------------------------------------------------------------------------------


def _capped(source: str, **limits: int):
    """The source's definition with its `[limits]` replaced by `limits`."""
    from bench_pipeline.ingest.catalog import SourceLimits, source_definitions

    definition = source_definitions()[source]
    return definition.model_copy(update={"limits": SourceLimits(**limits)})


def _ingest(warehouse, definition, client):
    """`Warehouse.ingest` for a definition of the test's own (caps lowered)."""
    from bench_pipeline.ingest import engine
    from bench_pipeline.ingest.sources import PARSERS

    with warehouse.connect() as conn:
        run = engine.fetch_and_store(
            conn, definition, lambda: client.fetch(definition), warehouse.raw_root, client.mode
        )
        run = engine.stage(conn, run, definition, PARSERS[definition.name])
        run = engine.validate(conn, run, definition)
        return engine.publish(conn, run, definition)


def _peak_bytes(fetch) -> tuple[object, int]:
    """`fetch()`'s outcome (or the error it raised) and the peak of Python memory during it."""
    import tracemalloc

    tracemalloc.start()
    try:
        outcome: object = fetch()
    except Exception as error:
        outcome = error
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return outcome, peak


@pytest.mark.faults
def test_a_recorded_file_past_the_cap_is_refused_while_it_is_read(seeded, tmp_path) -> None:
    """A 64 MB recorded file under a 1 MiB cap: reading stops at the cap (memory stays near
    it, not near the file), and the run is rejected with the reason; nothing live changes."""
    from bench_pipeline.core.http import PayloadTooLarge
    from bench_pipeline.resources.sources import RecordedSnapshotClient

    folder = tmp_path / "big" / "openrouter_models"
    folder.mkdir(parents=True)
    with (folder / "models.json").open("wb") as out:
        out.write(b'{"data": [' + b" " * (64 * 1024 * 1024) + b"]}")
    definition = _capped("openrouter_models", max_bytes=1024 * 1024)
    client = RecordedSnapshotClient(snapshots_dir=str(tmp_path / "big"))
    refused, peak = _peak_bytes(lambda: client.fetch(definition))
    assert isinstance(refused, PayloadTooLarge), refused
    assert peak < 4 * 1024 * 1024, peak  # the cap and a chunk, never the file
    run = _ingest(seeded.warehouse, definition, client)
    row = _assert_rejected_and_untouched(seeded, run, "passes its cap of 1,048,576 bytes")
    assert "limits.max_bytes of sources/definitions/openrouter_models.toml" in row["reason"]
    assert "models.json" in row["reason"]
    again = seeded.warehouse.ingest(
        "openrouter_models", files={"models.json": _listing(seeded.models)}
    )
    assert again.status == "unchanged"  # the next run works (the live payload, unchanged)


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_live_body_past_the_cap_is_refused_while_it_streams(seeded) -> None:
    """Streamed without a length, 40 MiB against a 2 MiB cap: the client stops reading at the
    cap. Declared past the cap (Content-Length), nothing of the body is read."""
    definition = _capped("openrouter_models", max_bytes=2 * 1024 * 1024)
    chunk = b" " * (1024 * 1024)
    streamed = Reply(200, chunks=[(0.0, b'{"data": [')] + [(0.0, chunk)] * 40)
    declared = Reply(200, body=b" " * (3 * 1024 * 1024))
    for reply, said in ((streamed, "passes its cap of 2,097,152 bytes"), (declared, "declares")):
        with LoopbackServer({MODELS_PATH: [reply]}) as server:
            client = LiveHttpClient(base_url=server.url, backoff_base_seconds=0.01, max_retries=2)
            refused, peak = _peak_bytes(lambda: client.fetch(definition))  # noqa: B023
            run = _ingest(seeded.warehouse, definition, client)
            asked = len(server.requests(MODELS_PATH))
        assert said in str(refused), refused
        assert peak < 8 * 1024 * 1024, peak
        assert asked == 2  # once per fetch: a payload past its cap is never retried
        _assert_rejected_and_untouched(seeded, run, "passes its cap of 2,097,152 bytes")


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_zip_member_past_the_cap_is_refused_while_it_unpacks(warehouse) -> None:
    """A 60 KB download unpacking to 60 MiB (a member read whole before): the member is
    read until the cap and the run rejected; epoch's live tables keep their accepted run."""
    import io
    import zipfile

    first = warehouse.ingest("epoch")
    assert first.status == "accepted", first.reason
    before = warehouse.checksums()
    members = sorted((settings.REPO_ROOT / "sources" / "snapshots" / "epoch").iterdir())
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in members:
            archive.writestr(path.name, path.read_bytes())
        archive.writestr("gpqa_diamond.csv", b"0" * (60 * 1024 * 1024))  # a second, huge copy
    definition = _capped("epoch", max_bytes=8 * 1024 * 1024)
    zip_path = "/data/benchmark_data.zip"
    with LoopbackServer({zip_path: [Reply(200, body=packed.getvalue())]}) as server:
        client = LiveHttpClient(base_url=server.url, backoff_base_seconds=0.01, max_retries=0)
        refused, peak = _peak_bytes(lambda: client.fetch(definition))
        run = _ingest(warehouse, definition, client)
    assert "zip member gpqa_diamond.csv: the payload passes its cap" in str(refused), refused
    assert peak < 24 * 1024 * 1024, peak
    assert run.status == "rejected" and "passes its cap of 8,388,608 bytes" in run.reason
    assert warehouse.checksums() == before


ENDPOINTS_MODELS = "/api/v1/models"


@pytest.mark.faults
@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_listing_past_the_model_cap_makes_no_endpoint_request(warehouse) -> None:
    """100,000 ids in the listing were 100,000 requests: now the listing is refused past
    openrouter_endpoints' declared `max_models` before any per-model request is made."""
    from bench_pipeline.ingest.catalog import source_definitions

    first = warehouse.ingest("openrouter_endpoints")
    assert first.status == "accepted", first.reason
    before = warehouse.checksums()
    cap = source_definitions()["openrouter_endpoints"].caps.models
    listing = _listing([{"id": f"lab/model-{n}"} for n in range(100_000)])
    with LoopbackServer({ENDPOINTS_MODELS: [Reply(200, body=listing)]}) as server:
        client = LiveHttpClient(base_url=server.url, backoff_base_seconds=0.01, max_retries=0)
        run = warehouse.ingest("openrouter_endpoints", client=client)
        asked = [r.path for r in server.requests()]
    assert asked == [ENDPOINTS_MODELS]  # the listing, and not one endpoint
    assert run.status == "rejected"
    assert f"names 100,000 models, past the cap of {cap:,}" in run.reason
    assert "limits.max_models of sources/definitions/openrouter_endpoints.toml" in run.reason
    assert warehouse.checksums() == before


@pytest.mark.faults
def test_a_payload_past_the_record_cap_is_rejected(seeded, openrouter_listing) -> None:
    from bench_pipeline.resources.sources import RecordedSnapshotClient

    definition = _capped("openrouter_models", max_records=100)
    snapshots = seeded.warehouse.write_snapshot(
        "openrouter_models", {"models.json": json.dumps(openrouter_listing).encode()}
    )
    run = _ingest(
        seeded.warehouse, definition, RecordedSnapshotClient(snapshots_dir=str(snapshots))
    )
    _assert_rejected_and_untouched(
        seeded,
        run,
        "the payload holds 414 records, past the cap of 100 "
        "(limits.max_records of sources/definitions/openrouter_models.toml)",
    )
