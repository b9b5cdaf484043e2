"""The contract mechanism's own pieces: record paths, nested lookups, depth cutting."""

from __future__ import annotations

import json

import pytest

from bench_pipeline.ingest.contract import (
    MAX_DEPTH,
    TOO_DEEP,
    Contract,
    ContractReport,
    RecordSpec,
    check_document,
    walk,
)
from bench_pipeline.ingest.payload import PayloadError, RawFile, load_json

pytestmark = pytest.mark.unit


def test_record_paths_walk_lists_and_object_values_in_document_order() -> None:
    document = {"a": {"models": {"x": 1, "y": 2}}, "b": {"models": [3]}, "c": {"models": {"z": 4}}}
    assert list(walk(document, "*.models.*")) == [1, 2, 4]  # a list where objects were: none
    assert list(walk({"data": {"endpoints": [5, 6]}}, "data.endpoints[]")) == [5, 6]
    assert list(walk([7, 8], "[]")) == [7, 8]
    assert list(walk({"data": "oops"}, "data[]")) == []


def test_a_record_is_quarantined_for_its_first_problem_and_nulls_are_counted() -> None:
    spec = RecordSpec(files="*.json", records="[]", fields={"p": "object", "p.q": "string"})
    contract = Contract(records=[spec])
    report = ContractReport()
    records = [{"p": {"q": "ok"}}, {"p": "free"}, {"p": {"q": 3}}, {}, [1], {"p": {"q": "x"}}]
    check_document(contract, "f.json", records, report)
    assert [(p.record_number, p.field) for p in report.problems] == [
        (2, "p"),
        (3, "p.q"),
        (5, "record"),
    ]
    assert report.fields == {"*.json:p": (6, 2), "*.json:p.q": (6, 3)}


def test_json_too_deep_for_python_is_cut_only_where_it_is_too_deep() -> None:
    levels = 100_000
    deep = '{"x":' * levels + "1" + "}" * levels
    text = '[{"name": "a [ { tricky \\" string", "v": 1}, {"name": "deep", "v": ' + deep + "}]"
    with pytest.raises(RecursionError):
        json.loads(text)
    records = load_json(RawFile("f.json", text.encode()))
    assert records[0] == {"name": 'a [ { tricky " string', "v": 1}
    assert records[1]["name"] == "deep"
    value, depth = records[1]["v"], 0
    while isinstance(value, dict):
        value, depth = value["x"], depth + 1
    assert value == TOO_DEEP and depth > MAX_DEPTH


def test_unbalanced_deep_json_is_an_unreadable_payload() -> None:
    with pytest.raises(PayloadError, match=r"f\.json: not valid JSON"):
        load_json(RawFile("f.json", b"[" * 100_000))


@pytest.mark.faults
def test_a_parser_that_raises_leaves_a_rejected_run_and_the_live_tables(seeded) -> None:
    from bench_pipeline.ingest import engine
    from bench_pipeline.ingest.catalog import source_definitions

    def broken_parser(files):
        raise ZeroDivisionError("a bug, not a payload problem")

    definition = source_definitions()["openrouter_models"]
    # Other bytes than the accepted run's (the same payload would be `unchanged`, never parsed).
    changed = json.dumps({"data": seeded.models}, indent=1).encode()
    payload = [RawFile("models.json", changed)]
    warehouse = seeded.warehouse
    with warehouse.connect() as conn:
        run = engine.fetch_and_store(conn, definition, lambda: payload, warehouse.raw_root, "t")
        assert run.status != "unchanged"
        run = engine.stage(conn, run, definition, broken_parser)
        run = engine.validate(conn, run, definition)
        run = engine.publish(conn, run, definition)
    assert run.status == "rejected"
    assert run.reason == "staging failed: ZeroDivisionError: a bug, not a payload problem"
    assert warehouse.run_row(run.run_id)["reason"] == run.reason
    assert warehouse.checksums() == seeded.checksums


@pytest.mark.faults
def test_a_run_taken_for_abandoned_that_finishes_records_its_real_outcome(seeded) -> None:
    """Under Dagster's multiprocess executor the process that claimed a run exits after its
    stage; a second run starting then takes the first for dead. The first, finishing, wins."""
    import subprocess
    import sys

    from bench_pipeline.ingest import engine
    from bench_pipeline.ingest.catalog import source_definitions
    from bench_pipeline.ingest.sources import PARSERS

    definition = source_definitions()["openrouter_models"]
    payload = [RawFile("models.json", json.dumps({"data": seeded.models[:40]}).encode())]
    exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    warehouse = seeded.warehouse
    with warehouse.connect() as conn:
        run = engine.fetch_and_store(conn, definition, lambda: payload, warehouse.raw_root, "t")
        conn.execute(
            "UPDATE source_run_claims SET pid = ? WHERE run_id = ?",
            [int(exited.stdout), run.run_id],
        )  # as if the raw step's own process had ended
        assert engine.close_abandoned(conn, "openrouter_models") == [run.run_id]
        assert warehouse.run_row(run.run_id)["reason"].startswith("abandoned:")
        run = engine.stage(conn, run, definition, PARSERS["openrouter_models"])
        run = engine.validate(conn, run, definition)
        run = engine.publish(conn, run, definition)
    assert run.status == "accepted", run.reason
    assert warehouse.query("SELECT status FROM source_runs WHERE run_id = ?", [run.run_id]) == [
        ("accepted",)
    ]


