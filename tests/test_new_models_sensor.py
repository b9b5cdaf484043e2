"""The `new_openrouter_models` sensor on a real DuckDB warehouse and an ephemeral Dagster
instance: it proposes each model no setup covers once, registers its model-run partitions,
asks only for the free preparing assets, and a proposed partition runs like a declared one."""

import copy
import io
import json
from dataclasses import replace
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import Warehouse

from bench_pipeline.assets.runs import MODEL_RUN_PARTITIONS, MODEL_RUNS_KEY, model_runs
from bench_pipeline.cli.incremental import stretches
from bench_pipeline.cli.main import declared_run_tags
from bench_pipeline.definitions import build_definitions
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.plan import (
    planned_partitions,
    setup_partition_key,
    work_items,
)
from bench_pipeline.runs.proposals import (
    NEW_WITHIN,
    Ingestion,
    ListedModel,
    benchmarked_companies,
    proposed_setup,
    stored_proposals,
    why_not_new,
    why_not_runnable,
    with_proposals,
)
from bench_pipeline.sensors.new_models import NAME
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups, setup_id_of

pytestmark = pytest.mark.assets

DECLARED = ("openai/gpt-5.4", "anthropic/claude-opus-4.6")
PROPOSABLE = (
    "qwen/qwen3.8-27b",
    "deepseek/deepseek-v3.2",
    "openai/gpt-5.4-mini",
    "mistralai/mistral-small-2603",
)
NOT_PROPOSABLE = (
    "~openai/gpt-mini-latest",  # an alias that moves
    "openai/gpt-5.4:batch",  # a routing variant
    "openrouter/auto",  # a router, priced per request
    "openrouter/free",  # a router, priced at 0
    "openai/gpt-4o-mini",  # on OpenRouter since 2024: not new
)
LISTED = DECLARED + PROPOSABLE + NOT_PROPOSABLE


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """BENCH_HOME is tmp_path, whose warehouse the `warehouse` fixture migrates."""
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    return tmp_path


def _listing(all_models: list[dict[str, Any]], ids: tuple[str, ...]) -> bytes:
    """The listed models, those in PROPOSABLE made new (added when the newest model was)."""
    by_id = {m["id"]: copy.deepcopy(m) for m in all_models}
    newest = max(m["created"] for m in all_models)
    for model_id in PROPOSABLE:
        by_id[model_id]["created"] = newest - 86_400
    return json.dumps({"data": [by_id[i] for i in ids]}).encode()


def _ingest(warehouse: Warehouse, content: bytes) -> str:
    run = warehouse.ingest("openrouter_models", files={"models.json": content})
    assert run.status == "accepted"
    return run.run_id


def _tick(instance: dg.DagsterInstance, cursor: str | None):
    """One evaluation with fresh Definitions (as after a restart), given the resources and
    applying its partition requests to the instance as the sensor daemon does."""
    definitions = build_definitions()
    sensor = definitions.resolve_sensor_def(NAME)
    resources = {k: definitions.resources[k] for k in sensor.required_resource_keys}
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, definitions=definitions, resources=resources
    ) as ctx:
        result = sensor.evaluate_tick(ctx)
    for request in result.dynamic_partitions_requests or []:
        known = set(instance.get_dynamic_partitions(request.partitions_def_name))
        new = [k for k in request.partition_keys if k not in known]
        instance.add_dynamic_partitions(request.partitions_def_name, new)
    return result


def _requested(result) -> list[str]:
    return [k for r in result.dynamic_partitions_requests or [] for k in r.partition_keys]


def _proposal_rows(warehouse: Warehouse) -> list[tuple]:
    return warehouse.query(
        "SELECT model_id, source_run_id, first_seen, setup_id, company, status, partition_keys "
        "FROM setup_proposals ORDER BY model_id"
    )


