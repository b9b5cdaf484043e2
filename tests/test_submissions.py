"""Submitted runs: a valid file parses, anything malformed is rejected with a reason and a
field and never raises, the file is never lost, and the published schema fits the model."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench_pipeline.runs.costing import Rates, cost_of_all
from bench_pipeline.runs.submissions import (
    Rejection,
    Submission,
    check_against_bank,
    load_submission,
    parse_submission,
    submission_json_schema,
    write_schema,
)
from bench_pipeline.taskbank import default_root, load_bank

pytestmark = pytest.mark.unit

EVIDENCE = "$ python scripts/dedupe.py\nremoved 12 rows\n" * 8


@pytest.fixture(scope="module")
def bank():
    return load_bank(default_root())


def valid(**changes: Any) -> dict[str, Any]:
    """A valid submission for the demo use case `uc-csv-dedupe` (its version is filled in by
    `for_bank`)."""
    document: dict[str, Any] = {
        "schema_version": 1,
        "use_case": "uc-csv-dedupe",
        "use_case_version": "0123456789abcdef",
        "started_at": "2026-11-20T09:30:00+01:00",
        "model": {"name": "anthropic/claude-opus-4.6", "settings": {"thinking": "high"}},
        "harness": {"name": "Claude Code", "version": "2.1.0", "tools": ["bash", "edit"]},
        "tokens": {
            "per_request": [
                {"input_tokens": 12000, "output_tokens": 900, "cached_tokens": 8000},
                {"input_tokens": 15000, "output_tokens": 400, "reasoning_tokens": 100},
            ],
            "total": {"input_tokens": 27000, "output_tokens": 1300},
        },
        "claimed_cost_usd": "0.1",
        "wall_time_seconds": 184.5,
        "step_ins": 1,
        "turns": 6,
        "retries": 0,
        "first_try": True,
        "autonomy": "lightly_guided",
        "criteria": {
            "one_row_per_email": "pass",
            "keeps_latest": "pass",
            "reports_removed": "partial",
            "input_untouched": "pass",
        },
        "evidence_log": EVIDENCE,
        "evidence_sha256": hashlib.sha256(EVIDENCE.encode()).hexdigest(),
        "output": "scripts/dedupe.py added; data/customers_unique.csv written.",
    }
    document.update(changes)
    return document


def for_bank(bank, document: dict[str, Any]) -> dict[str, Any]:
    return document | {"use_case_version": bank.get("usecase", "uc-csv-dedupe").version}


def encode(document: Any) -> bytes:
    return json.dumps(document).encode()


# A valid submission -------------------------------------------------------------------------


def test_a_valid_submission_parses():
    result = parse_submission(encode(valid()))
    assert isinstance(result, Submission), result
    assert result.outcome == "partial"  # one criterion only partly met
    assert result.group == "anthropic/claude-opus-4.6 (thinking=high)"
    assert result.run_date == date(2026, 11, 20)
    assert result.claimed_cost_usd == Decimal("0.1")
    assert result.evidence_hash_matches


def test_outcome_is_success_only_when_every_criterion_passes():
    every = dict.fromkeys(valid()["criteria"], "pass")
    assert parse_submission(encode(valid(criteria=every))).outcome == "success"
    none = dict.fromkeys(every, "fail")
    assert parse_submission(encode(valid(criteria=none))).outcome == "fail"


def test_tokens_become_per_request_usages_for_costing():
    submission = parse_submission(encode(valid()))
    usages = submission.usages()
    assert [u.per_request for u in usages] == [True, True]
    assert usages[0].cached_tokens == 8000 and usages[1].reasoning_tokens == 100
    rates = Rates(
        date(2026, 8, 14), input=Decimal(5), output=Decimal(25), cached_input=Decimal("0.5")
    )
    # (4000 + 15000) × 5 + 8000 × 0.5 + 1300 × 25 = 95000 + 4000 + 32500 per million
    assert cost_of_all(usages, rates).cost_usd == Decimal("0.1315")
    totals_only = valid(tokens={"total": {"input_tokens": 27000, "output_tokens": 1300}})
    (usage,) = parse_submission(encode(totals_only)).usages()
    assert usage.per_request is False and usage.prompt_tokens == 27000


def test_hard_flags_are_accepted_for_review_not_rejected():
    flagged = valid(step_ins=9, turns=2, retries=3, first_try=True, evidence_sha256="0" * 64)
    result = parse_submission(encode(flagged))
    assert isinstance(result, Submission)
    assert not result.evidence_hash_matches


# Rejections with their field ----------------------------------------------------------------


def drop(document: dict[str, Any], *path: str | int) -> dict[str, Any]:
    document = copy.deepcopy(document)
    target: Any = document
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return document


REJECTED = {
    "missing field": (drop(valid(), "turns"), "turns"),
    "unknown field": (valid(step_in=1), "step_in"),
    "string for an integer": (valid(step_ins="1"), "step_ins"),
    "float for an integer": (valid(retries=1.0), "retries"),
    "negative tokens": (
        valid(tokens={"total": {"input_tokens": -1, "output_tokens": 0}}),
        "tokens.total.input_tokens",
    ),
    "nested missing field": (
        drop(valid(), "tokens", "per_request", 1, "output_tokens"),
        "tokens.per_request[1].output_tokens",
    ),
    "no tokens at all": (valid(tokens={}), "tokens.per_request"),
    "total disagrees": (
        valid(tokens={**valid()["tokens"], "total": {"input_tokens": 1, "output_tokens": 1300}}),
        "tokens.total.input_tokens",
    ),
    "cached above input": (
        valid(tokens={"total": {"input_tokens": 10, "output_tokens": 1, "cached_tokens": 11}}),
        "tokens.total.cached_tokens",
    ),
    "reasoning above output": (
        valid(tokens={"total": {"input_tokens": 10, "output_tokens": 1, "reasoning_tokens": 2}}),
        "tokens.total.reasoning_tokens",
    ),
    "time without zone": (valid(started_at="2026-11-20T09:30:00"), "started_at"),
    "zero wall time": (valid(wall_time_seconds=0), "wall_time_seconds"),
    "negative cost": (valid(claimed_cost_usd=-0.5), "claimed_cost_usd"),
    "cost with exponent": (valid(claimed_cost_usd="1e-3"), "claimed_cost_usd"),
    "bad outcome": (valid(criteria={"keeps_latest": "maybe"}), "criteria.keeps_latest"),
    "no criteria": (valid(criteria={}), "criteria"),
    "bad criterion id": (valid(criteria={"Keeps Latest": "pass"}), "criteria.Keeps Latest (key)"),
    "bad hash": (valid(evidence_sha256="abc"), "evidence_sha256"),
    "wrong schema version": (valid(schema_version=2), "schema_version"),
    "null model": (valid(model=None), "model"),
    "huge token count": (
        valid(tokens={"total": {"input_tokens": 10**30, "output_tokens": 1}}),
        "tokens.total.input_tokens",
    ),
}


@pytest.mark.parametrize("name", REJECTED, ids=list(REJECTED))
def test_a_malformed_submission_is_rejected_naming_the_field(name):
    document, field = REJECTED[name]
    result = parse_submission(encode(document))
    assert isinstance(result, Rejection), result
    assert result.field == field, result.reason
    assert result.reason.startswith(field) and field in [f for f, _ in result.problems]


NOT_A_SUBMISSION = {
    "empty": b"",
    "not json": b"{schema_version: 1}",
    "truncated": encode(valid())[:-5],
    "a list": b"[]",
    "NaN": encode(valid())[:-1] + b', "x": NaN}',
    "duplicate key": b'{"turns": 1, "turns": 2}',
    "not utf-8": b"\xff\xfe\x00{",
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "nesting deeper than the validator takes": b'{"x": ' + b"[" * 300 + b"]" * 300 + b"}",
    "giant integer": b'{"turns": ' + b"9" * 5000 + b"}",
}


@pytest.mark.parametrize("name", NOT_A_SUBMISSION, ids=list(NOT_A_SUBMISSION))
def test_a_file_that_is_not_a_submission_is_rejected_as_a_whole(name):
    data = NOT_A_SUBMISSION[name]
    result = parse_submission(data)
    assert isinstance(result, Rejection)
    assert result.field is None and result.reason
    assert result.sha256 == hashlib.sha256(data).hexdigest() and result.size == len(data)


# Property tests: never raises ---------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
TOP_KEYS = list(valid())


def garbage_bytes() -> st.SearchStrategy[bytes]:
    anything = st.recursive(
        json_scalars | st.floats(),  # NaN and infinities too
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(TOP_KEYS) | st.text(max_size=8), inner, max_size=6)
        ),
        max_leaves=20,
    )
    return (
        anything.map(lambda v: json.dumps(v).encode())
        | st.binary(max_size=200)
        | st.text(max_size=200).map(str.encode)
        | st.binary(max_size=40).map(lambda b: encode(valid())[: len(b) * 20])  # cut short
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage_bytes())
def test_random_garbage_is_rejected_and_never_raises(data):
    result = parse_submission(data)
    assert isinstance(result, Rejection)
    assert result.reason and result.problems
    assert result.field == result.problems[0][0]


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a JSON document."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


ALL_PATHS = paths(valid())


@st.composite
def mutated(draw) -> tuple[dict[str, Any], str, str]:
    """A valid submission with one mutation: (document, top-level key touched, operation)."""
    document = valid()
    path = draw(st.sampled_from(ALL_PATHS))
    operation = draw(st.sampled_from(["delete", "replace", "add_key", "wrap"]))
    parent: Any = document
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if operation == "delete":
        del parent[last]
    elif operation == "replace":
        parent[last] = draw(json_values)
    elif operation == "wrap":
        parent[last] = [parent[last]]
    elif isinstance(parent[last], dict):
        parent[last][draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    else:
        key = draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in TOP_KEYS))
        document[key] = 1
        return document, key, "add_top_level_key"
    return document, str(path[0]), operation


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_submissions_never_raise_and_blame_the_mutated_part(case):
    document, touched, operation = case
    result = parse_submission(encode(document))
    assert isinstance(result, Submission | Rejection)
    event(type(result).__name__)
    if isinstance(result, Submission):
        return
    assert result.reason and result.field, result
    if operation == "add_top_level_key":
        assert [f for f, _ in result.problems] == [touched]
    else:  # every problem lies inside the top-level field that was changed
        blamed = {re.split(r"[.\[ ]", f or "")[0] for f, _ in result.problems}
        assert blamed == {touched}, (touched, operation, result.problems)


def test_deleting_any_required_field_is_rejected_with_that_field():
    for key in submission_json_schema()["required"]:
        result = parse_submission(encode(drop(valid(), key)))
        assert isinstance(result, Rejection) and result.field == key


# Files ---------------------------------------------------------------------------------------


def test_loading_never_moves_or_changes_the_file(tmp_path):
    for name, data in {"good.json": encode(valid()), "bad.json": b"{oops"}.items():
        path = tmp_path / name
        path.write_bytes(data)
        result = load_submission(path)
        assert path.read_bytes() == data
        if isinstance(result, Rejection):
            assert result.source == str(path)
            assert result.sha256 == hashlib.sha256(data).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "good.json"]


def test_an_oversized_missing_or_odd_file_is_rejected_without_raising(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(encode(valid(output="x" * 5000)))
    result = load_submission(big, max_bytes=1000)
    assert isinstance(result, Rejection)
    assert (
        result.reason == f"{big.stat().st_size} bytes, over the inbox limit of 1000 bytes; not read"
    )
    assert result.size == big.stat().st_size and result.sha256 is None
    assert isinstance(load_submission(big), Submission)  # under the default limit
    missing = load_submission(tmp_path / "nowhere.json")
    assert isinstance(missing, Rejection) and "cannot read" in missing.reason
    folder = load_submission(tmp_path)
    assert isinstance(folder, Rejection) and "not a regular file" in folder.reason
    link = tmp_path / "link.json"
    link.symlink_to(big)  # read as an inbox file: a link is never followed
    linked = load_submission(link)
    assert isinstance(linked, Rejection) and linked.reason.startswith("a symbolic link, not a")


def test_checked_against_the_bank(tmp_path, bank):
    path = tmp_path / "run.json"
    path.write_bytes(encode(for_bank(bank, valid())))
    assert isinstance(load_submission(path, bank=bank), Submission)
    cases = {
        "use_case": for_bank(bank, valid()) | {"use_case": "uc-nope"},
        "use_case_version": valid(),  # a version the use case is not at
        "criteria": for_bank(bank, valid(criteria={"keeps_latest": "pass"})),
    }
    for field, document in cases.items():
        path.write_bytes(encode(document))
        result = load_submission(path, bank=bank)
        assert isinstance(result, Rejection) and result.field == field, result
    extra = for_bank(bank, valid()) | {"criteria": {**valid()["criteria"], "vibes": "pass"}}
    assert check_against_bank(parse_submission(encode(extra)), bank)[0] == "criteria"


# Schema ---------------------------------------------------------------------------------------


def schema_errors(
    value: Any, schema: dict[str, Any], root: dict[str, Any], where: str = ""
) -> list[str]:
    """A small JSON Schema check (the keywords the published schema uses): enough to test the
    round trip without adding a dependency."""
    if "$ref" in schema:
        return schema_errors(value, root["$defs"][schema["$ref"].split("/")[-1]], root, where)
    errors: list[str] = []
    if "anyOf" in schema:
        if all(schema_errors(value, option, root, where) for option in schema["anyOf"]):
            errors.append(f"{where}: matches no anyOf option")
    kinds = {
        "object": dict,
        "array": list,
        "string": str,
        "boolean": bool,
        "null": type(None),
        "integer": int,
        "number": (int, float),
    }
    if "type" in schema:
        expected = kinds[schema["type"]]
        if not isinstance(value, expected) or (
            isinstance(value, bool) and schema["type"] != "boolean"
        ):
            return [*errors, f"{where}: not {schema['type']}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 1e18):
            errors.append(f"{where}: wrong length")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: does not match {schema['pattern']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < schema.get("minimum", -1e308) or value > schema.get("maximum", 1e308):
            errors.append(f"{where}: out of range")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{where}: not above {schema['exclusiveMinimum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: too few items")
        for index, item in enumerate(value):
            errors += schema_errors(item, schema.get("items", {}), root, f"{where}[{index}]")
    if isinstance(value, dict):
        errors += [
            f"{where}.{key}: required" for key in schema.get("required", []) if key not in value
        ]
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{where}: too few properties")
        properties = schema.get("properties", {})
        for key, item in value.items():
            patterns = [p for p in schema.get("patternProperties", {}) if re.search(p, key)]
            if key in properties:
                errors += schema_errors(item, properties[key], root, f"{where}.{key}")
            elif patterns:
                for pattern in patterns:
                    errors += schema_errors(
                        item, schema["patternProperties"][pattern], root, f"{where}.{key}"
                    )
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}.{key}: not allowed")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += schema_errors(
                    item, schema["additionalProperties"], root, f"{where}.{key}"
                )
            if "propertyNames" in schema:
                errors += schema_errors(
                    key, {"type": "string", **schema["propertyNames"]}, root, f"{where}.{key} (key)"
                )
    return errors


def test_a_valid_submission_validates_against_the_published_schema():
    schema = submission_json_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    document = valid()
    assert isinstance(parse_submission(encode(document)), Submission)
    assert schema_errors(document, schema, schema) == []
    totals_only = valid(
        tokens={"total": {"input_tokens": 1, "output_tokens": 1}}, claimed_cost_usd=0.25
    )
    assert schema_errors(totals_only, schema, schema) == []


@pytest.mark.parametrize(
    "name",
    [
        "missing field",
        "unknown field",
        "string for an integer",
        "bad hash",
        "no tokens at all",
        "cost with exponent",
        "bad outcome",
        "bad criterion id",
    ],
)
def test_the_schema_refuses_what_the_model_refuses(name):
    document, _ = REJECTED[name]
    schema = submission_json_schema()
    assert schema_errors(document, schema, schema) != []


def test_the_schema_lists_exactly_the_models_fields(tmp_path):
    schema = submission_json_schema()
    assert set(schema["properties"]) == set(Submission.model_fields)
    assert set(schema["required"]) == {
        n for n, f in Submission.model_fields.items() if f.is_required()
    }
    path = write_schema(tmp_path / "schemas" / "submission.json")
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(schema))
    assert [p.name for p in path.parent.iterdir()] == ["submission.json"]


def test_write_schema_replaces_an_existing_file(tmp_path: Path):
    path = tmp_path / "submission.json"
    path.write_text("old", encoding="utf-8")
    write_schema(path)
    assert path.read_text(encoding="utf-8").startswith("{")


def test_the_published_schema_files_are_current():
    """`site/static/*.schema.json` are what the models generate now (regenerate them with
    `write_schema` when a model changes)."""
    import json

    from bench_pipeline.core.settings import REPO_ROOT
    from bench_pipeline.grading.review_model import Review

    static = REPO_ROOT / "site" / "static"
    assert json.loads((static / "submission.schema.json").read_text()) == submission_json_schema()
    review = json.loads((static / "review.schema.json").read_text())
    assert review == {"$schema": "https://json-schema.org/draft/2020-12/schema",
                      **Review.model_json_schema()}  # fmt: skip
