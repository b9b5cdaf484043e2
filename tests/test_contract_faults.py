"""Faults against the source contracts, on copies of the recorded snapshots: each payload goes
through the real ingestion chain of its source, then everything `bench run` derives and the
release, and the live and published state (checksums of every live table, `price_history`,
and every file of every published table of the latest release) is the same afterwards; only
the published run log (`source_runs`) reports the rejected run, as it should.

A fault that breaks a contract rejects the run with a reason naming the file, the field and
the ratio; an odd record is quarantined with its file, number, key, field and reason while
every other record of the same payload is accepted unchanged.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest
from faults_pipeline import Built, Pipeline, build_recorded, count_faults, listing

from bench_pipeline.ingest.acceptance import accept_run
from bench_pipeline.ingest.contract import MAX_DEPTH
from bench_pipeline.ingest.tables import MAX_USD_PER_M

pytestmark = [pytest.mark.faults, pytest.mark.integration]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_recorded(tmp_path_factory.mktemp("contract-faults"))


@pytest.fixture
def pipeline(built: Built, tmp_path: Path) -> Pipeline:
    return Pipeline.copy_of(built, tmp_path)


def _rejected_and_unchanged(pipeline: Pipeline, before: dict, run, *reasons: str) -> None:
    """The run is rejected for every one of `reasons`, recorded with its reason, and after the
    rest of the pipeline and the release nothing live or published changed."""
    assert run.status == "rejected", run
    for reason in reasons:
        assert reason in (run.reason or ""), run.reason
    [(status, recorded)] = pipeline.query(
        "SELECT status, reason FROM source_runs WHERE run_id = ?", [run.run_id]
    )
    assert (status, recorded) == ("rejected", run.reason)
    pipeline.publish()
    assert pipeline.state() == before
    [(published,)] = pipeline.query(
        "SELECT status FROM source_runs WHERE source = ? ORDER BY finished_at DESC LIMIT 1",
        [run.source],
    )
    assert published == "rejected"  # what the release's run log now reports


# --- renamed nested fields, one source at a time ----------------------------------------------


def _renamed(document, path: list[str], new: str):
    """A copy of each record with the field at `path` renamed to `new`."""
    record = copy.deepcopy(document)
    parent = record
    for step in path[:-1]:
        parent = parent.get(step)
        if not isinstance(parent, dict):
            return record
    if path[-1] in parent:
        parent[new] = parent.pop(path[-1])
    return record


def test_renamed_openrouter_price_field_rejects_the_run(pipeline: Pipeline) -> None:
    before = pipeline.state()
    document = json.loads(pipeline.payload("openrouter_models")["models.json"])
    document["data"] = [
        _renamed(m, ["pricing", "prompt"], "prompt_price") for m in document["data"]
    ]
    run = pipeline.ingest("openrouter_models", {"models.json": listing(document)})
    _rejected_and_unchanged(
        pipeline, before, run, "models.json: field pricing.prompt is null in 100% of 414 records"
    )


def test_renamed_models_dev_cost_and_open_weights_reject_the_run(pipeline: Pipeline) -> None:
    before = pipeline.state()
    catalogue = json.loads(pipeline.payload("models_dev")["api.json"])
    for provider in catalogue.values():
        provider["models"] = {
            key: _renamed(_renamed(model, ["cost"], "costs"), ["open_weights"], "weights")
            for key, model in provider["models"].items()
        }
    run = pipeline.ingest("models_dev", {"api.json": listing(catalogue)})
    _rejected_and_unchanged(
        pipeline,
        before,
        run,
        "api.json: field cost.input is null in 100% of 5258 records, 7% in the last accepted run",
        "api.json: field open_weights is null in 100%",
    )
    count_faults(2)


def test_renamed_endpoint_and_arena_fields_reject_their_runs(pipeline: Pipeline) -> None:
    before = pipeline.state()
    endpoints = pipeline.payload("openrouter_endpoints")
    for name, content in endpoints.items():
        document = json.loads(content)
        document["data"]["endpoints"] = [
            _renamed(e, ["pricing", "completion"], "output") for e in document["data"]["endpoints"]
        ]
        endpoints[name] = listing(document)
    run = pipeline.ingest("openrouter_endpoints", endpoints)
    _rejected_and_unchanged(pipeline, before, run, "field pricing.completion is null in 100%")

    arena = pipeline.payload("arena")
    for name in [n for n in arena if n.startswith("leaderboard-")]:
        boards = json.loads(arena[name])
        arena[name] = listing(
            {
                c: {k: _renamed(v, ["rating"], "elo") for k, v in m.items()}
                for c, m in boards.items()
            }
        )
    run = pipeline.ingest("arena", arena)
    _rejected_and_unchanged(pipeline, before, run, "leaderboard-*.json: field rating is null in")
    count_faults(2)


# --- missing or emptied files ---------------------------------------------------------------


def _csv_header_only(content: bytes) -> bytes:
    return content.split(b"\n", 1)[0] + b"\n"


def test_swebench_drift_rejects_and_an_odd_entry_is_quarantined(pipeline: Pipeline) -> None:
    """A renamed per-item field rejects the run; one entry with a string score is quarantined
    by number while the board's other entries, and every per-item result (numbered on their
    own: item 5 is not entry 5), are accepted."""
    before = pipeline.state()
    document = json.loads(pipeline.payload("swebench")["leaderboards.json"])
    drifted = copy.deepcopy(document)
    for board in drifted["leaderboards"]:
        board["results"] = [
            _renamed(r, ["per_instance_details"], "instances") for r in board["results"]
        ]
    run = pipeline.ingest("swebench", {"leaderboards.json": listing(drifted)})
    _rejected_and_unchanged(
        pipeline, before, run, "leaderboards.json: field per_instance_details is null in 100%"
    )

    odd = copy.deepcopy(document)
    entries = [r for board in odd["leaderboards"] for r in board["results"]]
    entries[4]["resolved"] = "75.2%"
    items = sum(len(e.get("per_instance_details") or {}) for e in entries)
    assert items > 5  # so a problem wrongly keyed by number alone would mark item 5
    run = pipeline.ingest("swebench", {"leaderboards.json": listing(odd)})
    assert run.status == "accepted", run.reason
    assert run.rows_valid["swebench_entries"] == len(entries) - 1
    assert run.rows_valid["swebench_item_results"] == items
    assert pipeline.query(
        "SELECT table_name, record_number FROM quarantine WHERE run_id = ?", [run.run_id]
    ) == [("swebench_entries", 5)]
    key, field, reason = pipeline.quarantine(run.run_id)[("leaderboards.json", 5)]
    assert field == "resolved" and "expected number" in reason, (key, field, reason)
    count_faults(2)


def test_missing_or_emptied_evaluation_file_rejects_the_epoch_run(pipeline: Pipeline) -> None:
    before = pipeline.state()
    files = pipeline.payload("epoch")
    rows = len(list(csv.DictReader(io.StringIO(files["gpqa_diamond.csv"].decode()))))
    missing = {n: c for n, c in files.items() if n != "gpqa_diamond.csv"}
    run = pipeline.ingest("epoch", missing)
    _rejected_and_unchanged(pipeline, before, run, "contract: gpqa_diamond.csv: no such file")

    # The file is there but holds no rows (−11% of the table: a per-table ratio passes it).
    emptied = dict(files, **{"gpqa_diamond.csv": _csv_header_only(files["gpqa_diamond.csv"])})
    run = pipeline.ingest("epoch", emptied)
    _rejected_and_unchanged(
        pipeline,
        before,
        run,
        "evaluation_rows.evaluation_id gpqa_diamond: 0 valid rows, fewer than 0.5 × the "
        f"{rows} of the last accepted run",
        "evaluation_rows._file gpqa_diamond.csv: 0 valid rows",
    )
    count_faults(2)


def test_empty_or_missing_arena_file_rejects_the_arena_run(pipeline: Pipeline) -> None:
    before = pipeline.state()
    files = pipeline.payload("arena")
    run = pipeline.ingest("arena", dict(files, **{"leaderboard-vision.json": b"{}"}))
    _rejected_and_unchanged(
        pipeline, before, run, "arena_ratings.leaderboard vision: 0 valid rows, fewer than 0.5"
    )
    run = pipeline.ingest("arena", dict(files, **{"leaderboard-text.json": b""}))
    _rejected_and_unchanged(pipeline, before, run, "leaderboard-text.json: empty file")
    run = pipeline.ingest(
        "arena", {n: c for n, c in files.items() if n != "leaderboard-vision-style-control.json"}
    )
    _rejected_and_unchanged(
        pipeline, before, run, "contract: leaderboard-vision-style-control.json: no such file"
    )
    count_faults(3)


# --- odd records: quarantined, the rest of the payload accepted -----------------------------


DEEP = "faults: nested 100,000 levels deep here"


def _with_deep_values(content: bytes, levels: int = 100_000) -> bytes:
    """The listing with each `DEEP` placeholder replaced by JSON nested `levels` deep (too deep
    for `json.dumps` to write, or Python's own parser to read)."""
    nested = b'{"x":' * levels + b"1" + b"}" * levels
    return content.replace(json.dumps(DEEP).encode(), nested)


def _odd_openrouter_models(template: dict) -> list[tuple[dict, str, str]]:
    """(record, field, reason fragment): one odd thing each, added to the real listing."""
    odd = []

    def add(suffix: str, field: str, reason: str, **changes) -> None:
        record = copy.deepcopy(template) | {"id": f"faults/odd-{suffix}", "name": f"Odd {suffix}"}
        for key, value in changes.items():
            record[key] = value
        odd.append((record, field, reason))

    add("reasoning", "reasoning", "expected object, got boolean True", reasoning=True)
    add("pricing", "pricing", "expected object, got string 'free'", pricing="free")
    add("created-float", "created", "expected integer, got number 100000000000000.0", created=1e14)
    add("created-int", "record", "unreadable record (ValueError", created=10**14)
    add("deep", "record", f"nested deeper than {MAX_DEPTH} levels", architecture=DEEP)
    add("nan", "context_length", "not a finite number", context_length=float("nan"))
    add("infinity", "top_provider.context_length", "not a finite number",
        top_provider={"context_length": float("inf")})  # fmt: skip
    add("negative", "prompt_usd_per_m", "failed greater_than_or_equal_to(0)",
        pricing={"prompt": "-0.000002", "completion": "0.000001"})  # fmt: skip
    add("absurd", "prompt_usd_per_m", f"less_than_or_equal_to({MAX_USD_PER_M})",
        pricing={"prompt": "999999", "completion": "0.000001"})  # fmt: skip
    add("year-9999", "created_at", "dated 9999-01-01", created=253370764800)
    return odd


def test_odd_openrouter_records_are_quarantined_and_the_rest_accepted(pipeline: Pipeline) -> None:
    before = pipeline.state(with_price_history=False)
    document = json.loads(pipeline.payload("openrouter_models")["models.json"])
    real = len(document["data"])
    odd = _odd_openrouter_models(document["data"][0])
    document["data"] += [record for record, _, _ in odd]
    # Python's own parser refuses 100,000 levels: the payload's reader must cut there.
    payload = _with_deep_values(listing(document))
    run = pipeline.ingest("openrouter_models", {"models.json": payload})

    assert run.status == "accepted", run.reason
    assert run.rows_valid == {"openrouter_models": real}
    quarantined = pipeline.quarantine(run.run_id)
    assert len(quarantined) == len(odd)
    for number, (record, field, reason) in enumerate(odd, start=real + 1):
        key, found_field, found_reason = quarantined[("models.json", number)]
        assert key == record["id"]
        assert found_field == field, (record["id"], found_field, found_reason)
        assert reason in found_reason, (record["id"], found_reason)
    # Variable pricing is only OpenRouter's documented -1, never any negative.
    assert pipeline.query(
        "SELECT count(*) FROM openrouter_models WHERE variable_pricing AND "
        "(prompt_usd_per_m IS NOT NULL OR completion_usd_per_m IS NOT NULL)"
    ) == [(0,)]
    pipeline.publish()
    assert pipeline.state(with_price_history=False) == before
    count_faults(len(odd))


def test_odd_models_dev_arena_and_epoch_records_are_quarantined(pipeline: Pipeline) -> None:
    before = pipeline.state(with_price_history=False)
    catalogue = json.loads(pipeline.payload("models_dev")["api.json"])
    provider = next(iter(catalogue.values()))
    template = next(iter(provider["models"].values()))
    real = sum(len(p["models"]) for p in catalogue.values())
    odd = {
        "cost-text": (dict(template, id="cost-text", cost="0.5/1M"), "cost"),
        "limit-number": (dict(template, id="limit-number", limit=128000), "limit"),
        "nan-cost": (dict(template, id="nan-cost", cost={"input": float("nan")}), "cost.input"),
        "negative": (dict(template, id="negative", cost={"input": -3, "output": 1}), "input_usd"),
        "year-9999": (dict(template, id="year-9999", release_date="9999-01-01"), "release_date"),
    }
    provider["models"] |= {key: record for key, (record, _) in odd.items()}
    run = pipeline.ingest("models_dev", {"api.json": listing(catalogue)})
    assert run.status == "accepted", run.reason
    assert run.rows_valid == {"modelsdev_models": real}
    found = {key.split("/")[1]: field for key, field, _ in pipeline.quarantine(run.run_id).values()}
    assert {k: found.get(k, "")[: len(f)] for k, (_, f) in odd.items()} == {
        k: f for k, (_, f) in odd.items()
    }

    files = pipeline.payload("arena")
    boards = json.loads(files["leaderboard-text.json"])
    category = next(iter(boards))
    boards[category] |= {
        "faults-nan": {"rating": float("nan"), "rating_q025": 1, "rating_q975": 2},
        "faults-inf": {"rating": float("inf"), "rating_q025": 1, "rating_q975": 2},
        "faults-text": {"rating": "high", "rating_q025": 1, "rating_q975": 2},
    }
    files["leaderboard-text.json"] = listing(boards)
    run = pipeline.ingest("arena", files)
    assert run.status == "accepted", run.reason
    reasons = {key: (field, why) for key, field, why in pipeline.quarantine(run.run_id).values()}
    for model in ("faults-nan", "faults-inf", "faults-text"):
        assert reasons[f"text/{category}/{model}"][0] == "rating", reasons

    files = pipeline.payload("epoch")
    lines = files["gpqa_diamond.csv"].decode().splitlines(keepends=True)
    first = next(csv.DictReader(io.StringIO("".join(lines[:2]))))
    future = dict(first, **{"id": "faults-9999", "Release date": "9999-01-01"})
    nan = dict(first, **{"id": "faults-nan", "mean_score": "nan"})
    over = dict(first, **{"id": "faults-over", "mean_score": "1.7"})  # 170%: off the scale
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(first))
    writer.writerows([future, nan, over])
    files["gpqa_diamond.csv"] = files["gpqa_diamond.csv"].rstrip(b"\r\n") + b"\n"
    files["gpqa_diamond.csv"] += out.getvalue().encode()
    run = pipeline.ingest("epoch", files)
    assert run.status == "accepted", run.reason
    reasons = {key: (field, why) for key, field, why in pipeline.quarantine(run.run_id).values()}
    assert reasons["gpqa_diamond/faults-9999"][0] == "release_date"
    assert reasons["gpqa_diamond/faults-nan"] == ("score", "not a finite number: NaN")
    assert reasons["gpqa_diamond/faults-over"][0] == "score"

    pipeline.publish()
    after = pipeline.state(with_price_history=False)
    assert after == before, [
        k for k in before["published"] if before["published"][k] != after["published"].get(k)
    ]
    count_faults(len(odd) + 3 + 3)


