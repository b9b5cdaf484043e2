"""Tier-1 scripted checks: every kind passes, partly passes and fails with an exact reason;
answer code runs in a child process that has no network, no way out of its temporary
directory and a hard timeout."""

from __future__ import annotations

import time

import jsonschema
import pytest

from bench_pipeline.grading import scripted
from bench_pipeline.grading.outcomes import OUTCOME_CREDIT, CheckResult
from bench_pipeline.grading.sandbox import CallRun, OfflineSandbox, recorded_run
from bench_pipeline.grading.scripted import (
    extract_json,
    last_number,
    run_check,
    schema_errors,
)
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.models import (
    ExactFieldsCheck,
    JsonSchemaCheck,
    JudgeCheck,
    NumericCheck,
    RegexCheck,
    UnitTestCall,
    UnitTestsCheck,
)

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def bank():
    return load_bank()


def bank_check(bank, case_id: str, input_id: str):
    case = bank.get("navigator", case_id)
    return next(i.check for i in case.inputs if i.id == input_id)


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code.strip()}\n```"


def graded(check, output: str) -> tuple[str, str]:
    result = run_check(check, output)
    assert result.grader == scripted.grader_name(check.kind)
    return result.outcome, result.reason


def test_outcome_values_follow_the_methodology():
    assert OUTCOME_CREDIT == {"pass": 1.0, "partial": 0.5, "fail": 0.0}
    result = CheckResult("pass", "ok", "script:regex@1")
    assert result.details == {}
    with pytest.raises(AttributeError):
        result.outcome = "fail"  # type: ignore[misc]


def test_a_judge_check_is_not_tier_one():
    judge = JudgeCheck.model_validate(
        {"kind": "judge", "rubric": [{"id": "clear", "question": "Is it clear?"}]}
    )
    with pytest.raises(TypeError, match="tier 2"):
        run_check(judge, "anything")
    with pytest.raises(TypeError, match="not a scripted check"):
        run_check("regex", "anything")  # type: ignore[arg-type]


# Reading the answer ---------------------------------------------------------------------------


def test_json_is_read_whole_then_from_the_first_fence_then_from_the_prose():
    assert extract_json(' {"a": 1} \n').value == {"a": 1}
    assert extract_json(' {"a": 1} \n').note is None
    found = extract_json('Here:\n~~~json\n{"a": 2}\n~~~\nand ```{"a": 3}```')
    assert (found.value, found.note) == ({"a": 2}, "read from the first fenced code block")
    found = extract_json('Result [see below]: {"a": 4} and {"a": 5}.')
    assert found.value == {"a": 4}
    assert found.note == "read the JSON at character 20; the text around it was ignored"
    assert extract_json("Items: [1, 2] done").value == [1, 2]
    assert extract_json("Items: [1, 2] done", "{") is None
    assert extract_json('{"a": NaN}') is None  # NaN is not JSON


def test_the_last_number_in_prose():
    assert last_number("Answer: 15") == (15.0, "15")
    assert last_number("Total 1,284.45 EUR") == (1284.45, "1,284.45")
    assert last_number("fell by −20.5% (v2)") == (-20.5, "−20.5")
    assert last_number("due 2026-03-15") == (15.0, "15")
    assert last_number("values 1,2,3") == (3.0, "3")
    assert last_number("2.5e3 units") == (2500.0, "2.5e3")
    assert last_number("version 1.2.3, no numbers") is None


# exact_fields ---------------------------------------------------------------------------------


def test_exact_fields_on_the_json_repair_case(bank):
    check = bank_check(bank, "nav-coding-json-repair", "quotes-and-comma")
    assert graded(check, '{"name": "Ada", "age": 36}') == ("pass", "all 2 fields match")
    assert graded(check, '{"name": "Ada", "age": 36.0}') == ("pass", "all 2 fields match")
    assert graded(check, fenced('{"name": "Ada", "age": 36}', "json")) == (
        "pass",
        "all 2 fields match (read from the first fenced code block)",
    )
    assert graded(check, '{"name": "Ada", "age": 37}') == (
        "partial",
        "1 of 2 fields match; field 'age': expected 36, got 37",
    )
    assert graded(check, '{"name": "Bob"}') == (
        "fail",
        "0 of 2 fields match; field 'name': expected \"Ada\", got \"Bob\"; field 'age': missing",
    )
    # allow_other_fields = false: everything right plus a field too many is partial.
    assert graded(check, 'Repaired: {"name": "Ada", "age": 36, "x": 1}') == (
        "partial",
        "2 of 2 fields match; fields not allowed: 'x' "
        "(read the JSON at character 10; the text around it was ignored)",
    )
    assert graded(check, "{'name': 'Ada', 'age': 36}") == (
        "fail",
        "no JSON object found in the answer",
    )
    assert graded(check, '[{"name": "Ada"}]') == (
        "fail",
        "the answer is a JSON array, not an object",
    )


def test_exact_fields_types_and_case(bank):
    literals = bank_check(bank, "nav-coding-json-repair", "python-literals")
    assert graded(literals, '{"items": [1, 2, 3], "ok": true, "note": null}')[0] == "pass"
    assert graded(literals, '{"items": [1, 2, 3], "ok": 1}') == (
        "partial",
        "1 of 2 fields match; field 'ok': expected true, got 1",
    )
    race = bank_check(bank, "nav-reason-ordering", "race")  # ignore_case = true
    assert graded(race, '{"first": "DEV", "last": "cleo"}') == ("pass", "all 2 fields match")
    strict = ExactFieldsCheck(kind="exact_fields", expected={"first": "Dev"})
    assert graded(strict, '{"first": "DEV"}') == (
        "fail",
        '0 of 1 fields match; field \'first\': expected "Dev", got "DEV"',
    )
    assert graded(strict, '{"first": "Dev", "other": 1}') == ("pass", "the field matches")


# json_schema ----------------------------------------------------------------------------------

EVENTS = [
    {"title": "Launch review", "date": "2026-02-03", "online": True},
    {"title": "Offsite", "date": "2026-02-10", "online": False},
    {"title": "Retro", "date": "2026-02-17", "online": True},
]


def test_json_schema_on_the_events_case(bank):
    import json

    check = bank_check(bank, "nav-extract-events", "newsletter")
    assert graded(check, json.dumps(EVENTS)) == ("pass", "valid against the schema")
    assert graded(check, "Events:\n" + fenced(json.dumps(EVENTS), "json") + "\nDone.") == (
        "pass",
        "valid against the schema (read from the first fenced code block)",
    )
    broken = [EVENTS[0], {"title": "", "date": "2026-2-10", "online": "no", "room": "B"}]
    result = run_check(check, json.dumps(broken))
    assert result.outcome == "fail"
    assert result.reason.startswith("does not match the schema: $: [{'title': 'Launch review'")
    assert result.reason.endswith("is too short (and 4 more)")
    assert result.details["errors"][1:] == [
        "$[1]: Additional properties are not allowed ('room' was unexpected)",
        "$[1].date: '2026-2-10' does not match '^2026-\\\\d{2}-\\\\d{2}$'",
        "$[1].online: 'no' is not of type 'boolean'",
        "$[1].title: '' should be non-empty",
    ]
    long = schema_errors(list(range(1000)), {"maxItems": 1})
    assert len(long) == 1 and long[0].startswith("$: [0, 1, 2,") and long[0].endswith("…")
    assert len(long[0]) == len("$: ") + scripted.SCHEMA_MESSAGE_CHARS
    assert graded(check, "no json here") == ("fail", "no JSON found in the answer")


def test_every_schema_in_the_bank_is_valid_json_schema(bank):
    schemas = [i.check.json_schema for c in bank for i in c.inputs if i.check.kind == "json_schema"]
    assert schemas
    for schema in schemas:
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_whole_of_2020_12_is_graded():
    # `if`/`then`, `contains` and `unevaluatedProperties` were beyond the old hand-written
    # validator; the library grades them.
    check = JsonSchemaCheck(
        kind="json_schema",
        json_schema={
            "type": "object",
            "if": {"required": ["a"]},
            "then": {"required": ["b"]},
            "properties": {"tags": {"contains": {"const": "x"}}},
            "unevaluatedProperties": False,
        },
    )
    assert graded(check, '{"a": 1, "b": 2, "tags": ["x"]}') == ("fail", (
        "does not match the schema: $: Unevaluated properties are not allowed "
        "('a', 'b' were unexpected)"
    ))  # fmt: skip
    assert graded(check, '{"a": 1}') == (
        "fail",
        "does not match the schema: $: 'b' is a required property (and 1 more)",
    )
    assert graded(check, '{"tags": ["x"]}')[0] == "pass"


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "wat"}, "the schema is not valid JSON Schema at $.type: 'wat' is not valid"),
        (
            {"type": "string", "minLength": -1},
            "the schema is not valid JSON Schema at $.minLength: -1 is less",
        ),
        (
            {"type": "string", "pattern": "(?<=a+)b"},
            "the schema is not valid JSON Schema at $.pattern:",
        ),
        ({"$ref": "https://example.invalid/s.json"}, "the schema cannot be applied: "),
        ({"$ref": "#/$defs/missing"}, "the schema cannot be applied: "),
    ],
)
def test_a_schema_that_cannot_be_applied_is_inconclusive_never_a_raise(schema, why):
    check = JsonSchemaCheck(kind="json_schema", json_schema=schema)
    result = run_check(check, '{"a": 1}')
    assert result.outcome == "inconclusive"
    assert result.reason.startswith("not graded: " + why), result.reason


def test_a_hostile_instance_is_graded_not_raised():
    deep = "[" * 50_000 + "]" * 50_000  # deeper than Python's recursion limit
    check = JsonSchemaCheck(
        kind="json_schema", json_schema={"type": "array", "items": {"type": "array"}}
    )
    assert run_check(check, deep).outcome in {"fail", "inconclusive"}
    nested = JsonSchemaCheck(
        kind="json_schema", json_schema={"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}},
                                         "type": "array", "$ref": "#/$defs/n"},
    )  # fmt: skip
    result = run_check(nested, "[" * 900 + "]" * 900)
    assert result.outcome in {"pass", "inconclusive"}, result.reason


SCHEMA_CASES = [
    ({"type": "integer"}, 3.0, []),
    ({"type": "integer"}, True, ["$: True is not of type 'integer'"]),
    ({"type": ["string", "null"]}, None, []),
    (
        {"type": "number", "minimum": 1, "exclusiveMaximum": 2},
        2,
        ["$: 2 is greater than or equal to the maximum of 2"],
    ),
    ({"multipleOf": 0.1}, 0.3, []),
    ({"multipleOf": 2}, 7, ["$: 7 is not a multiple of 2"]),
    ({"enum": ["a", 1]}, 1.0, []),
    ({"enum": ["a", 1]}, "b", ["$: 'b' is not one of ['a', 1]"]),
    ({"const": {"k": [1]}}, {"k": [2]}, ["$: {'k': [1]} was expected"]),
    ({"uniqueItems": True}, [1, 2, 1.0], ["$: [1, 2, 1.0] has non-unique elements"]),
    (
        {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
        ["a", 1, "b"],
        ["$[2]: 'b' is not of type 'integer'"],
    ),
    (
        {"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False},
        {"x-a": "ok", "x-b": 2, "y": 1},
        [
            "$: 'y' does not match any of the regexes: '^x-'",
            "$[\"x-b\"]: 2 is not of type 'string'",
        ],
    ),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, ["$: {'a': 1, 'b': 2} has too many properties"]),
    (
        {"$defs": {"pos": {"type": "number", "minimum": 0}}, "items": {"$ref": "#/$defs/pos"}},
        [1, -1],
        ["$[1]: -1 is less than the minimum of 0"],
    ),
    (
        {"anyOf": [{"type": "string"}, {"minimum": 5}]},
        3,
        ["$: 3 is not valid under any of the given schemas"],
    ),
    (
        {"oneOf": [{"type": "number"}, {"type": "integer"}]},
        3,
        ["$: 3 is valid under each of {'type': 'integer'}, {'type': 'number'}"],
    ),
    ({"not": {"type": "null"}}, None, ["$: None should not be valid under {'type': 'null'}"]),
    (
        {"properties": {"a b": {"maxLength": 1}}},
        {"a b": "xy"},
        ["$[\"a b\"]: 'xy' is too long"],
    ),
    ({"type": "string", "title": "Name", "format": "email"}, "not an email", []),
]


@pytest.mark.parametrize(("schema", "value", "errors"), SCHEMA_CASES)
def test_schema_errors(schema, value, errors):
    assert schema_errors(value, schema) == errors


# regex ----------------------------------------------------------------------------------------


def test_regex_on_the_complexity_case(bank):
    check = bank_check(bank, "nav-coding-complexity", "pairs")
    answer = "Two nested loops over the list.\nAnswer: O(n^2)"
    assert graded(check, answer) == (
        "pass",
        'the pattern is found at character 32: "Answer: O(n^2)"',
    )
    assert graded(check, "Linear.\nAnswer: O(n)") == ("fail", "the pattern is not found")
    clock = bank_check(bank, "nav-reason-clock", "train")  # ignore_case = true
    assert graded(clock, "answer: 12:15")[0] == "pass"


def test_regex_that_must_not_match():
    check = RegexCheck(kind="regex", pattern=r"\bTODO\b", must_match=False)
    assert graded(check, "All done.") == ("pass", "the pattern is not found, as required")
    assert graded(check, "Step 2: TODO") == (
        "fail",
        'the pattern is found at character 8: "TODO", but must not be',
    )


# numeric --------------------------------------------------------------------------------------


def test_numeric_reads_the_last_number(bank):
    check = bank_check(bank, "nav-data-mean", "integers")  # 15 ± 0.01
    assert graded(check, "75 / 5\nAnswer: 15") == (
        "pass",
        "got 15, expected 15 ± 0.01 (the last number in the answer)",
    )
    assert graded(check, "Answer: 15.2") == (
        "fail",
        "got 15.2, expected 15 ± 0.01: off by 0.2 (the last number in the answer)",
    )
    assert graded(check, "I cannot tell.") == ("fail", "no number found in the answer")
    users = bank_check(bank, "nav-data-growth", "users")  # -20 ± 0.1
    assert graded(users, "From 1,250 to 1,000.\nAnswer: −20")[0] == "pass"


def test_numeric_reads_a_json_field(bank):
    check = bank_check(bank, "nav-extract-receipt-total", "cafe")  # total 11.22 ± 0.001
    assert graded(check, '{"total": 11.22}') == (
        "pass",
        "field 'total': got 11.22, expected 11.22 ± 0.001",
    )
    assert graded(check, 'Paid: {"total": 10.2}') == (
        "fail",
        "field 'total': got 10.2, expected 11.22 ± 0.001: off by 1.02 "
        "(read the JSON at character 6; the text around it was ignored)",
    )
    assert graded(check, '{"total": "11.22"}') == (
        "fail",
        "field 'total': expected a number, got string \"11.22\"",
    )
    assert graded(check, '{"sum": 11.22}') == ("fail", "field 'total': missing")
    assert graded(check, "11.22") == (
        "fail",
        "no JSON object found in the answer (the check reads field 'total')",
    )


def test_numeric_relative_tolerance():
    check = NumericCheck(kind="numeric", expected=200.0, tolerance=0.05, relative=True)
    assert graded(check, "about 209") == (
        "pass",
        "got 209, expected 200 within 5% (± 10) (the last number in the answer)",
    )
    assert graded(check, "about 189")[0] == "fail"


# unit_tests: grading --------------------------------------------------------------------------

SLUGIFY = """
import re


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
"""

BUGGY_LAST_N = '''
def last_n(items, n):
    """The last n items of the list."""
    return items[len(items) - n - 1:]
'''


def test_unit_tests_pass_on_a_correct_answer(bank):
    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    result = run_check(check, "Here you go:\n\n" + fenced(SLUGIFY) + "\n\nIt uses re.")
    assert (result.outcome, result.reason) == (
        "pass",
        "3 of 3 tests passed (read from the first fenced code block)",
    )
    assert result.grader == "script:unit_tests@2"
    assert [t["passed"] for t in result.details["tests"]] == [True, True, True]
    assert result.details["isolation"].startswith("bubblewrap jail")


def test_unit_tests_count_each_call_separately(bank):
    check = bank_check(bank, "nav-coding-fix-bug", "last-n")
    assert graded(check, BUGGY_LAST_N) == (
        "partial",
        "1 of 3 tests passed; "
        "test 1 failed: returned [2, 3, 4], not the expected value; "
        "test 2 failed: returned [2], not the expected value",
    )
    fixed = BUGGY_LAST_N.replace(
        "items[len(items) - n - 1:]", "items[len(items) - n:] if n else []"
    )
    assert graded(check, fenced(fixed)) == (
        "pass",
        "3 of 3 tests passed (read from the first fenced code block)",
    )
    tupled = fixed.replace("if n else []", "if n else ()").replace("return ", "return tuple(")
    assert graded(check, tupled.rstrip() + ")\n")[0] == "pass"  # a tuple arrives as an array


def test_unit_tests_compare_exact_types_unless_the_call_says_otherwise():
    answer = "def f(kind):\n    return {'int': 1, 'float': 1.0, 'bool': True, 'zero': 0}[kind]\n"

    def call(arg, expect, compare="exact"):
        return UnitTestCall(args=(arg,), expect=expect, compare=compare)

    check = UnitTestsCheck(kind="unit_tests", entrypoint="f", calls=(
        call("int", 1), call("float", 1), call("bool", 1), call("float", 1.0),
        call("float", 1, "by_value"), call("bool", 1, "by_value"),
        call("int", True, "truthy"), call("zero", False, "truthy"), call("zero", True, "truthy"),
    ))  # fmt: skip
    result = run_check(check, answer)
    assert (result.outcome, result.reason) == (
        "partial",
        "5 of 9 tests passed; "
        "test 2 failed: returned the expected value as another type (types are compared "
        "exactly); "
        "test 3 failed: returned true, not the expected value; "
        "test 6 failed: returned true, not the expected value; "
        "test 9 failed: returned 0, not the expected truth value",
    )


def test_unit_tests_take_back_only_plain_json_data():
    answer = """
import collections

def f(number):
    if number == 7:
        value = 1
        for _ in range(200):
            value = [value]
        return value
    return [
        None, {1}, float("nan"), {1: "a"}, collections.namedtuple("P", "x")(1), 10**5000, b"x",
    ][number]
"""
    # Numbers as arguments: a grade hides every argument text of four characters or more.
    calls = [UnitTestCall(args=(0,), expect_null=True)]
    calls += [UnitTestCall(args=(number,), expect=0) for number in range(1, 8)]
    check = UnitTestsCheck(kind="unit_tests", entrypoint="f", calls=tuple(calls))
    result = run_check(check, answer)
    why = "returned something that is not plain JSON data"
    assert (result.outcome, result.reason) == (
        "partial",
        "1 of 8 tests passed; "
        f"test 2 failed: {why} (type set); "
        f"test 3 failed: {why} (the float nan); "
        f"test 4 failed: {why} (an object key of type int); "
        f"test 5 failed: {why} (type P); "
        f"test 6 failed: {why} (writing it as JSON raised ValueError: Exceeds the limit (4300 "
        "digits) for integ…); "
        f"test 7 failed: {why} (type bytes); "
        f"test 8 failed: {why} (nesting deeper than 100 levels)",
    )


def test_unit_tests_on_a_constant_entrypoint(bank):
    check = bank_check(bank, "nav-coding-regex", "hex-colour")
    assert graded(check, fenced('PATTERN = r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})"'))[0] == "pass"
    outcome, reason = graded(check, fenced('PATTERN = r"#[0-9a-f]+"'))
    assert (outcome, reason) == (
        "partial",
        "3 of 5 tests passed; test 2 failed: returned false, not the expected value; "
        "test 3 failed: returned true, not the expected value "
        "(read from the first fenced code block)",
    )
    value = UnitTestsCheck(kind="unit_tests", entrypoint="LIMIT", calls=(
        UnitTestCall(via="value", expect=[3, "x"]),
    ))  # fmt: skip
    assert graded(value, "LIMIT = (3, 'x')\n") == ("pass", "1 of 1 tests passed")


def test_unit_tests_none_passing_is_a_fail(bank):
    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    assert graded(check, "def slugify(title):\n    raise ValueError('not done: ' + title)\n") == (
        "fail",
        "0 of 3 tests passed; "
        "test 1 failed: raised ValueError: not done: [hidden]; "
        "test 2 failed: raised ValueError: not done: [hidden]; "
        "test 3 failed: raised ValueError: not done: ",
    )


def test_code_that_does_not_load_is_a_fail(bank):
    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    assert graded(check, "import numpy_that_is_not_installed\n" + SLUGIFY) == (
        "fail",
        "the code does not load: ModuleNotFoundError: No module named "
        "'numpy_that_is_not_installed'",
    )
    assert graded(check, fenced("def slugify(title:\n    return title")) == (
        "fail",
        "the code does not load: SyntaxError: '(' was never closed (answer.py, line 1) "
        "(read from the first fenced code block)",
    )
    assert graded(check, "import sys\nsys.exit(3)\n") == (
        "fail",
        "the code does not load: SystemExit: 3",
    )
    assert graded(check, "def slug(title):\n    return title\n") == (
        "fail",
        "the code does not define 'slugify'",
    )


def test_an_answer_that_ends_its_process_fails_what_it_did_not_answer(bank):
    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    answer = "import os\n\ndef slugify(title):\n    os._exit(3)\n"
    assert graded(check, answer) == (
        "fail",
        "0 of 3 tests passed; "
        "test 1 failed: the process ended during the call (exit code 3); "
        "test 2 failed: the process ended during the call (exit code 3); "
        "test 3 failed: the process ended during the call (exit code 3)",
    )
    only_empty = SLUGIFY.replace("    return", "    if not title:\n        os._exit(3)\n    return")
    assert graded(check, "import os\n" + only_empty) == (
        "partial",
        "2 of 3 tests passed; test 3 failed: the process ended during the call (exit code 3)",
    )


def test_an_answer_that_prints_a_lot_is_still_graded(bank):
    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    noisy = "import os\nprint('x' * 3_000_000)\nos.write(1, b'y' * 1_000_000)\n" + SLUGIFY.replace(
        "    return", "    print(title * 100_000)\n    return"
    )
    result = run_check(check, noisy)
    assert (result.outcome, result.reason) == ("pass", "3 of 3 tests passed")
    assert result.details["printed_chars"] > 3 * 3_000_000  # counted, not kept
    assert result.details["printed"] == "x" * scripted.PRINTED_KEPT_CHARS


def test_threads_left_running_do_not_hold_the_result(bank):
    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    lingering = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\n"
    started = time.monotonic()
    assert graded(check, lingering + SLUGIFY) == ("pass", "3 of 3 tests passed")
    assert time.monotonic() - started < 5


# unit_tests: the rules, on recorded runs (no subprocess) ----------------------------------------


def _offline(code: str, run) -> OfflineSandbox:
    return OfflineSandbox({code: run})


def test_recorded_runs_give_the_same_reasons_as_real_ones(bank):
    check = bank_check(bank, "nav-coding-fix-bug", "last-n")
    returned = [CallRun("returned", value=v) for v in ([2, 3, 4], [], [1, 2])]
    sandbox = _offline(BUGGY_LAST_N, recorded_run(*returned))
    result = run_check(check, BUGGY_LAST_N, sandbox=sandbox)
    assert (result.outcome, result.reason) == (
        "partial",
        "2 of 3 tests passed; test 1 failed: returned [2, 3, 4], not the expected value",
    )
    assert result.details["isolation"] == "offline"
    sandbox = _offline(BUGGY_LAST_N, recorded_run(*returned[:2], CallRun("timed_out")))
    result = run_check(check, BUGGY_LAST_N, sandbox=sandbox)
    assert (result.outcome, result.reason) == ("fail", "timed out after 10s")
    assert result.details["stuck_in_test"] == 3
    assert [t["passed"] for t in result.details["tests"]] == [False, True, None]
    sandbox = _offline(BUGGY_LAST_N, recorded_run(CallRun("over_cap")))
    assert run_check(check, BUGGY_LAST_N, sandbox=sandbox).reason == (
        "the answer wrote more than 1 MiB to the grader during test 1; its jail was killed"
    )
    sandbox = _offline(BUGGY_LAST_N, recorded_run(CallRun("ended_loading", exit_code=0)))
    assert run_check(check, BUGGY_LAST_N, sandbox=sandbox).reason == (
        "the code ended its process while loading (exit code 0)"
    )
    sandbox = _offline(BUGGY_LAST_N, recorded_run(CallRun("missing_entrypoint")))
    assert run_check(check, BUGGY_LAST_N, sandbox=sandbox).reason == (
        "the code does not define 'last_n'"
    )
    unreadable = CallRun("unreadable", error="4 events where the child writes at most 3")
    sandbox = _offline(BUGGY_LAST_N, recorded_run(unreadable, *returned[1:]))
    assert run_check(check, BUGGY_LAST_N, sandbox=sandbox).reason == (
        "2 of 3 tests passed; test 1 failed: its reply could not be read "
        "(4 events where the child writes at most 3)"
    )


def test_a_grade_hides_the_calls_arguments_and_expected_values_in_every_form():
    check = UnitTestsCheck(kind="unit_tests", entrypoint="f", calls=(
        UnitTestCall(args=("line\nbreak", [1, 2, 3]), expect="résumé"),
        UnitTestCall(args=("tab\there",), expect={"k": ["déjà"]}),
    ))  # fmt: skip
    echoed = "f('line\\nbreak', [1, 2, 3]) line\nbreak résumé {'k': ['déjà']}"
    sandbox = _offline("code", recorded_run(
        CallRun("returned", value=["line\nbreak", "r\u00e9sum\u00e9"], printed=echoed,
                printed_chars=len(echoed)),
        CallRun("raised", error='ValueError: "tab\\there" {"k": ["d\\u00e9j\\u00e0"]}'),
    ))  # fmt: skip
    result = run_check(check, "code", sandbox=sandbox)
    assert (result.outcome, result.reason) == (
        "fail",
        '0 of 2 tests passed; test 1 failed: returned ["[hidden]", "[hidden]"], not the expected '
        'value; test 2 failed: raised ValueError: "[hidden]" [hidden]',
    )
    assert result.details["printed"] == "f('[hidden]', [hidden]) [hidden] [hidden] [hidden]"


def test_code_the_offline_sandbox_has_not_recorded_is_inconclusive(bank):
    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    result = run_check(check, SLUGIFY, sandbox=OfflineSandbox({}))
    assert (result.outcome, result.reason) == (
        "inconclusive",
        "not graded: the unit-test jail is unavailable: "
        "the offline sandbox has no recorded run for this code",
    )


def test_a_grader_fault_is_inconclusive_never_a_raise(bank):
    class Broken:
        def run(self, job):
            raise RuntimeError("disk on fire")

    check = bank_check(bank, "nav-coding-small-functions", "slugify")
    result = run_check(check, SLUGIFY, sandbox=Broken())
    assert (result.outcome, result.reason) == (
        "inconclusive",
        "not graded: the unit_tests grader failed: RuntimeError: disk on fire",
    )
