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
  does not load, lacks the entrypoint, times out, or ends the test process early (a run that
  did not finish says nothing reliable about the tests it did not reach).
- `json_schema`, `regex` and `numeric` are all or nothing: a schema is a contract, a pattern
  matches or not, and a tolerance already says how close is close enough.

JSON Schema. The `jsonschema` package is not a dependency of this project, so schemas are
checked by a small validator here (`schema_errors`) covering the 2020-12 keywords in
`SCHEMA_KEYWORDS`. Annotations (`title`, `description`, `format`, ...) are ignored, as 2020-12
does by default. A schema using an assertion keyword outside the subset (`if`, `contains`,
...) is reported `inconclusive` instead of being half-checked into a false pass. `pattern`
uses Python's `re.search`, which agrees with ECMA-262 on the usual patterns.

Unit tests run the answer's code in a child process (`sys.executable -I -B`, in a fresh
temporary directory, with an empty environment, so no API key is visible) under the check's
timeout. Each test statement runs on its own against the loaded code and is counted
separately. The child has no network: when `unshare --net` works on this machine it runs in a
network namespace of its own (no interface but a down loopback), and in any case an audit hook
installed before the answer is loaded refuses every socket operation, process creation,
`ctypes` library loading, signals to other processes, and writes outside the temporary
directory. An audit hook cannot be removed once installed and fires inside the C
implementations too, so `import _socket` does not get round it, unlike patching
`socket.socket.connect`. These are guards against mistakes and casual misbehaviour, not a jail
for code written to escape (we run as root); the namespace is the hard barrier for the network.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from bench_pipeline.grading.outcomes import CheckResult
from bench_pipeline.taskbank.models import (
    ExactFieldsCheck,
    JsonSchemaCheck,
    JudgeCheck,
    NumericCheck,
    RegexCheck,
    UnitTestsCheck,
)

GRADER_VERSION = 1
"""Bumped whenever a change here could change a result; recorded in every `grader` name."""

ScriptedCheck = ExactFieldsCheck | JsonSchemaCheck | RegexCheck | NumericCheck | UnitTestsCheck

VALUE_CHARS = 80
"""Longest quoted value in a reason before it is cut with `…`."""


def grader_name(kind: str) -> str:
    """`script:<kind>@<version>`, e.g. `script:unit_tests@1`."""
    return f"script:{kind}@{GRADER_VERSION}"


def run_check(check: ScriptedCheck | JudgeCheck, output: str) -> CheckResult:
    """Grade `output` with a tier-1 `check` (see the module docstring for the rules).

    Raises `TypeError` for a `judge` check (tier 2) or anything that is not a check.
    """
    if isinstance(check, JudgeCheck):
        raise TypeError("a judge check is tier 2: send it to the judges, not run_check")
    runner = _RUNNERS.get(type(check))
    if runner is None:
        raise TypeError(f"not a scripted check: {type(check).__name__}")
    return runner(check, output)


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