# --- an accepted override -----------------------------------------------------------------------


def test_accepted_override_is_recorded_and_is_the_next_baseline(pipeline: Pipeline) -> None:
    before = pipeline.state()
    document = json.loads(pipeline.payload("openrouter_models")["models.json"])
    shrunk = dict(document, data=document["data"][:150])  # a genuine delisting: 414 → 150
    run = pipeline.ingest("openrouter_models", {"models.json": listing(shrunk)})
    _rejected_and_unchanged(
        pipeline, before, run, "openrouter_models: 150 valid rows, fewer than 0.5 × the 414"
    )
    with pytest.raises(ValueError, match="a name and a reason"):
        with_conn(pipeline, lambda c: accept_run(c, run.run_id, " ", "delisted"))

    again = pipeline.ingest("openrouter_models", {"models.json": listing(shrunk)})
    assert again.status == "rejected"  # without an acceptance, for ever

    source = with_conn(
        pipeline, lambda c: accept_run(c, run.run_id, "ops", "OpenRouter delisted 264 models")
    )
    assert source == "openrouter_models"
    assert pipeline.query(
        "SELECT source, accepted_by, reason FROM source_run_acceptances WHERE run_id = ?",
        [run.run_id],
    ) == [("openrouter_models", "ops", "OpenRouter delisted 264 models")]
    [(status,)] = pipeline.query("SELECT status FROM source_runs WHERE run_id = ?", [run.run_id])
    assert status == "rejected"  # recorded beside the run, never an edit of it
    with pytest.raises(ValueError, match="already accepted"):
        with_conn(pipeline, lambda c: accept_run(c, run.run_id, "ops", "twice"))

    # The next run is compared with the accepted one: 140 of 150 passes ...
    smaller = dict(document, data=document["data"][:140])
    next_run = pipeline.ingest("openrouter_models", {"models.json": listing(smaller)})
    assert next_run.status == "accepted", next_run.reason
    assert next_run.previous_rows == 150
    # ... and a further halving is measured against it (and names it).
    halved = dict(document, data=document["data"][:60])
    last = pipeline.ingest("openrouter_models", {"models.json": listing(halved)})
    assert last.status == "rejected"
    assert f"fewer than 0.5 × the 140 of the last accepted run {next_run.run_id}" in last.reason


def with_conn(pipeline: Pipeline, action):
    from bench_pipeline.core.warehouse import connect

    with connect(pipeline.database) as conn:
        return action(conn)
