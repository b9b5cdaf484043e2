"""Setups: the example files load, setup ids are stable and follow every parameter, and bad
records are reported by file, record and field."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from bench_pipeline.taskbank.setups import (
    Harness,
    ModelRecord,
    SetupError,
    default_root,
    load_setups,
    setup_id_of,
)

pytestmark = pytest.mark.unit


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)  # numbers and dates


def toml_tables(table: str, records: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"[[{table}]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in record.items())
        for record in records
    )


MODEL = {
    "id": "m1",
    "api_id": "openai/gpt-5.4",
    "company": "OpenAI",
    "reasoning_effort": "high",
    "temperature": 0.5,
    "context_limit": 1050000,
    "pricing_date": date(2026, 8, 14),
    "extra": {"top_p": 0.9},
}
HARNESS = {
    "id": "h1",
    "environment": "api",
    "system_instructions": "Be exact.",
    "skills": ["checklist"],
    "tools": ["search"],
    "permissions": ["read-only"],
}


def write(root: Path, models: list[dict], harnesses: list[dict]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "models.toml").write_text(toml_tables("model", models), encoding="utf-8")
    (root / "harnesses.toml").write_text(toml_tables("harness", harnesses), encoding="utf-8")
    return root


def only_setup_id(root: Path) -> str:
    (setup,) = load_setups(root).setups
    return setup.setup_id


def test_the_example_setups_load():
    catalog = load_setups(default_root())
    api_ids = {m.api_id for m in catalog.models.values()}
    assert {
        "openai/gpt-5.4",
        "anthropic/claude-opus-4.6",
        "google/gemini-3.1-pro-preview",
        "z-ai/glm-5",
    } <= api_ids
    local = [m for m in catalog.models.values() if m.local]
    assert local and all(m.base_url and m.base_url.startswith("http") for m in local)
    assert catalog.models["gpt-5.4-medium"].temperature is None  # not settable there
    ids = [s.setup_id for s in catalog.setups]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"s[0-9a-f]{16}", i) for i in ids)
    assert catalog.get(ids[0]) is catalog.setups[0]
    # a harness paired with named models only pairs with those
    paired = {s.model.id for s in catalog.setups if s.harness.id == "claude-code-default"}
    assert paired == {"claude-opus-4.6-high"}


def test_an_executable_setup_builds_its_chat_request():
    catalog = load_setups(default_root())
    setup = next(
        s
        for s in catalog.setups
        if s.model.id == "claude-opus-4.6-high" and s.harness.id == "api-careful-analyst"
    )
    request = setup.chat_request("Decide.", max_tokens=2000)
    body = request.body()
    assert body["model"] == "anthropic/claude-opus-4.6"
    assert body["temperature"] == 1.0 and body["reasoning_effort"] == "high"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "Decide."
    app = next(s for s in catalog.setups if s.harness.environment == "chatgpt")
    assert not app.executable
    with pytest.raises(ValueError, match="not run as chat requests"):
        app.chat_request("Decide.")


def test_setup_id_is_stable_across_key_order_comments_names_and_notes(tmp_path):
    first = only_setup_id(write(tmp_path / "a", [MODEL], [HARNESS]))
    reordered_model = dict(reversed(list(MODEL.items())))
    reordered_model["extra"] = {"top_p": 0.9}
    root = write(tmp_path / "b", [reordered_model], [dict(reversed(list(HARNESS.items())))])
    (root / "models.toml").write_text(
        "# a comment\n" + (root / "models.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert only_setup_id(root) == first
    renamed = write(
        tmp_path / "c",
        [MODEL | {"id": "renamed", "notes": "a note", "temperature": 0.5}],
        [HARNESS | {"id": "h2", "notes": "n", "models": ["renamed"]}],
    )
    assert only_setup_id(renamed) == first
    assert setup_id_of(ModelRecord(**MODEL), Harness(**HARNESS)) == first


MODEL_CHANGES = {
    "api_id": "openai/gpt-5.4-mini",
    "company": "Other",
    "reasoning_effort": "low",
    "temperature": 0.7,
    "context_limit": 400000,
    "pricing_date": date(2026, 9, 1),
    "base_url": "https://example.invalid/v1",
    "extra": {"top_p": 0.8},
}
HARNESS_CHANGES = {
    "environment": "codex",
    "system_instructions": "Be brief.",
    "skills": ["checklist", "roast"],
    "tools": [],
    "permissions": ["write"],
    "defaults_date": date(2026, 11, 1),
}


def test_every_hashed_parameter_is_covered_by_a_change_below():
    assert set(MODEL_CHANGES) | {"local"} == set(ModelRecord(**MODEL).identity())
    assert set(HARNESS_CHANGES) == set(Harness(**HARNESS).identity())


@pytest.mark.parametrize("name", MODEL_CHANGES, ids=list(MODEL_CHANGES))
def test_any_model_parameter_change_makes_a_new_setup_id(tmp_path, name):
    before = only_setup_id(write(tmp_path / "a", [MODEL], [HARNESS]))
    after = only_setup_id(write(tmp_path / "b", [MODEL | {name: MODEL_CHANGES[name]}], [HARNESS]))
    assert after != before


@pytest.mark.parametrize("name", HARNESS_CHANGES, ids=list(HARNESS_CHANGES))
def test_any_harness_parameter_change_makes_a_new_setup_id(tmp_path, name):
    before = only_setup_id(write(tmp_path / "a", [MODEL], [HARNESS]))
    after = only_setup_id(write(tmp_path / "b", [MODEL], [HARNESS | {name: HARNESS_CHANGES[name]}]))
    assert after != before


def test_dropping_the_temperature_or_going_local_makes_a_new_setup_id(tmp_path):
    before = only_setup_id(write(tmp_path / "a", [MODEL], [HARNESS]))
    no_temperature = {k: v for k, v in MODEL.items() if k != "temperature"}
    assert only_setup_id(write(tmp_path / "b", [no_temperature], [HARNESS])) != before
    local = MODEL | {"local": True, "base_url": "http://127.0.0.1:8080/v1"}
    assert only_setup_id(write(tmp_path / "c", [local], [HARNESS])) != before
    # an integer temperature is the same setting as its float
    assert only_setup_id(write(tmp_path / "d", [MODEL | {"temperature": 1}], [HARNESS])) == (
        only_setup_id(write(tmp_path / "e", [MODEL | {"temperature": 1.0}], [HARNESS]))
    )


BAD = {
    "wrong type": (
        [MODEL, MODEL | {"id": "m2", "temperature": "warm"}],
        [HARNESS],
        "models.toml",
        "model[1] (m2)",
        "temperature",
    ),
    "unknown key": (
        [MODEL | {"temprature": 0.5}],
        [HARNESS],
        "models.toml",
        "model[0] (m1)",
        "temprature",
    ),
    "missing api id": (
        [{k: v for k, v in MODEL.items() if k != "api_id"}],
        [HARNESS],
        "models.toml",
        "model[0] (m1)",
        "api_id",
    ),
    "local without server": (
        [MODEL | {"local": True}],
        [HARNESS],
        "models.toml",
        "model[0] (m1)",
        "base_url",
    ),
    "hosted without price date": (
        [{k: v for k, v in MODEL.items() if k != "pricing_date"}],
        [HARNESS],
        "models.toml",
        "model[0] (m1)",
        "pricing_date",
    ),
    "reserved request key": (
        [MODEL | {"extra": {"model": "x"}}],
        [HARNESS],
        "models.toml",
        "model[0] (m1)",
        "extra",
    ),
    "repeated id": (
        [MODEL, MODEL | {"api_id": "x/y"}],
        [HARNESS],
        "models.toml",
        "model[1] (m1)",
        "id",
    ),
    "app without date": (
        [MODEL],
        [HARNESS | {"environment": "chatgpt"}],
        "harnesses.toml",
        "harness[0] (h1)",
        "defaults_date",
    ),
    "unknown environment": (
        [MODEL],
        [HARNESS | {"environment": "vim"}],
        "harnesses.toml",
        "harness[0] (h1)",
        "environment",
    ),
    "unknown model after a bad record": (
        [MODEL],
        [HARNESS | {"environment": "vim"}, HARNESS | {"id": "h2", "models": ["nope"]}],
        "harnesses.toml",
        "harness[1] (h2)",
        "models",
    ),
    "unknown model": (
        [MODEL],
        [HARNESS | {"models": ["nope"]}],
        "harnesses.toml",
        "harness[0] (h1)",
        "models",
    ),
}


@pytest.mark.parametrize("name", BAD, ids=list(BAD))
def test_a_bad_record_is_reported_by_file_record_and_field(tmp_path, name):
    models, harnesses, file, record, field = BAD[name]
    with pytest.raises(SetupError) as caught:
        load_setups(write(tmp_path, models, harnesses))
    found = [(p.path.name, p.record, p.field) for p in caught.value.problems]
    assert (file, record, field) in found
    assert f"{file}: {record}: {field}: " in str(caught.value)


def test_records_that_differ_only_in_name_are_refused(tmp_path):
    with pytest.raises(SetupError, match="differ only in name"):
        load_setups(write(tmp_path, [MODEL, MODEL | {"id": "m2"}], [HARNESS]))


def test_unreadable_files_are_reported(tmp_path):
    root = write(tmp_path, [MODEL], [HARNESS])
    (root / "models.toml").write_text("[[model]\n", encoding="utf-8")
    (root / "harnesses.toml").unlink()
    with pytest.raises(SetupError) as caught:
        load_setups(root)
    messages = {(p.path.name, p.message.split(":")[0]) for p in caught.value.problems}
    assert messages == {("models.toml", "not valid TOML"), ("harnesses.toml", "no such file")}
