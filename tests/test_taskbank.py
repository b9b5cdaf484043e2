"""The task bank: the demo bank loads, versions follow content, private text stays private,
and a bad file is reported by file and field."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench_pipeline.taskbank import (
    NAVIGATOR_CATEGORIES,
    STANDARD_CRITERIA,
    Case,
    TaskBankError,
    UnitTestsCheck,
    canonical_json,
    default_root,
    load_bank,
    private_texts,
    public_view,
)
from bench_pipeline.taskbank import models as taskbank_models

pytestmark = pytest.mark.unit

REPO_TASKS = default_root()


@pytest.fixture(scope="module")
def bank():
    return load_bank(REPO_TASKS)


def pm_case(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "id": "pm-demo",
        "suite": "pm",
        "title": "A demo case",
        "category": "strategy",
        "provenance": "synthetic",
        "measures": "model",
        "brief": "Decide whether to ship.\n",
        "context": "Churn is 2%.\n",
        "criteria": [{"id": "names_churn", "question": "Does it cite the churn figure?"}],
        "critical_failures": [{"id": "ships_blind", "description": "Ships with no evidence."}],
    }
    raw.update(changes)
    return raw


def nav_case(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "id": "nav-demo",
        "suite": "navigator",
        "title": "Arithmetic",
        "category": "reasoning",
        "provenance": "synthetic",
        "brief": "Add the numbers.",
        "inputs": [
            {
                "id": "a",
                "text": "2 + 2",
                "check": {"kind": "numeric", "expected": 4, "tolerance": 0},
            },
            {"id": "b", "text": "1 + 1", "check": {"kind": "regex", "pattern": r"\b2\b"}},
        ],
    }
    raw.update(changes)
    return raw


# The demo bank ------------------------------------------------------------------------------


def test_demo_bank_loads_with_the_promised_shape(bank):
    pm, usecase, navigator = bank.suite("pm"), bank.suite("usecase"), bank.suite("navigator")
    assert len(pm) == 7 and sum(c.prototype for c in pm) == 2
    # Every private PM case has a public case of its category for the contamination check.
    public = {c.category for c in pm if not c.private}
    assert all(c.category in public for c in pm if c.private)
    assert len(usecase) == 5
    assert Counter(c.category for c in navigator) == dict.fromkeys(NAVIGATOR_CATEGORIES, 5)
    assert all(len(c.inputs) >= 2 for c in navigator)
    assert {i.check.kind for c in navigator for i in c.inputs} == {
        "exact_fields",
        "json_schema",
        "regex",
        "numeric",
        "unit_tests",
        "judge",
    }
    assert all(c.provenance == "synthetic" for c in bank)
    assert sum(c.private for c in bank) >= 2
    assert any(c.noisy for c in bank) and all(c.repeats == (3 if c.noisy else 1) for c in bank)
    assert all(re.fullmatch(r"[0-9a-f]{16}", c.version) for c in bank)
    assert len({c.key for c in bank}) == len(bank) == len(bank.sources)
    for case in pm:  # the seven standard criteria first, then the case's own
        assert case.rubric[:7] == STANDARD_CRITERIA and len(case.rubric) > 7
        assert case.critical_failures
        assert bool(case.browser_checks) == case.prototype


def test_bank_readme_says_it_is_a_synthetic_demo():
    text = (REPO_TASKS / "README.md").read_text(encoding="utf-8")
    assert "demo" in text.lower() and "synthetic" in text.lower()


def test_prompts_are_brief_then_context_or_input(bank):
    case = bank.get("pm", "pm-delay-update")
    (prompt,) = case.prompts()
    assert prompt.input_id == "main"
    assert prompt.text == case.brief.strip("\n") + "\n\n" + case.context.strip("\n")
    nav = bank.get("navigator", "nav-data-mean")
    assert [p.input_id for p in nav.prompts()] == [i.id for i in nav.inputs]
    assert all(p.text.startswith(nav.brief.strip()) for p in nav.prompts())


# Versions -------------------------------------------------------------------------------------


def test_versions_are_stable_across_loads(bank):
    again = load_bank(REPO_TASKS)
    assert [c.version for c in again] == [c.version for c in bank]


def test_version_is_the_documented_hash():
    case = Case.model_validate(pm_case())
    content = {
        "brief": case.brief,
        "context": case.context,
        "rubric": {
            "criteria": [c.model_dump(mode="json") for c in (*STANDARD_CRITERIA, *case.criteria)],
            "critical_failures": [{"id": "ships_blind", "description": "Ships with no evidence."}],
            "browser_checks": [],
        },
        "inputs": [],
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert case.version == hashlib.sha256(text.encode()).hexdigest()[:16]


CONTENT_CHANGES = {
    "brief": lambda r: r | {"brief": r["brief"] + "Be brief.\n"},
    "brief whitespace": lambda r: r | {"brief": r["brief"] + " "},
    "context": lambda r: r | {"context": "Churn is 3%.\n"},
    "criterion question": lambda r: (
        r | {"criteria": [{"id": "names_churn", "question": "Does it cite churn?"}]}
    ),
    "criterion added": lambda r: (
        r | {"criteria": [*r["criteria"], {"id": "extra", "question": "Is it short?"}]}
    ),
    "criterion pass definition": lambda r: (
        r | {"criteria": [{**r["criteria"][0], "pass_when": "It quotes 2%."}]}
    ),
    "critical failure": lambda r: (
        r | {"critical_failures": [{"id": "ships_blind", "description": "Ships anyway."}]}
    ),
    "prototype browser check": lambda r: (
        r | {"prototype": True, "browser_checks": [{"id": "opens", "question": "Does it open?"}]}
    ),
}
METADATA_CHANGES = {
    "title": lambda r: r | {"title": "Renamed"},
    "category": lambda r: r | {"category": "other"},
    "task": lambda r: r | {"task": "another-task"},
    "flags": lambda r: r | {"private": True, "noisy": True, "core": False},
    "measures": lambda r: r | {"measures": "system"},
    "provenance": lambda r: r | {"provenance": "anonymised"},
    "key order": lambda r: dict(reversed(list(r.items()))),
    "windows line ends": lambda r: (
        r
        | {"brief": r["brief"].replace("\n", "\r\n"), "context": r["context"].replace("\n", "\r\n")}
    ),
}


@pytest.mark.parametrize("change", CONTENT_CHANGES, ids=list(CONTENT_CHANGES))
def test_changing_brief_context_or_rubric_makes_a_new_version(change):
    before = Case.model_validate(pm_case()).version
    assert Case.model_validate(CONTENT_CHANGES[change](pm_case())).version != before


@pytest.mark.parametrize("change", METADATA_CHANGES, ids=list(METADATA_CHANGES))
def test_changing_metadata_keeps_the_version(change):
    before = Case.model_validate(pm_case()).version
    assert Case.model_validate(METADATA_CHANGES[change](pm_case())).version == before


NAV_CHANGES = {
    "input text": lambda r: r | {"inputs": [{**r["inputs"][0], "text": "2 + 3"}, r["inputs"][1]]},
    "answer key": lambda r: (
        r
        | {
            "inputs": [
                {**r["inputs"][0], "check": {**r["inputs"][0]["check"], "expected": 5}},
                r["inputs"][1],
            ]
        }
    ),
    "check kind": lambda r: (
        r
        | {
            "inputs": [
                r["inputs"][0],
                {**r["inputs"][1], "check": {"kind": "regex", "pattern": "2"}},
            ]
        }
    ),
    "input removed": lambda r: r | {"inputs": r["inputs"][:1]},
}


@pytest.mark.parametrize("change", NAV_CHANGES, ids=list(NAV_CHANGES))
def test_changing_inputs_or_checks_makes_a_new_version(change):
    before = Case.model_validate(nav_case()).version
    assert Case.model_validate(NAV_CHANGES[change](nav_case())).version != before


def test_the_standard_criteria_are_part_of_every_pm_version(monkeypatch):
    before = Case.model_validate(pm_case()).version
    reworded = (
        STANDARD_CRITERIA[0].model_copy(update={"question": "Is the evidence used well?"}),
        *STANDARD_CRITERIA[1:],
    )
    monkeypatch.setattr(taskbank_models, "STANDARD_CRITERIA", reworded)
    assert Case.model_validate(pm_case()).version != before


def test_a_file_edit_changes_exactly_the_edited_cases_version(tmp_path, bank):
    root = tmp_path / "tasks"
    shutil.copytree(REPO_TASKS, root)
    path = root / "navigator" / "reasoning.toml"
    text = path.read_text(encoding="utf-8")
    # Metadata, comments and key order in one file: no version moves.
    edited = text.replace('title = "Clock arithmetic"', 'title = "Times of day"')
    edited = "# a comment at the top\n" + edited.replace("\n", "\r\n")
    path.write_bytes(edited.encode())
    assert [c.version for c in load_bank(root)] == [c.version for c in bank]
    # One answer key: only that task's version moves.
    path.write_text(text.replace("expected = -25,", "expected = -24,"), encoding="utf-8")
    moved = {
        c.key for c, old in zip(load_bank(root), bank, strict=True) if c.version != old.version
    }
    assert moved == {"navigator/nav-reason-successive-change"}


# Privacy ------------------------------------------------------------------------------------


def test_private_text_never_reaches_a_public_view(bank):
    secrets = private_texts(bank)
    assert secrets
    published = json.dumps([public_view(c) for c in bank], ensure_ascii=False)
    for text in secrets:
        assert text not in published
    for case in bank:
        view = public_view(case)
        if case.private:
            assert view["withheld"] is True
            assert set(view) <= {
                *"suite id task category provenance private noisy core".split(),
                "version",
                "prototype",
                "withheld",
            }


def test_private_texts_cover_every_private_brief_context_and_input(bank):
    secrets = private_texts(bank)
    for case in bank:
        texts = [case.brief, case.context, *(i.text for i in case.inputs)]
        for text in (t.strip() for t in texts if t.strip()):
            assert (text in secrets) == case.private, (case.key, text[:40])
    assert len(secrets) == len(set(secrets))


def test_public_view_never_shows_an_answer_key(bank):
    case = bank.get("navigator", "nav-coding-fix-bug")
    view = json.dumps(public_view(case))
    for item in case.inputs:  # neither a call's arguments with their expected value ...
        assert isinstance(item.check, UnitTestsCheck)
        for call in item.check.calls:
            assert canonical_json(call.model_dump(mode="json")) not in view
    assert "[3,4]" not in view and "[3, 4]" not in view  # ... nor an expected value alone
    for item in public_view(case)["inputs"]:
        assert set(item) == {"id", "text", "check_kind", "tier"}
    judged = bank.get("navigator", "nav-writing-apology")
    assert "47 minutes" in json.dumps(public_view(judged))  # the input is public ...
    assert "take responsibility" not in json.dumps(public_view(judged))  # ... its rubric not


def test_the_release_privacy_check_finds_a_leaked_private_paragraph(bank, tmp_path):
    from bench_pipeline.release.verify import private_text_findings

    secrets = private_texts(bank)
    release = tmp_path / "release"
    (release / "data").mkdir(parents=True)
    (release / "data" / "cases.json").write_text(
        json.dumps([public_view(c) for c in bank]), encoding="utf-8"
    )
    assert private_text_findings(release, secrets) == []
    case = bank.get("pm", "pm-holdout-01")
    paragraph = case.context.strip().split("\n\n")[-1]  # one paragraph of two
    assert paragraph != case.context.strip()
    (release / "notes.txt").write_text("copied: " + paragraph + " (end)", encoding="utf-8")
    findings = private_text_findings(release, secrets)
    assert [f["file"] for f in findings] == ["notes.txt"]


# Errors -------------------------------------------------------------------------------------


def write_bank(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


GOOD_NAV = """
category = "reasoning"
provenance = "synthetic"