def _shown(value: Any) -> str:
    """A JSON value as a reason quotes it, cut at `VALUE_CHARS`."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


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


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if _is_number(value):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


# exact_fields ---------------------------------------------------------------------------------


def _exact_fields(check: ExactFieldsCheck, output: str) -> CheckResult:
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
    outcome = "fail" if equal == 0 else "partial"
    reason = f"{equal} of {total} fields match; " + "; ".join(problems)
    return CheckResult(outcome, _with_note(reason, found.note), grader, details)


# json_schema ----------------------------------------------------------------------------------

SCHEMA_KEYWORDS = frozenset(
    {
        "type", "enum", "const",
        "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "pattern",
        "items", "prefixItems", "minItems", "maxItems", "uniqueItems",
        "properties", "patternProperties", "additionalProperties", "required",
        "minProperties", "maxProperties",
        "allOf", "anyOf", "oneOf", "not", "$ref", "$defs", "definitions",
    }
)  # fmt: skip
"""The assertion keywords (and `$defs` for `$ref` targets) `schema_errors` checks."""

UNSUPPORTED_KEYWORDS = frozenset(
    {
        "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
        "contains", "minContains", "maxContains", "propertyNames", "additionalItems",
        "unevaluatedItems", "unevaluatedProperties",
        "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$anchor",
    }
)  # fmt: skip
"""Assertion keywords of JSON Schema that `schema_errors` does not implement: a schema using
one is not graded. Any other unknown keyword is an annotation and is ignored."""

_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")
_SUBSCHEMAS = ("items", "additionalProperties", "not")


def _subschemas(schema: dict[str, Any]) -> list[Any]:
    found = [schema[k] for k in _SUBSCHEMAS if k in schema]
    for key in _SUBSCHEMA_MAPS:
        found.extend(schema.get(key, {}).values())
    for key in _SUBSCHEMA_LISTS:
        found.extend(schema.get(key, []))
    return found


def unsupported_keywords(schema: Any) -> list[str]:
    """The keywords of `schema` (anywhere in it) this validator does not implement, sorted."""
    if not isinstance(schema, dict):
        return []
    found = {k for k in schema if k in UNSUPPORTED_KEYWORDS}
    if isinstance(schema.get("items"), list):
        found.add("items (as an array: use prefixItems)")
    for sub in _subschemas(schema):
        if not (isinstance(schema.get("items"), list) and sub is schema["items"]):
            found.update(unsupported_keywords(sub))
    return sorted(found)


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _has_type(value: Any, name: str) -> bool:
    if name == "integer":
        return _is_number(value) and float(value).is_integer()
    return _json_type(value) == name


def _multiple_of(value: float, divisor: float) -> bool:
    # Fractions of the shortest decimal text: 0.3 is a multiple of 0.1, as a reader expects.
    return Fraction(repr(value)) % Fraction(repr(divisor)) == 0


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _resolve(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"only references inside the schema are supported, not {ref!r}")
    target = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        target = target[int(part)] if isinstance(target, list) else target[part]
    return target


def schema_errors(instance: Any, schema: Any) -> list[str]:
    """Every way `instance` breaks `schema` (the subset in `SCHEMA_KEYWORDS`), as messages
    prefixed with a path (`$` is the root, `$[0].date` a field of the first item), in
    keyword order. Empty when it is valid."""
    errors: list[str] = []
    _validate(instance, schema, "$", schema, errors)
    return errors


def _validate(value: Any, schema: Any, path: str, root: Any, errors: list[str]) -> None:
    if schema is True:
        return
    if schema is False:
        errors.append(f"{path}: no value is allowed here")
        return
    if "$ref" in schema:
        _validate(value, _resolve(schema["$ref"], root), path, root, errors)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_has_type(value, name) for name in names):
            wanted = " or ".join(names)
            errors.append(f"{path}: expected {wanted}, got {_json_type(value)} {_shown(value)}")
            return  # the other keywords would only restate the wrong type
    if "enum" in schema and not any(json_equal(value, item) for item in schema["enum"]):
        errors.append(f"{path}: {_shown(value)} is not one of {_shown(schema['enum'])}")
    if "const" in schema and not json_equal(value, schema["const"]):
        errors.append(f"{path}: expected {_shown(schema['const'])}, got {_shown(value)}")
    if _is_number(value):
        _validate_number(value, schema, path, errors)
    elif isinstance(value, str):
        _validate_string(value, schema, path, errors)
    elif isinstance(value, list):
        _validate_array(value, schema, path, root, errors)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, root, errors)
    _validate_combinators(value, schema, path, root, errors)


def _validate_number(value: float, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    shown = _number(value)
    bounds: list[tuple[str, Callable[[float, float], bool], str]] = [
        ("minimum", lambda v, b: v >= b, "less than the minimum"),
        ("exclusiveMinimum", lambda v, b: v > b, "not greater than"),
        ("maximum", lambda v, b: v <= b, "greater than the maximum"),
        ("exclusiveMaximum", lambda v, b: v < b, "not less than"),
    ]
    for keyword, holds, words in bounds:
        if keyword in schema and not holds(value, schema[keyword]):
            errors.append(f"{path}: {shown} is {words} {_number(schema[keyword])}")
    if "multipleOf" in schema and not _multiple_of(value, schema["multipleOf"]):
        errors.append(f"{path}: {shown} is not a multiple of {_number(schema['multipleOf'])}")


def _validate_string(value: str, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    length = len(value)
    if "minLength" in schema and length < schema["minLength"]:
        errors.append(f"{path}: {_shown(value)} has {_count(length, 'character')}; the minimum "
                      f"is {schema['minLength']}")  # fmt: skip
    if "maxLength" in schema and length > schema["maxLength"]:
        errors.append(f"{path}: {_shown(value)} has {_count(length, 'character')}; the maximum "
                      f"is {schema['maxLength']}")  # fmt: skip
    if "pattern" in schema and not _compiled(schema["pattern"]).search(value):
        errors.append(f"{path}: {_shown(value)} does not match the pattern {schema['pattern']}")


def _validate_array(
    value: list[Any], schema: dict[str, Any], path: str, root: Any, errors: list[str]
) -> None:
    count = len(value)
    if "minItems" in schema and count < schema["minItems"]:
        errors.append(f"{path}: {_count(count, 'item')}; the minimum is {schema['minItems']}")
    if "maxItems" in schema and count > schema["maxItems"]:
        errors.append(f"{path}: {_count(count, 'item')}; the maximum is {schema['maxItems']}")
    if schema.get("uniqueItems"):
        for i in range(count):
            twin = next((j for j in range(i) if json_equal(value[i], value[j])), None)
            if twin is not None:
                errors.append(f"{path}: items {twin} and {i} are equal")
                break
    prefix = schema.get("prefixItems", [])
    for index, item in enumerate(value):
        item_path = _child_path(path, index)
        if index < len(prefix):
            _validate(item, prefix[index], item_path, root, errors)
        elif "items" in schema:
            _validate(item, schema["items"], item_path, root, errors)


def _validate_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, root: Any, errors: list[str]
) -> None:
    count = len(value)
    if "minProperties" in schema and count < schema["minProperties"]:
        errors.append(f"{path}: {_count(count, 'field')}; the minimum is {schema['minProperties']}")
    if "maxProperties" in schema and count > schema["maxProperties"]:
        errors.append(f"{path}: {_count(count, 'field')}; the maximum is {schema['maxProperties']}")
    errors.extend(
        f"{path}: required field {_shown(name)} is missing"
        for name in schema.get("required", [])
        if name not in value
    )
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    for key, item in value.items():
        item_path = _child_path(path, key)
        matched = key in properties
        if matched:
            _validate(item, properties[key], item_path, root, errors)
        for pattern, sub in patterns.items():
            if _compiled(pattern).search(key):
                matched = True
                _validate(item, sub, item_path, root, errors)
        if not matched and "additionalProperties" in schema:
            extra = schema["additionalProperties"]
            if extra is False:
                errors.append(f"{path}: field {_shown(key)} is not allowed")
            else:
                _validate(item, extra, item_path, root, errors)


def _validate_combinators(
    value: Any, schema: dict[str, Any], path: str, root: Any, errors: list[str]
) -> None:
    for sub in schema.get("allOf", []):
        _validate(value, sub, path, root, errors)
    if "anyOf" in schema:
        options = schema["anyOf"]
        if not any(_valid(value, sub, root) for sub in options):
            errors.append(f"{path}: matches none of the {len(options)} alternatives (anyOf)")
    if "oneOf" in schema:
        options = schema["oneOf"]
        matching = sum(_valid(value, sub, root) for sub in options)
        if matching != 1:
            errors.append(
                f"{path}: matches {matching} of the {len(options)} alternatives "
                "(oneOf needs exactly one)"
            )
    if "not" in schema and _valid(value, schema["not"], root):
        errors.append(f"{path}: matches the schema under 'not'")


def _valid(value: Any, schema: Any, root: Any) -> bool:
    errors: list[str] = []
    _validate(value, schema, "$", root, errors)
    return not errors


def _json_schema(check: JsonSchemaCheck, output: str) -> CheckResult:
    grader = grader_name(check.kind)
    unsupported = unsupported_keywords(check.json_schema)
    if unsupported:
        reason = "not graded: the schema uses keywords this validator does not implement: "
        return CheckResult(
            "inconclusive", reason + ", ".join(unsupported), grader, {"unsupported": unsupported}
        )
    found = extract_json(output)
    if found is None:
        return CheckResult("fail", "no JSON found in the answer", grader)
    errors = schema_errors(found.value, check.json_schema)
    details = {"errors": errors, "note": found.note}
    if not errors:
        return CheckResult(
            "pass", _with_note("valid against the schema", found.note), grader, details
        )
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    reason = f"does not match the schema: {errors[0]}{more}"
    return CheckResult("fail", _with_note(reason, found.note), grader, details)


# regex ----------------------------------------------------------------------------------------


def _regex(check: RegexCheck, output: str) -> CheckResult:
    grader = grader_name(check.kind)
    flags = re.IGNORECASE if check.ignore_case else 0
    match = re.search(check.pattern, output, flags)
    if match is None:
        outcome = "fail" if check.must_match else "pass"
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


def _numeric(check: NumericCheck, output: str) -> CheckResult:
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

MEMORY_LIMIT_BYTES = 2 * 1024**3
"""Address-space limit of the test process (refuses runaway allocations, not tight use)."""
FILE_SIZE_LIMIT_BYTES = 16 * 1024**2
"""Largest file the test process may write (inside its temporary directory)."""
PRINTED_KEPT_CHARS = 2000
"""How much of what the answer prints is kept in the details; the rest is only counted."""

# Runs in the child. It reads the job from stdin, keeps a private copy of stdout for its
# reports, sends the answer's own output (Python and C level) nowhere, sets limits, installs
# the audit hook, and only then loads the answer and runs each test in its own namespace copy.
_BOOTSTRAP = r"""
import ast, json, os, resource, sys

