"""Tier 1: the scripted checks of the task bank, run against one output.

`run_check(check, output)` grades an output with one of the five scripted check kinds and
returns a `CheckResult` whose reason says exactly what was right or wrong. A `judge` check
is tier 2 and raises `TypeError` here: the caller sends it to the judges.

Reading the answer. Answers often arrive in a fenced code block or with prose around them.
The text graded is found the same way every time, and the reason says when it was not the
whole answer:

- JSON (`exact_fields`, `json_schema`, `numeric` with a `field`): the whole answer if it
  parses; else the body of the first fenced code block if that parses; else the first JSON
  value in the text (the first `{`, or `{`/`[` for a schema, at which a complete value
  parses). `NaN` and `Infinity` are not JSON and are refused.
- Code (`unit_tests`): the body of the first fenced code block, else the whole answer.
- `regex` and `numeric` without a `field` read the whole answer as it is.

When an answer earns `partial`:

- `exact_fields`: some but not all expected fields are equal, or all are but the answer has
  fields the check forbids (`allow_other_fields = false`). None equal is `fail`.
- `unit_tests`: some but not all tests pass. All is `pass`; none is `fail`, and so is code that
  does not load, lacks the entrypoint, ends its process while loading, times out, or writes
  more than the grader reads (`OUTPUT_CAP_BYTES`): the calls it did not reach are not made.
- `json_schema`, `regex` and `numeric` are all or nothing: a schema is a contract, a pattern
  matches or not, and a tolerance already says how close is close enough.

JSON Schema (`json_schema`): 2020-12, validated by the `jsonschema` library. `format` is an
annotation, as 2020-12 has it by default. A schema that is not valid JSON Schema, or that
cannot be applied (a `$ref` that does not resolve, a pattern Python cannot compile), makes the
check `inconclusive` with the reason: a grader's problem is never the answer's fail.

Unit tests (`unit_tests`) run the answer's code in a `Sandbox` (grading/sandbox.py): the
bubblewrap jail in production, a recorded stand-in in rule tests. Each test is one call
(`taskbank.models.UnitTestCall`), made in a jail of its own, which hands back only what the
call returned, as plain JSON data; the expected values never leave this module, and the
comparison is made here (`same_json`: exact types, so 1 is neither 1.0 nor true, unless the
call says `by_value` or `truthy`). Each call is counted separately. When the jail cannot run
the job, the check is `inconclusive` with the reason and goes to a person; the code is never
run outside the jail instead. A grade of a unit-test check never quotes a call's arguments
or expected value: everything the answer wrote that is kept (what it printed, a returned
value, an exception's message) has those texts replaced by `[hidden]` first (`Scrubber`;
texts of at least `HIDDEN_MIN_CHARS` characters, as written: an answer that encodes them
could still carry them, into details that receipts never show).

`run_check` never raises on an answer or a check's content: anything a grader cannot handle
becomes an `inconclusive` result naming what went wrong.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import jsonschema

from bench_pipeline.grading.outcomes import CheckResult, ResultOutcome
from bench_pipeline.grading.sandbox import (
    ENDS_THE_RUN,
    OUTPUT_CAP_BYTES,
    PRINTED_KEPT_CHARS,
    CallRun,
    JailedSandbox,
    JailUnavailable,
    Sandbox,
    SandboxCall,
    SandboxJob,
    network_isolation,
)
from bench_pipeline.taskbank.models import (
    ExactFieldsCheck,
    JsonSchemaCheck,
    JudgeCheck,
    NumericCheck,
    RegexCheck,
    UnitTestCall,
    UnitTestsCheck,
)

GRADER_VERSION = 1
"""Bumped whenever a change here could change a result; recorded in every `grader` name."""
GRADER_VERSIONS = {"unit_tests": 2}
"""Kinds whose grader changed on its own since: `unit_tests` 2 makes calls and compares
their JSON results here (1 ran test statements inside the jail)."""

ScriptedCheck = ExactFieldsCheck | JsonSchemaCheck | RegexCheck | NumericCheck | UnitTestsCheck

VALUE_CHARS = 80
"""Longest quoted value in a reason before it is cut with `…`."""


def grader_name(kind: str) -> str:
    """`script:<kind>@<version>`, e.g. `script:regex@1`, `script:unit_tests@2`."""
    return f"script:{kind}@{GRADER_VERSIONS.get(kind, GRADER_VERSION)}"


__all__ = ["PRINTED_KEPT_CHARS", "network_isolation"]  # re-exported for their old callers


def run_check(
    check: ScriptedCheck | JudgeCheck, output: str, *, sandbox: Sandbox | None = None
) -> CheckResult:
    """Grade `output` with a tier-1 `check` (see the module docstring for the rules).

    Args:
        check: A scripted check.
        output: The answer as the model gave it.
        sandbox: Where `unit_tests` code runs; None is a fresh `JailedSandbox`.

    Raises:
        TypeError: For a `judge` check (tier 2) or anything that is not a check: a caller's
            mistake. Nothing in the answer or the check's content makes it raise.
    """
    if isinstance(check, JudgeCheck):
        raise TypeError("a judge check is tier 2: send it to the judges, not run_check")
    runner = _RUNNERS.get(type(check))
    if runner is None:
        raise TypeError(f"not a scripted check: {type(check).__name__}")
    try:
        return runner(check, output, sandbox)
    except Exception as exc:  # a grader bug must not fail the whole grading cycle
        reason = f"not graded: the {check.kind} grader failed: {type(exc).__name__}: {exc}"
        return CheckResult("inconclusive", reason[:500], grader_name(check.kind))


# Reading the answer ---------------------------------------------------------------------------

_FENCE = re.compile(
    r"^[ ]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<body>.*?)^[ ]{0,3}(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)

FENCE_NOTE = "read from the first fenced code block"


def first_fenced_block(text: str) -> str | None:
    """The body of the first complete ``` or ~~~ fenced block, or None when there is none."""
    match = _FENCE.search(text)
    return match.group("body") if match else None


@dataclass(frozen=True)
class Extracted:
    """A value read from an answer, and how (`note` is None when it was the whole answer)."""

    value: Any
    note: str | None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _loads(text: str) -> Any:
    value, end = _DECODER.raw_decode(text)
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def extract_json(text: str, openings: str = "{[") -> Extracted | None:
    """The JSON value in `text` by the rule in the module docstring; `openings` are the
    characters a value found inside prose may start with. None when nothing parses."""
    for candidate, note in ((text.strip(), None), (first_fenced_block(text), FENCE_NOTE)):
        if candidate is None:
            continue
        try:
            return Extracted(_loads(candidate.strip()), note)
        except ValueError:
            pass
    for index, char in enumerate(text):
        if char not in openings:
            continue
        try:
            value, _ = _DECODER.raw_decode(text, index)
        except ValueError:
            continue
        return Extracted(
            value, f"read the JSON at character {index}; the text around it was ignored"
        )
    return None


def extract_code(text: str) -> Extracted:
    """The code in an answer: the first fenced block's body, else the whole answer."""
    block = first_fenced_block(text)
    if block is None:
        return Extracted(text, None)
    return Extracted(block, FENCE_NOTE)


def _with_note(reason: str, note: str | None) -> str:
    return f"{reason} ({note})" if note else reason


def _cut_text(text: str) -> str:
    """`text` cut at `VALUE_CHARS` with `…`."""
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _shown(value: Any) -> str:
    """A JSON value as a reason quotes it, cut at `VALUE_CHARS`."""
    return _cut_text(_json_text(value))


def _number(value: float) -> str:
    """A number as a reason shows it: `15`, not `15.0`; otherwise up to 12 significant digits."""
    if isinstance(value, int) or (math.isfinite(value) and value.is_integer()):
        return str(int(value))
    return f"{value:.12g}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(left: Any, right: Any, *, ignore_case: bool = False) -> bool:
    """JSON equality: numbers by value (`36 == 36.0`), booleans apart from numbers, objects by
    keys and values, arrays in order; strings case-insensitively when `ignore_case`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) and _is_number(right):
        return left == right
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold() if ignore_case else left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            json_equal(a, b, ignore_case=ignore_case) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(
            json_equal(left[k], right[k], ignore_case=ignore_case) for k in left
        )
    return left is None and right is None


def same_json(left: Any, right: Any) -> bool:
    """JSON equality with exact types: numbers only of the same type (`1` is not `1.0`),
    booleans apart from numbers, objects by keys and values, arrays in order."""
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(
            same_json(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    return bool(left == right)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if _is_number(value):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names[type(value)]


# exact_fields ---------------------------------------------------------------------------------


def _exact_fields(check: ExactFieldsCheck, output: str, _sandbox: Sandbox | None) -> CheckResult:
    grader = grader_name(check.kind)
    found = extract_json(output, "{")
    if found is None:
        return CheckResult("fail", "no JSON object found in the answer", grader)
    if not isinstance(found.value, dict):
        reason = f"the answer is a JSON {_json_type(found.value)}, not an object"
        return CheckResult("fail", _with_note(reason, found.note), grader)
    answer: dict[str, Any] = found.value
    problems, fields = [], {}
    for name, expected in check.expected.items():
        if name not in answer:
            problems.append(f"field '{name}': missing")
            fields[name] = "missing"
        elif json_equal(expected, answer[name], ignore_case=check.ignore_case):
            fields[name] = "equal"
        else:
            problems.append(
                f"field '{name}': expected {_shown(expected)}, got {_shown(answer[name])}"
            )
            fields[name] = "different"
    extra = [] if check.allow_other_fields else [k for k in answer if k not in check.expected]
    if extra:
        problems.append("fields not allowed: " + ", ".join(f"'{k}'" for k in extra))
    equal, total = sum(v == "equal" for v in fields.values()), len(check.expected)
    details = {"fields": fields, "extra_fields": extra, "note": found.note}
    if not problems:
        reason = f"all {total} fields match" if total > 1 else "the field matches"
        return CheckResult("pass", _with_note(reason, found.note), grader, details)
    outcome: ResultOutcome = "fail" if equal == 0 else "partial"
    reason = f"{equal} of {total} fields match; " + "; ".join(problems)
    return CheckResult(outcome, _with_note(reason, found.note), grader, details)


# json_schema ----------------------------------------------------------------------------------

SCHEMA_MESSAGE_CHARS = 160
"""Longest message of one schema error in a reason or the details before it is cut."""


class SchemaNotUsable(Exception):
    """The check's schema cannot be applied (invalid, or a reference that does not resolve)."""


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path = _child_path(path, part)
    return path


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _cut(text: str) -> str:
    return text if len(text) <= SCHEMA_MESSAGE_CHARS else text[: SCHEMA_MESSAGE_CHARS - 1] + "…"


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Any:
    """`multipleOf` on the shortest decimal text of each number: 0.3 is a multiple of 0.1, as
    a reader expects (the library divides binary floats, and 0.3 / 0.1 is not 3)."""
    if not validator.is_type(instance, "number") or isinstance(instance, bool):
        return
    if Fraction(repr(instance)) % Fraction(repr(divisor)) != 0:
        yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor!r}")


_VALIDATOR = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"multipleOf": _multiple_of}
)


def schema_errors(instance: Any, schema: Any) -> list[str]:
    """Every way `instance` breaks `schema` (JSON Schema 2020-12, by the `jsonschema`
    library; `format` is an annotation, as 2020-12 has it by default), as messages prefixed
    with a path (`$` is the root, `$[0].date` a field of the first item), sorted by path.
    Empty when it is valid.

    Raises:
        SchemaNotUsable: The schema is not valid 2020-12, or cannot be applied to this
            instance (a `$ref` that does not resolve, a pattern Python cannot compile).
    """
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = _json_path(exc.absolute_path)
        message = f"the schema is not valid JSON Schema at {where}: {exc.message}"
        raise SchemaNotUsable(message) from exc
    validator = _VALIDATOR(schema)
    try:
        found = sorted(
            validator.iter_errors(instance),
            key=lambda e: (_json_path(e.absolute_path), str(e.validator), e.message),
        )
    except Exception as exc:  # an unresolvable $ref, a bad pattern, too deep: the schema's fault
        raise SchemaNotUsable(f"the schema cannot be applied: {type(exc).__name__}: {exc}") from exc
    return [f"{_json_path(e.absolute_path)}: {_cut(e.message)}" for e in found]


def _json_schema(check: JsonSchemaCheck, output: str, _sandbox: Sandbox | None) -> CheckResult:
    grader = grader_name(check.kind)
    found = extract_json(output)
    if found is None:
        return CheckResult("fail", "no JSON found in the answer", grader)
    try:
        errors = schema_errors(found.value, check.json_schema)
    except SchemaNotUsable as exc:
        return CheckResult("inconclusive", f"not graded: {exc}", grader, {"note": found.note})
    details = {"errors": errors, "note": found.note}
    if not errors:
        return CheckResult(
            "pass", _with_note("valid against the schema", found.note), grader, details
        )
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    reason = f"does not match the schema: {errors[0]}{more}"
    return CheckResult("fail", _with_note(reason, found.note), grader, details)


# regex ----------------------------------------------------------------------------------------


def _regex(check: RegexCheck, output: str, _sandbox: Sandbox | None) -> CheckResult:
    grader = grader_name(check.kind)
    flags = re.IGNORECASE if check.ignore_case else 0
    match = re.search(check.pattern, output, flags)
    if match is None:
        outcome: ResultOutcome = "fail" if check.must_match else "pass"
        reason = "the pattern is not found" + ("" if check.must_match else ", as required")
        return CheckResult(outcome, reason, grader, {"match": None})
    found = f"the pattern is found at character {match.start()}: {_shown(match.group(0))}"
    details = {"match": [match.start(), match.end()]}
    if check.must_match:
        return CheckResult("pass", found, grader, details)
    return CheckResult("fail", found + ", but must not be", grader, details)


# numeric --------------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:[eE][-+]?\d+)?(?!\.\d)"
)
"""A number in prose: optional sign (`−` too), comma thousands separators, decimals, an
exponent. Not one glued to a word or a dot (`v2`, `1.2.3`); in a date `2026-03-15` the
hyphens are not signs. A decimal comma is not understood."""


def last_number(text: str) -> tuple[float, str] | None:
    """The last number in `text` and the text it was read from, or None."""
    matches = list(_NUMBER.finditer(text))
    if not matches:
        return None
    written = matches[-1].group(0)
    return float(written.replace(",", "").replace("\u2212", "-")), written


def _numeric(check: NumericCheck, output: str, _sandbox: Sandbox | None) -> CheckResult:
    grader = grader_name(check.kind)
    note: str | None
    if check.field is None:
        found = last_number(output)
        if found is None:
            return CheckResult("fail", "no number found in the answer", grader)
        value, written = found
        where, note = "", "the last number in the answer"
    else:
        extracted = extract_json(output, "{")
        if extracted is None or not isinstance(extracted.value, dict):
            reason = f"no JSON object found in the answer (the check reads field '{check.field}')"
            return CheckResult("fail", reason, grader)
        note = extracted.note
        where = f"field '{check.field}': "
        if check.field not in extracted.value:
            return CheckResult("fail", _with_note(f"{where}missing", note), grader)
        raw = extracted.value[check.field]
        if not _is_number(raw):
            reason = f"{where}expected a number, got {_json_type(raw)} {_shown(raw)}"
            return CheckResult("fail", _with_note(reason, note), grader)
        value, written = float(raw), _number(raw)
    allowed = check.tolerance * abs(check.expected) if check.relative else check.tolerance
    margin = (
        f"within {_number(check.tolerance * 100)}% (± {_number(allowed)})"
        if check.relative
        else f"± {_number(allowed)}"
    )
    off = abs(value - check.expected)
    details = {"value": value, "expected": check.expected, "allowed": allowed, "off_by": off}
    reason = f"{where}got {written}, expected {_number(check.expected)} {margin}"
    # A hair of slack so that 0.1 + 0.2 against 0.3 ± 0 is not failed by binary rounding.
    if off <= allowed + 1e-9 * max(1.0, abs(check.expected)):
        return CheckResult("pass", _with_note(reason, note), grader, details)
    reason += f": off by {off:.6g}"
    return CheckResult("fail", _with_note(reason, note), grader, details)


# unit_tests -----------------------------------------------------------------------------------


HIDDEN_MIN_CHARS = 4
"""Shortest argument or expected text a unit-test grade hides; shorter ones (and bare numbers
and booleans) would blank unrelated output and say nothing on their own."""
HIDDEN = "[hidden]"


class Scrubber:
    """Replaces a check's hidden texts in what the answer wrote: every string of at least
    `HIDDEN_MIN_CHARS` characters in the calls' arguments and expected values, and the JSON
    and Python forms of every array and object among them, longest first."""

    def __init__(self, calls: tuple[UnitTestCall, ...]) -> None:
        found: set[str] = set()
        stack: list[Any] = [value for call in calls for value in (*call.args, call.expect)]
        while stack:
            value = stack.pop()
            if isinstance(value, str):  # as written, and as JSON and Python quote it
                found.update((value, json.dumps(value)[1:-1], repr(value)[1:-1]))
                found.add(json.dumps(value, ensure_ascii=False)[1:-1])
            elif isinstance(value, list | tuple | dict):
                found.update((json.dumps(value), json.dumps(value, ensure_ascii=False)))
                found.add(repr(value))
                stack.extend(value.values() if isinstance(value, dict) else value)
        self.texts = sorted((t for t in found if len(t) >= HIDDEN_MIN_CHARS), key=len)[::-1]

    def __call__(self, text: str) -> str:
        for hidden in self.texts:
            text = text.replace(hidden, HIDDEN)
        return text


def _call_failure(call: UnitTestCall, run: CallRun, scrub: Scrubber) -> str | None:
    """Why one call's test failed (never quoting its arguments or expected value), or None
    when it passed."""
    if run.status == "returned":
        value = run.value
        if call.compare == "truthy":
            if bool(value) == call.expect:
                return None
            return f"returned {_cut_text(scrub(_json_text(value)))}, not the expected truth value"
        if call.compare == "by_value" and json_equal(call.expect, value):
            return None
        if call.compare == "exact" and same_json(call.expect, value):
            return None
        if json_equal(call.expect, value):
            return "returned the expected value as another type (types are compared exactly)"
        return f"returned {_cut_text(scrub(_json_text(value)))}, not the expected value"
    if run.status == "raised":
        return f"raised {_cut_text(scrub(run.error))}"
    if run.status == "not_json":
        return f"returned something that is not plain JSON data ({_cut_text(scrub(run.error))})"
    if run.status == "no_reply":
        return f"the process ended during the call (exit code {run.exit_code})"
    return f"its reply could not be read ({_cut_text(scrub(run.error))})"


def _run_ending(check: UnitTestsCheck, run: CallRun, number: int, scrub: Scrubber) -> str:
    """The reason of a call that `ENDS_THE_RUN` (the whole check fails)."""
    if run.status == "timed_out":
        return f"timed out after {check.timeout_seconds:g}s"
    if run.status == "over_cap":
        return (
            f"the answer wrote more than {OUTPUT_CAP_BYTES // 1024**2} MiB to the grader during "
            f"test {number}; its jail was killed"
        )
    if run.status == "load_error":
        return f"the code does not load: {_cut_text(scrub(run.error))}"
    if run.status == "missing_entrypoint":
        return f"the code does not define '{check.entrypoint}'"
    return f"the code ended its process while loading (exit code {run.exit_code})"


def _unit_tests(check: UnitTestsCheck, output: str, sandbox: Sandbox | None) -> CheckResult:
    grader = grader_name(check.kind)
    code = extract_code(output)
    calls = tuple(SandboxCall(call.via, call.args) for call in check.calls)
    job = SandboxJob(code.value, check.entrypoint, calls, check.timeout_seconds)
    try:
        run = (sandbox or JailedSandbox()).run(job)
    except JailUnavailable as exc:
        # Never run unjailed instead: a person decides (see grading/sandbox.py).
        reason = f"not graded: the unit-test jail is unavailable: {exc}"
        return CheckResult("inconclusive", reason, grader, {"note": code.note, "isolation": None})
    scrub = Scrubber(check.calls)
    failures: dict[int, str | None] = {
        number: _call_failure(call, result, scrub)
        for number, (call, result) in enumerate(zip(check.calls, run.calls, strict=False), 1)
        if result.status not in ENDS_THE_RUN
    }
    printed = scrub("".join(result.printed for result in run.calls))
    details: dict[str, Any] = {
        "note": code.note,
        "isolation": run.isolation,
        "tests": [
            {"test": t, "passed": failures[t] is None if t in failures else None}
            for t in range(1, len(check.calls) + 1)
        ],
        "printed_chars": sum(result.printed_chars for result in run.calls),
        "printed": printed[:PRINTED_KEPT_CHARS],
    }
    if run.calls and run.calls[-1].status in ENDS_THE_RUN:
        number = len(run.calls)
        if run.calls[-1].status == "timed_out":
            details["stuck_in_test"] = number
        reason = _run_ending(check, run.calls[-1], number, scrub)
        return CheckResult("fail", _with_note(reason, code.note), grader, details)
    passed = sum(failure is None for failure in failures.values())
    total = len(check.calls)
    reason = f"{passed} of {total} tests passed"
    problems = [
        f"test {number} failed: {failure}"
        for number, failure in failures.items()
        if failure is not None
    ]
    if len(run.calls) < total:  # a sandbox that stopped without saying why
        problems.append(f"tests {len(run.calls) + 1} to {total} were not run")
    if problems:
        reason += "; " + "; ".join(problems)
    result: ResultOutcome = "pass" if passed == total else "partial" if passed else "fail"
    return CheckResult(result, _with_note(reason, code.note), grader, details)


_RUNNERS: dict[type, Callable[[Any, str, Sandbox | None], CheckResult]] = {
    ExactFieldsCheck: _exact_fields,
    JsonSchemaCheck: _json_schema,
    RegexCheck: _regex,
    NumericCheck: _numeric,
    UnitTestsCheck: _unit_tests,
}