[[case]]
id = "ok"
title = "Fine"
brief = "Add."
[[case.inputs]]
id = "a"
text = "1 + 1"
check = { kind = "numeric", expected = 2, tolerance = 0 }
"""

GOOD_PM = """
id = "pm-ok"
title = "Fine"
category = "strategy"
provenance = "synthetic"
measures = "model"
brief = "Decide."
[[criteria]]
id = "c1"
question = "Is it decided?"
[[critical_failures]]
id = "f1"
description = "Decides nothing."
"""

BAD_FILES = {
    "wrong type": (
        "pm/bad.toml",
        GOOD_PM.replace('measures = "model"', 'measures = "model"\nnoisy = "yes"'),
        "noisy",
        "pm-ok",
    ),
    "typo in a key": (
        "pm/bad.toml",
        GOOD_PM.replace('brief = "Decide."', 'breif = "Decide."'),
        "breif",
        "pm-ok",
    ),
    "missing field": ("pm/bad.toml", GOOD_PM.replace('title = "Fine"\n', ""), "title", "pm-ok"),
    "pm without critical failures": (
        "pm/bad.toml",
        GOOD_PM.split("[[critical_failures]]")[0],
        "critical_failures",
        "pm-ok",
    ),
    "redefines a standard criterion": (
        "pm/bad.toml",
        GOOD_PM.replace('id = "c1"', 'id = "uses_evidence"'),
        "criteria",
        "pm-ok",
    ),
    "bad regex in the second case": (
        "navigator/bad.toml",
        GOOD_NAV
        + GOOD_NAV.split('provenance = "synthetic"')[1]
        .replace('id = "ok"', 'id = "broken"')
        .replace(
            '{ kind = "numeric", expected = 2, tolerance = 0 }',
            "{ kind = \"regex\", pattern = '(unclosed' }",
        ),
        "case[1].inputs[0].check.pattern",
        "broken",
    ),
    "unknown check kind": (
        "navigator/bad.toml",
        GOOD_NAV.replace('kind = "numeric"', 'kind = "vibes"'),
        "case[0].inputs[0].check",
        "ok",
    ),
    "not a navigator category": (
        "navigator/bad.toml",
        GOOD_NAV.replace('"reasoning"', '"poetry"'),
        "case[0].category",
        "ok",
    ),
    "navigator task without inputs": (
        "navigator/bad.toml",
        GOOD_NAV.split("[[case.inputs]]")[0],
        "case[0].inputs",
        "ok",
    ),
    "suite contradicts folder": ("usecase/bad.toml", GOOD_PM, "suite", "pm-ok"),
    "unit tests as old test statements": (
        "navigator/bad.toml",
        GOOD_NAV.replace(
            '{ kind = "numeric", expected = 2, tolerance = 0 }',
            '{ kind = "unit_tests", entrypoint = "f", tests = [\'assert f() == 1\'] }',
        ),
        "case[0].inputs[0].check.tests",
        "ok",
    ),
    "a unit-test call without an expected value": (
        "navigator/bad.toml",
        GOOD_NAV.replace(
            '{ kind = "numeric", expected = 2, tolerance = 0 }',
            '{ kind = "unit_tests", entrypoint = "f", calls = [{ args = [1] }] }',
        ),
        "case[0].inputs[0].check.calls[0].expect",
        "ok",
    ),
    "a fullmatch call without a string": (
        "navigator/bad.toml",
        GOOD_NAV.replace(
            '{ kind = "numeric", expected = 2, tolerance = 0 }',
            '{ kind = "unit_tests", entrypoint = "P", calls = [{ via = "fullmatch", args = [1], '
            "expect = true }] }",
        ),
        "case[0].inputs[0].check.calls[0].args",
        "ok",
    ),
    "a truthy call expecting a string": (
        "navigator/bad.toml",
        GOOD_NAV.replace(
            '{ kind = "numeric", expected = 2, tolerance = 0 }',
            '{ kind = "unit_tests", entrypoint = "f", calls = [{ expect = "x", '
            'compare = "truthy" }] }',
        ),
        "case[0].inputs[0].check.calls[0].expect",
        "ok",
    ),
    "an entrypoint that is not a name": (
        "navigator/bad.toml",
        GOOD_NAV.replace(
            '{ kind = "numeric", expected = 2, tolerance = 0 }',
            '{ kind = "unit_tests", entrypoint = "f()", calls = [{ expect = 1 }] }',
        ),
        "case[0].inputs[0].check.entrypoint",
        "ok",
    ),
}


@pytest.mark.parametrize("name", BAD_FILES, ids=list(BAD_FILES))
def test_a_malformed_case_is_reported_by_file_and_field(tmp_path, name):
    relative, text, field, case_id = BAD_FILES[name]
    if name == "suite contradicts folder":
        text = 'suite = "pm"\n' + text
    root = write_bank(
        tmp_path / "tasks", {relative: text, "pm/fine.toml": GOOD_PM.replace("pm-ok", "pm-fine")}
    )
    with pytest.raises(TaskBankError) as caught:
        load_bank(root)
    problems = caught.value.problems
    assert [p.path.name for p in problems] == ["bad.toml"] * len(problems)
    assert (field, case_id) in [(p.field, p.case_id) for p in problems]
    assert f"bad.toml: {field}" in str(caught.value)


def test_invalid_toml_names_the_file_and_line(tmp_path):
    root = write_bank(tmp_path / "tasks", {"pm/broken.toml": 'id = "x"\ntitle = \n'})
    with pytest.raises(TaskBankError) as caught:
        load_bank(root)
    assert caught.value.path.name == "broken.toml"
    assert "not valid TOML" in str(caught.value) and "line 2" in str(caught.value)


def test_a_case_id_used_twice_is_reported_with_both_files(tmp_path):
    root = write_bank(tmp_path / "tasks", {"pm/a.toml": GOOD_PM, "pm/b.toml": GOOD_PM})
    with pytest.raises(TaskBankError) as caught:
        load_bank(root)
    (problem,) = caught.value.problems
    assert problem.path.name == "b.toml" and problem.field == "id" and "a.toml" in problem.message


def test_cases_of_one_task_share_their_category(tmp_path):
    other = GOOD_PM.replace("pm-ok", "pm-two").replace('"strategy"', '"discovery"')
    files = {
        "pm/a.toml": GOOD_PM.replace('id = "pm-ok"', 'id = "pm-ok"\ntask = "t"'),
        "pm/b.toml": other.replace('id = "pm-two"', 'id = "pm-two"\ntask = "t"'),
    }
    with pytest.raises(TaskBankError) as caught:
        load_bank(write_bank(tmp_path / "tasks", files))
    assert caught.value.field == "category" and caught.value.path.name == "b.toml"


def test_an_unknown_folder_or_missing_root_is_an_error(tmp_path):
    root = write_bank(tmp_path / "tasks", {"pm/a.toml": GOOD_PM, "extras/x.toml": GOOD_PM})
    with pytest.raises(TaskBankError, match="not a suite folder"):
        load_bank(root)
    with pytest.raises(TaskBankError, match="no such folder"):
        load_bank(tmp_path / "nowhere")


def test_public_view_never_shows_a_browser_checks_answer_key():
    bank = load_bank()
    decidable = [c for c in bank.suite("pm") if any(b.selector for b in c.browser_checks)]
    assert decidable, "the demo bank has a browser check with a selector"
    for case in decidable:
        shown = public_view(case)["browser_checks"]
        assert all(set(check) == {"id", "question"} for check in shown)
        for check in case.browser_checks:
            assert check.selector is None or check.selector not in str(public_view(case))