def test_a_first_tick_proposes_each_model_no_setup_covers(
    home: Path, warehouse: Warehouse, openrouter_listing: dict[str, Any]
) -> None:
    run_id = _ingest(warehouse, _listing(openrouter_listing["data"], LISTED))
    instance = dg.DagsterInstance.ephemeral()
    result = _tick(instance, None)

    rows = _proposal_rows(warehouse)
    assert [r[0] for r in rows] == sorted(PROPOSABLE)
    (day,) = warehouse.query(
        "SELECT CAST(finished_at AS DATE) FROM source_runs WHERE run_id = ?", [run_id]
    )[0]
    assert {(r[1], r[2], r[5]) for r in rows} == {(run_id, day, "proposed")}
    companies = {r[0]: r[4] for r in rows}
    assert companies == {
        "qwen/qwen3.8-27b": "Qwen",  # from OpenRouter's name
        "deepseek/deepseek-v3.2": "DeepSeek",  # as setups/judges.toml spells it
        "openai/gpt-5.4-mini": "OpenAI",  # as setups/models.toml spells it
        "mistralai/mistral-small-2603": "Mistral AI",  # not OpenRouter's "Mistral"
    }

    # Each proposal: the exact API id in the default harness, with a setup id computed as for
    # a declared setup, and one partition named after it (every case version inside), all
    # registered.
    catalog = load_setups()
    with warehouse.connect() as conn:
        proposals = {p.model_id: p for p in stored_proposals(conn)}
    registered = set(instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name))
    for model_id, _run, _day, setup_id, _company, _status, keys in rows:
        setup = proposals[model_id].setup
        assert setup.model.api_id == model_id
        assert setup.harness == catalog.harnesses["api-bare"]
        assert setup.model.reasoning_effort is None and setup.model.temperature is None
        assert setup.model.pricing_date == day
        assert setup_id == setup_id_of(setup.model, setup.harness)
        assert keys == [setup_partition_key(setup)]
        assert keys[0].endswith("@api-bare") and setup.model.id in keys[0]
        assert set(keys) <= registered
    assert sorted(_requested(result)) == sorted(k for r in rows for k in r[6])
    assert len(registered) == len(PROPOSABLE)

    # It asks for the free preparing assets under the ingestion's run key, never for runs.
    (request,) = result.run_requests
    assert request.run_key == f"{NAME}-{run_id}"
    assert set(request.asset_selection) == {
        dg.AssetKey(["runs", "task_bank"]),
        dg.AssetKey(["runs", "model_rates"]),
    }
    assert MODEL_RUNS_KEY not in request.asset_selection
    assert result.cursor == run_id


def test_no_ingestion_a_second_tick_and_a_restart_do_nothing_twice(
    home: Path, warehouse: Warehouse, openrouter_listing: dict[str, Any]
) -> None:
    instance = dg.DagsterInstance.ephemeral()
    empty = _tick(instance, None)
    assert not empty.run_requests and "no new accepted OpenRouter ingestion" in empty.skip_message

    _ingest(warehouse, _listing(openrouter_listing["data"], LISTED))
    first = _tick(instance, None)
    rows = _proposal_rows(warehouse)
    partitions = instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)
    assert len(rows) == len(PROPOSABLE) and first.cursor

    again = _tick(instance, first.cursor)  # the next tick, and one after a restart
    restarted = _tick(instance, first.cursor)
    for result in (again, restarted):
        assert result.run_requests == [] and not _requested(result)
        assert f"last handled: {first.cursor}" in result.skip_message
    assert _proposal_rows(warehouse) == rows
    assert instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name) == partitions

    # A tick cut short before its cursor was saved is done again with the same outcome: the
    # same proposals and partitions and run key, and no proposal stored twice.
    redone = _tick(instance, None)
    assert sorted(_requested(redone)) == sorted(_requested(first))
    assert redone.run_requests[0].run_key == first.run_requests[0].run_key
    assert _proposal_rows(warehouse) == rows
    assert instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name) == partitions