job = json.loads(sys.stdin.read())
report = os.fdopen(os.dup(1), "w", encoding="utf-8")
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)

class Sink:
    def __init__(self):
        self.count, self.kept = 0, []
    def write(self, text):
        text = str(text)
        if self.count < job["kept"]:
            self.kept.append(text[: job["kept"] - self.count])
        self.count += len(text)
        return len(text)
    def flush(self):
        pass
    def isatty(self):
        return False

printed = Sink()
sys.stdout = sys.stderr = printed
sys.stdin = open(os.devnull)

def emit(**event):
    report.write(json.dumps(event) + "\n")
    report.flush()

for limit, value in ((resource.RLIMIT_AS, job["memory"]), (resource.RLIMIT_FSIZE, job["fsize"]),
                     (resource.RLIMIT_CORE, 0)):
    resource.setrlimit(limit, (value, value))

home = os.path.realpath(os.getcwd())
WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
REFUSED = ("socket.", "subprocess.", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
           "os.forkpty", "os.system", "os.kill", "os.killpg", "signal.pthread_kill", "pty.",
           "ctypes.", "resource.setrlimit", "resource.prlimit", "os.chroot")
PATH_EVENTS = {"os.remove": 0, "os.rmdir": 0, "os.mkdir": 0, "os.rename": (0, 1),
               "os.symlink": (0, 1), "os.link": (0, 1), "os.chmod": 0, "os.chown": 0,
               "os.truncate": 0, "os.utime": 0, "shutil.rmtree": 0, "shutil.copyfile": 1}