def _definition(tables: list[str], *specs: RecordSpec, scales: dict[str, list[str]] | None = None):
    from bench_pipeline.ingest.catalog import LiveFetch, SourceDefinition

    return SourceDefinition(
        name="two_tables",
        title="t",
        publisher="p",
        homepage="https://example.invalid",
        licence="l",
        attribution="a",
        cadence_cron="0 0 * * *",
        freshness_hours=24,
        tables=tables,
        live=LiveFetch(kind="files"),
        contract=Contract(records=list(specs), scales=scales or {}),
    )


def test_a_record_spec_names_its_tables_when_the_source_has_several() -> None:
    from pydantic import ValidationError

    unnamed = RecordSpec(files="*.json", records="[]")
    assert _definition(["one"], unnamed).record_tables(unnamed) == ["one"]
    with pytest.raises(ValidationError, match="must name the tables its records become"):
        _definition(["entries", "items"], unnamed)
    stray = RecordSpec(files="*.json", records="[]", tables=["entries", "elsewhere"])
    with pytest.raises(ValidationError, match=r"name tables \['elsewhere'\]"):
        _definition(["entries", "items"], stray)
    named = RecordSpec(files="*.json", records="[]", tables=["entries"])
    assert _definition(["entries", "items"], named).record_tables(named) == ["entries"]


def test_every_recorded_source_names_the_tables_of_its_records() -> None:
    from bench_pipeline.ingest.catalog import source_definitions

    definitions = source_definitions()
    assert definitions["swebench"].contract.records[0].tables == ["swebench_entries"]
    for definition in definitions.values():
        for spec in definition.contract.records:
            assert set(definition.record_tables(spec)) <= set(definition.tables)


def test_one_record_turning_null_is_not_drift_but_a_renamed_field_is() -> None:
    from bench_pipeline.ingest.contract import null_share_problems

    contract = Contract()
    before = {"*.json:price": (4, 0), "*.json:name": (1000, 100)}
    assert null_share_problems(contract, {"*.json:price": (4, 1)}, before) == []
    [two] = null_share_problems(contract, {"*.json:price": (4, 2)}, before)
    assert "field price is null in 50% of 4 records, 0% in the last" in two
    assert null_share_problems(contract, {"*.json:price": (4, 4)}, before)
    assert null_share_problems(contract, {"*.json:name": (1000, 200)}, before) == []
    assert null_share_problems(contract, {"*.json:name": (1000, 201)}, before)
    strict = Contract(null_count_slack=0)
    assert null_share_problems(strict, {"*.json:price": (4, 1)}, before)


def test_a_median_that_moves_like_a_change_of_unit_is_a_problem() -> None:
    from bench_pipeline.ingest.contract import scale_problems

    contract = Contract()
    before = {"t.price": (3.0, 400), "t.score": (62.5, 40), "t.free": (0.0, 400)}
    assert scale_problems(contract, {"t.price": (11.9, 400), "t.score": (16.0, 40)}, before) == []
    [unit] = scale_problems(contract, {"t.price": (3000.0, 390)}, before)
    assert unit.startswith("t.price: median 3000 against 3 in the last accepted run, 1e+03×")
    assert scale_problems(contract, {"t.score": (0.625, 40)}, before)  # percent → fraction
    # no scale to compare: a zero median, a small sample, a column the baseline lacks
    assert scale_problems(contract, {"t.free": (5.0, 400), "t.new": (1e9, 400)}, before) == []
    assert scale_problems(contract, {"t.price": (3000.0, 19)}, before) == []


def test_contract_scales_must_be_numeric_columns_of_the_source() -> None:
    from pydantic import ValidationError

    tables = ["openrouter_endpoints"]
    assert _definition(tables, scales={"openrouter_endpoints": ["prompt_usd_per_m", "status"]})
    with pytest.raises(ValidationError, match="not numeric columns"):
        _definition(tables, scales={"openrouter_endpoints": ["provider_name"]})
    with pytest.raises(ValidationError, match="not numeric columns"):
        _definition(tables, scales={"arena_ratings": ["rating"]})