def test_a_new_ingestion_with_one_more_model_proposes_exactly_that_one(
    home: Path, warehouse: Warehouse, openrouter_listing: dict[str, Any]
) -> None:
    models = openrouter_listing["data"]
    _ingest(warehouse, _listing(models, LISTED))
    instance = dg.DagsterInstance.ephemeral()
    first = _tick(instance, None)
    before = _proposal_rows(warehouse)

    # The same listing again is no new ingestion (its payload is the live one): nothing to do.
    unchanged = warehouse.ingest(
        "openrouter_models", files={"models.json": _listing(models, LISTED)}
    )
    assert unchanged.status == "unchanged"
    same = _tick(instance, first.cursor)
    assert same.run_requests == [] and not _requested(same)
    assert "no new accepted OpenRouter ingestion" in same.skip_message
    assert _proposal_rows(warehouse) == before

    # A copy of the listing with one more (made-up) model, from a modified snapshot in tmp.
    extra = copy.deepcopy(next(m for m in models if m["id"] == "qwen/qwen3.8-27b"))
    extra.update(id="qwen/qwen3.9-preview", name="Qwen: Qwen3.9 Preview", canonical_slug=None)
    listing = json.loads(_listing(models, LISTED))
    listing["data"].append(extra)
    new_run = _ingest(warehouse, json.dumps(listing).encode())

    third = _tick(instance, first.cursor)
    rows = _proposal_rows(warehouse)
    added = [r for r in rows if r not in before]
    assert [r[0] for r in added] == ["qwen/qwen3.9-preview"]
    assert added[0][1] == new_run
    assert sorted(_requested(third)) == sorted(added[0][6])
    assert third.run_requests[0].run_key == f"{NAME}-{new_run}" and third.cursor == new_run
    registered = instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)
    assert len(registered) == len(PROPOSABLE) + 1


def test_a_proposed_partition_resolves_survives_the_task_bank_and_runs(
    home: Path, warehouse: Warehouse, openrouter_listing: dict[str, Any]
) -> None:
    _ingest(warehouse, _listing(openrouter_listing["data"], LISTED))
    instance = dg.DagsterInstance.ephemeral()
    (request,) = _tick(instance, None).run_requests

    # The run the sensor asks for (task bank, setups, rates) keeps the proposed partitions.
    definitions = build_definitions()
    job = definitions.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection=set(request.asset_selection)
    )
    assert job.execute_in_process(instance=instance, tags=request.tags).success
    registered = instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)
    with warehouse.connect() as conn:
        proposals = stored_proposals(conn)
        catalog = with_proposals(conn, load_setups())
        flags = dict(conn.execute("SELECT setup_id, proposed FROM setups").fetchall())
        priced = {a for (a,) in conn.execute("SELECT DISTINCT api_id FROM model_rates").fetchall()}
    assert {k for p in proposals for k in p.partition_keys} <= set(registered)
    declared = {s.setup_id for s in load_setups().setups}
    assert {s for s, proposed in flags.items() if proposed} == {p.setup_id for p in proposals}
    assert {s for s, proposed in flags.items() if not proposed} == declared
    assert set(PROPOSABLE) <= priced

    # The run planning code resolves a proposed key to its setup, as for a declared one.
    qwen = next(p for p in proposals if p.model_id == "qwen/qwen3.8-27b")
    key = qwen.partition_keys[0]
    items = work_items([key], load_bank(), catalog)
    assert items and {i.setup.setup_id for i in items} == {qwen.setup_id}
    assert {i.request().model for i in items} == {"qwen/qwen3.8-27b"}
    with pytest.raises(ValueError, match="no setup"):
        work_items([key], load_bank(), load_setups())  # the files alone do not know it

    with warehouse.connect() as conn:
        before = benchmarked_companies(conn, load_setups())
    # Materialised (simulated calls), the partition's runs are stored and priced.
    result = dg.materialize(
        [model_runs],
        partition_key=key,
        instance=instance,
        resources={
            "warehouse": WarehouseResource(),
            "models": ModelCallsResource(mode="simulated", cache_dir=str(home / "cache")),
        },
    )
    assert result.success
    runs = warehouse.query("SELECT setup_id, count(*), count(cost_usd) FROM model_runs GROUP BY 1")
    assert runs == [(qwen.setup_id, len(items), len(items))]
    # Once it has runs, its company is benchmarked: no PM judge may come from it.
    with warehouse.connect() as conn:
        after = benchmarked_companies(conn, load_setups())
    assert "Qwen" not in before and set(after) == {*before, "Qwen"}