def inside(path):
    if isinstance(path, int):
        return True
    path = os.fsdecode(path)
    if path == os.devnull:
        return True
    full = os.path.realpath(os.path.join(home, path))
    return full == home or full.startswith(home + os.sep)

def guard(event, args):
    if event.startswith(REFUSED):
        raise PermissionError(f"not allowed while grading: {event}")
    if event == "open" and args[2] & WRITE and not inside(args[0]):
        raise PermissionError(f"not allowed while grading: writing {args[0]!r}")
    if event in PATH_EVENTS:
        spots = PATH_EVENTS[event]
        for spot in spots if isinstance(spots, tuple) else (spots,):
            if not inside(args[spot]):
                raise PermissionError(f"not allowed while grading: {event} {args[spot]!r}")

sys.addaudithook(guard)
emit(event="ready")

namespace = {"__name__": "__answer__", "__builtins__": __builtins__}
try:
    exec(compile(job["code"], "answer.py", "exec"), namespace)
except BaseException as exc:
    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    emit(event="load_error", error=message)
    os._exit(0)
if job["entrypoint"] not in namespace:
    emit(event="missing_entrypoint")
    os._exit(0)

def left_side(test, scope):
    # For a failed `assert a <op> b`, what `a` was: the value a reader wants first.
    try:
        statement = ast.parse(test).body[-1]
        if not (isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare)):
            return None
        value = eval(compile(ast.Expression(statement.test.left), "<left side>", "eval"), scope)
        return repr(value)
    except BaseException:
        return None

for number, test in enumerate(job["tests"], 1):
    emit(event="start", test=number)
    scope = dict(namespace)
    try:
        exec(compile(test, f"<test {number}>", "exec"), scope)
    except AssertionError as exc:
        emit(event="test", test=number, passed=False, error="AssertionError",
             message=str(exc), left=left_side(test, scope))
    except BaseException as exc:
        emit(event="test", test=number, passed=False, error=type(exc).__name__,
             message=str(exc), left=None)
    else:
        emit(event="test", test=number, passed=True)