def test_bench_run_covers_the_declared_partitions_and_never_a_proposed_one(
    home: Path, warehouse: Warehouse, openrouter_listing: dict[str, Any]
) -> None:
    instance = dg.DagsterInstance.ephemeral()
    declared = planned_partitions(load_bank(), load_setups())
    instance.add_dynamic_partitions(MODEL_RUN_PARTITIONS.name, declared[:4])
    _ingest(warehouse, _listing(openrouter_listing["data"], LISTED))
    _tick(instance, None)  # proposals registered after the first four declared keys
    instance.add_dynamic_partitions(MODEL_RUN_PARTITIONS.name, declared[4:])
    proposed = set(instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)) - set(declared)
    assert proposed

    out = io.StringIO()
    runs = declared_run_tags(instance, out)
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        covered = [
            key
            for tags in runs
            for key in MODEL_RUN_PARTITIONS.get_partition_keys_in_range(
                dg.PartitionKeyRange(
                    tags["dagster/asset_partition_range_start"],
                    tags["dagster/asset_partition_range_end"],
                )
            )
        ]
    assert len(runs) == 2  # the proposals split the declared keys in two stretches
    assert covered == declared and not proposed & set(covered)
    assert f"{len(proposed)} proposed model-run partitions left" in out.getvalue()


def test_stretches_split_around_keys_not_wanted() -> None:
    keys = ["a1", "a2", "p1", "a3", "p2", "b1"]
    assert stretches(keys, {"a1", "a2", "a3", "b1"}) == [("a1", "a2"), ("a3", "a3"), ("b1", "b1")]
    assert stretches(keys, {"p1", "p2"}) == [("p1", "p1"), ("p2", "p2")]
    assert stretches(keys, set()) == []
    assert stretches(keys, set(keys)) == [("a1", "b1")]


def test_the_first_tick_on_the_recorded_listing(home: Path, warehouse: Warehouse) -> None:
    """Every recorded model that is not declared, an alias, a variant or a router."""
    run = warehouse.ingest("openrouter_models")
    assert run.status == "accepted"
    instance = dg.DagsterInstance.ephemeral()
    result = _tick(instance, None)

    listed = dict(warehouse.query("SELECT model_id, created_at FROM openrouter_models"))
    new = {m for m, created in listed.items() if created >= max(listed.values()) - NEW_WITHIN}
    declared = {s.model.api_id for s in load_setups().setups}
    expected = {
        m for m in new - declared if not m.startswith(("~", "openrouter/")) and ":" not in m
    }
    proposed = {r[0] for r in _proposal_rows(warehouse)}
    # Only the fortnight before the snapshot's newest model, not the 400-model catalogue.
    assert proposed == expected and 5 <= len(expected) < 40
    assert len(instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)) == len(expected)
    assert result.cursor == run.run_id


def test_what_cannot_be_proposed_as_listed() -> None:
    day = date(2026, 8, 14)
    model = ListedModel(
        "acme/m-1", "Acme: M 1", 8192, "text,image", "text", True, False, None, None
    )
    assert why_not_runnable(model, day) is None
    cases = {
        "expired": replace(model, expiration_date="2026-08-14"),
        "does not write text": replace(model, output_modalities="image"),
        "does not read text": replace(model, input_modalities="audio"),
        "no per-token price": replace(model, priced=False),
        "no context length": replace(model, context_length=None),
        "an alias of another model": replace(model, alias_target="acme/m-0"),
    }
    for reason, listed in cases.items():
        assert why_not_runnable(listed, day) == reason
    assert why_not_runnable(replace(model, expiration_date="2026-08-15"), day) is None


def test_only_a_model_new_on_openrouter_is_proposed() -> None:
    newest = datetime(2026, 8, 14, 15, 55)
    model = ListedModel(
        "acme/m-1", "Acme: M 1", 8192, "text", "text", True, False, None, None, newest
    )
    assert why_not_new(model, newest) is None
    assert why_not_new(replace(model, created_at=newest - NEW_WITHIN), newest) is None
    too_old = replace(model, created_at=newest - NEW_WITHIN - timedelta(seconds=1))
    assert why_not_new(too_old, newest) == "on OpenRouter for more than 14 days"
    assert why_not_new(replace(model, created_at=None), newest) == "no listing date"


def test_a_proposal_identical_to_a_declared_setup_stays_declared() -> None:
    catalog = load_setups()
    declared = catalog.setups[0]
    model = ListedModel("acme/m-1", "Acme: M 1", 8192, "text", "text", True, False, None, None)
    ingestion = Ingestion("run-1", datetime(2026, 8, 14, 6, 0))
    new = proposed_setup(model, ingestion, "Acme", catalog.harnesses["api-bare"])
    merged = catalog.with_proposed([declared, new, new])
    assert merged.setups == (*catalog.setups, new)
    assert merged.proposed == {new.setup_id}
    assert merged.get(new.setup_id).model.pricing_date == date(2026, 8, 14)