emit(event="done", printed=printed.count, output="".join(printed.kept))
os._exit(0)  # threads or atexit handlers the answer left behind must not keep it running
"""


@functools.cache
def network_isolation() -> tuple[str, ...]:
    """The command prefix that runs a program without network (`unshare --net --`), or `()`
    when this machine does not allow it (then only the in-process guard applies)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    try:
        probe = subprocess.run([unshare, "--net", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return (unshare, "--net", "--") if probe.returncode == 0 else ()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass(frozen=True)
class _Run:
    events: list[dict[str, Any]]
    returncode: int | None
    timed_out: bool
    stderr: str


def _run_child(check: UnitTestsCheck, code: str) -> _Run:
    job = {
        "code": code,
        "entrypoint": check.entrypoint,
        "tests": list(check.tests),
        "kept": PRINTED_KEPT_CHARS,
        "memory": MEMORY_LIMIT_BYTES,
        "fsize": FILE_SIZE_LIMIT_BYTES,
    }
    command = [*network_isolation(), sys.executable, "-I", "-B", "-c", _BOOTSTRAP]
    with tempfile.TemporaryDirectory(prefix="bench-unit-tests-") as home:
        environment = {"PATH": "/usr/bin:/bin", "HOME": home, "LC_ALL": "C.UTF-8"}
        process = subprocess.Popen(
            command,
            cwd=home,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a kill reaches everything
        )
        timed_out = False
        try:
            out, err = process.communicate(json.dumps(job).encode(), timeout=check.timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            out, err = process.communicate()
        finally:
            _kill_group(process)  # nothing it started may outlive the grading
    events = []
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a torn last line after a kill
        if isinstance(event, dict) and "event" in event:
            events.append(event)
    return _Run(events, process.returncode, timed_out, err.decode("utf-8", "replace"))


def _test_failure(test: str, event: dict[str, Any]) -> str:
    text = f"test {event['test']} failed: `{test}`"
    if event["error"] != "AssertionError":
        return (
            text
            + f" raised {event['error']}"
            + (f": {event['message']}" if event["message"] else "")
        )
    if event["message"]:
        return text + f": {event['message']}"
    if event["left"] is not None:
        left = event["left"]
        return text + f" (left side was {left if len(left) <= VALUE_CHARS else left[:79] + '…'})"
    return text


def _unit_tests(check: UnitTestsCheck, output: str) -> CheckResult:
    grader = grader_name(check.kind)
    code = extract_code(output)
    run = _run_child(check, code.value)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for event in run.events:
        by_kind.setdefault(event["event"], []).append(event)
    results = {e["test"]: e for e in by_kind.get("test", [])}
    details: dict[str, Any] = {
        "note": code.note,
        "network": "namespace and guard" if network_isolation() else "guard",
        "tests": [
            {"test": t, "passed": results[t]["passed"] if t in results else None}
            for t in range(1, len(check.tests) + 1)
        ],
    }
    if "ready" not in by_kind and not run.timed_out:
        # The bootstrap itself failed: a fault of the grader, never the answer's.
        raise RuntimeError(f"the unit-test sandbox did not start: {run.stderr.strip()[-2000:]}")
    if run.timed_out:
        started = by_kind.get("start", [])
        details["stuck_in_test"] = started[-1]["test"] if started else None
        reason = f"timed out after {check.timeout_seconds:g}s"
        return CheckResult("fail", _with_note(reason, code.note), grader, details)
    if "load_error" in by_kind:
        reason = f"the code does not load: {by_kind['load_error'][0]['error']}"
        return CheckResult("fail", _with_note(reason, code.note), grader, details)
    if "missing_entrypoint" in by_kind:
        reason = f"the code does not define '{check.entrypoint}'"
        return CheckResult("fail", _with_note(reason, code.note), grader, details)
    if "done" not in by_kind:
        started = by_kind.get("start", [])
        during = f" during test {started[-1]['test']}" if started else ""
        reason = f"the test process ended early (exit code {run.returncode}){during}"
        return CheckResult("fail", _with_note(reason, code.note), grader, details)
    done = by_kind["done"][0]
    details.update(printed_chars=done["printed"], printed=done["output"])
    passed = sum(e["passed"] for e in results.values())
    total = len(check.tests)
    reason = f"{passed} of {total} tests passed"
    failures = [
        _test_failure(check.tests[number - 1], event)
        for number, event in sorted(results.items())
        if not event["passed"]
    ]
    if failures:
        reason += "; " + "; ".join(failures)
    outcome = "pass" if passed == total else "partial" if passed else "fail"
    return CheckResult(outcome, _with_note(reason, code.note), grader, details)


_RUNNERS: dict[type, Callable[[Any, str], CheckResult]] = {
    ExactFieldsCheck: _exact_fields,
    JsonSchemaCheck: _json_schema,
    RegexCheck: _regex,
    NumericCheck: _numeric,
    UnitTestsCheck: _unit_tests,
}
