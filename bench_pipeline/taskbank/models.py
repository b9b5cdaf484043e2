"""Typed records of the task bank: cases, their rubrics, inputs and scripted checks.

A `Case` is one unit a setup is run against. Its `version` is a content hash of exactly what
decides the task and its grading (brief, context, rubric, inputs and their checks), so
editing any of those makes a new version and results stay attached to the version they ran
against; editing metadata (title, category, flags) keeps the version.

Three suites share one record:

- `pm`: a written or prototype PM task. Rubric = the seven standard criteria (below) + the
  case's own criteria; named critical failures; prototype cases add browser checks.
- `usecase`: a use case for submitted agent runs: a prompt (`brief`) and success criteria.
- `navigator`: a task in one of eight categories with several inputs, each graded by one
  check: a scripted tier-1 check, or a tier-2 judge rubric.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictFloat,
    StringConstraints,
    computed_field,
    field_validator,
    model_serializer,
    model_validator,
)

from bench_pipeline.taskbank.errors import rule_error

Suite = Literal["pm", "usecase", "navigator"]
SUITES: tuple[str, ...] = ("pm", "usecase", "navigator")

Provenance = Literal["synthetic", "anonymised", "public"]

NAVIGATOR_CATEGORIES: tuple[str, ...] = (
    "coding",
    "data_analysis",
    "extraction",
    "reasoning",
    "research_agentic",
    "summarization",
    "support",
    "writing",
)

NOISY_REPEATS = 3
"""Runs per setup of a case marked `noisy` (others run once)."""

VERSION_HEX = 16
"""Hex digits of the sha256 kept as a case version."""

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=80)]
"""Identifiers: lowercase letters, digits, `.`, `-` and `_`."""
Text = Annotated[str, StringConstraints(min_length=1)]


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("is the number 1, not a boolean")
    return value


FileVersion1 = Annotated[Literal[1], BeforeValidator(_not_a_boolean)]
"""A file's `schema_version` 1: the number (`true` equals 1 in Python, and is refused)."""


def _lf(value: str) -> str:
    r"""Text as written, with Windows line ends made `\\n` (a checkout on another system must
    not change a version)."""
    return value.replace("\r\n", "\n").replace("\r", "\n")


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: one text per value, whatever the key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any, digits: int = VERSION_HEX) -> str:
    """The first `digits` hex digits of the sha256 of `canonical_json(value)`."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:digits]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Criterion(_Record):
    """One atomic question a grader answers with pass, partial or fail."""

    id: Slug
    question: Text
    """The question, answerable from the brief, context and output alone."""
    pass_when: str | None = None
    """What a pass looks like (optional; the question may be enough)."""
    partial_when: str | None = None
    fail_when: str | None = None


class CriticalFailure(_Record):
    """A failure the case is built to catch; committing it caps a PM run's score at 40."""

    id: Slug
    description: Text


class BrowserCheck(_Record):
    """A question about a prototype, answered by looking at it in a real browser.

    The optional fields make the question decidable from the page itself, so the browser
    grader answers it; without them a person does. On a freshly loaded page: `click` (when
    set) is clicked first; then the first element matching `selector` must be visible, and
    `expect_text` must be visible in it (or anywhere on the page when there is no selector).
    Selectors are Playwright selectors: CSS, or e.g. `text=/98 of 120/`. Unset fields are left
    out of the check's JSON, so a check without them keeps its case's version.
    """

    id: Slug
    question: Text
    selector: Text | None = None
    """An element that must exist and be visible."""
    click: Text | None = None
    """An element to click before looking."""
    expect_text: Text | None = None
    """Text that must then be visible (whitespace runs compare as one space)."""

    @model_validator(mode="after")
    def _click_needs_something_to_check(self) -> BrowserCheck:
        if self.click is not None and self.selector is None and self.expect_text is None:
            raise ValueError("`click` needs a `selector` or `expect_text` to check afterwards")
        return self

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None or k in ("id", "question")}

    @property
    def decidable(self) -> bool:
        """Whether the page alone can answer it (a selector or an expected text is set)."""
        return self.selector is not None or self.expect_text is not None


STANDARD_CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        id="uses_evidence",
        question="Does the output use the supplied evidence correctly, without misreading, "
        "ignoring or stretching what the brief and context say?",
        pass_when="Every use of the evidence is accurate and the material evidence is used.",
        fail_when="The output misstates the evidence or ignores the part that matters.",
    ),
    Criterion(
        id="addresses_decision",
        question="Does the output address the decision actually at stake, rather than a "
        "neighbouring or easier question?",
        pass_when="The decision is named and the output helps make or communicate it.",
        fail_when="The output answers a different question.",
    ),
    Criterion(
        id="respects_constraints",
        question="Does the output respect every explicit constraint of the brief (scope, "
        "audience, length, format, guardrails)?",
        fail_when="An explicit constraint is broken.",
    ),
    Criterion(
        id="identifies_uncertainty",
        question="Does the output name the uncertainty that matters for the decision and what "
        "would reduce it?",
        fail_when="The output presents an open question as settled.",
    ),
    Criterion(
        id="avoids_unsupported_claims",
        question="Does the output avoid claims that neither the brief nor the context supports?",
        fail_when="A material claim has no support in the material given.",
    ),
    Criterion(
        id="produces_deliverable",
        question="Does the output deliver what the brief asked for, in the form it asked for?",
        fail_when="The deliverable is missing or in the wrong form.",
    ),
    Criterion(
        id="no_critical_failures",
        question="Does the output avoid every critical failure named for this case?",
        fail_when="Any named critical failure is committed.",
    ),
)
"""The seven criteria every PM case is graded on, before its own (our wording)."""

STANDARD_CRITERION_IDS = frozenset(c.id for c in STANDARD_CRITERIA)
CRITICAL_FAILURES_CRITERION = "no_critical_failures"


# Checks: one per navigator input. Tier 1 is scripted; tier 2 is a judge.


class ExactFieldsCheck(_Record):
    """The answer is a JSON object whose named top-level fields equal these values (other
    fields are ignored unless `allow_other_fields` is false)."""

    kind: Literal["exact_fields"]
    expected: dict[str, JsonValue] = Field(min_length=1)
    ignore_case: StrictBool = False
    """Compare string values case-insensitively."""
    allow_other_fields: StrictBool = True


class JsonSchemaCheck(_Record):
    """The answer is JSON that validates against `json_schema` (JSON Schema 2020-12)."""

    kind: Literal["json_schema"]
    json_schema: dict[str, JsonValue] = Field(min_length=1)

    @field_validator("json_schema")
    @classmethod
    def _has_type(cls, schema: dict[str, JsonValue]) -> dict[str, JsonValue]:
        if not any(key in schema for key in ("type", "$ref", "anyOf", "oneOf", "allOf")):
            raise ValueError("a schema needs a `type` (or `$ref`, `anyOf`, `oneOf`, `allOf`)")
        return schema


class RegexCheck(_Record):
    """`re.search(pattern, answer)` finds a match (or, with `must_match = false`, none)."""

    kind: Literal["regex"]
    pattern: Text
    must_match: StrictBool = True
    ignore_case: StrictBool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return pattern


class NumericCheck(_Record):
    """A number in the answer is within `tolerance` of `expected`: the JSON field `field` when
    set, else the last number in the text. `relative` makes the tolerance a fraction of
    `expected`."""

    kind: Literal["numeric"]
    expected: StrictFloat = Field(allow_inf_nan=False)
    tolerance: StrictFloat = Field(ge=0, allow_inf_nan=False)
    relative: StrictBool = False
    field: str | None = None


CALL_NESTING = 100
"""Deepest nesting of lists and objects in a call's arguments, expected value or result."""


def json_depth(value: Any) -> int:
    """How deeply `value` nests lists and objects (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, list | tuple):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
    return deepest


class UnitTestCall(_Record):
    """One hidden test of a `unit_tests` check: a call the jail makes, and what it must give.

    Only `via` and `args` go into the jail; `expect` stays with the grader, which compares.
    """

    args: tuple[JsonValue, ...] = ()
    """The positional arguments, as JSON values (an array arrives as a list)."""
    via: Literal["call", "value", "fullmatch"] = "call"
    """`call`: `entrypoint(*args)`. `value`: the entrypoint itself (a constant; no args).
    `fullmatch`: whether `re.fullmatch(entrypoint, args[0])` matches, as a boolean (the
    entrypoint is a pattern; one string argument)."""
    expect: JsonValue = None
    """The value the call must give. TOML has no null: write `expect_null = true` instead."""
    expect_null: StrictBool = False
    compare: Literal["exact", "by_value", "truthy"] = "exact"
    """`exact`: equal JSON with equal types (1 is neither 1.0 nor true). `by_value`: numbers
    by value (1 equals 1.0; booleans still apart). `truthy`: `expect` is a boolean and the
    result's truth value (Python's: null, false, 0, "", [] and {} are false) must equal it."""

    @model_validator(mode="after")
    def _consistent(self) -> UnitTestCall:
        given = "expect" in self.model_fields_set
        if self.expect_null and given:
            raise rule_error("expect", "give `expect` or `expect_null = true`, not both")
        if not self.expect_null and not given:
            raise rule_error("expect", "a call needs `expect` (or `expect_null = true`)")
        if self.via == "value" and self.args:
            raise rule_error("args", '`via = "value"` reads a constant: no arguments')
        if self.via == "fullmatch" and not (len(self.args) == 1 and isinstance(self.args[0], str)):
            raise rule_error("args", '`via = "fullmatch"` needs exactly one string argument')
        if self.compare == "truthy" and not isinstance(self.expect, bool):
            raise rule_error("expect", '`compare = "truthy"` needs a boolean `expect`')
        for name, value in (("args", list(self.args)), ("expect", self.expect)):
            if json_depth(value) > CALL_NESTING:
                raise rule_error(name, f"nested deeper than {CALL_NESTING} levels")
        return self


class UnitTestsCheck(_Record):
    """Hidden unit tests run against the answer's code (a descriptor: the grader runs them in a
    jail). Each test is one call of the answer's `entrypoint` with JSON arguments; the jail
    returns what the call gave as JSON and the grader compares it with the expected value,
    which never enters the jail."""

    kind: Literal["unit_tests"]
    language: Literal["python"] = "python"
    entrypoint: Text
    """The name the answer must define (function, class or constant)."""
    calls: tuple[UnitTestCall, ...] = Field(min_length=1)
    timeout_seconds: StrictFloat = Field(default=10.0, gt=0, le=300)
    """The time limit of all the calls together (each in a fresh jail, loading included)."""

    @field_validator("entrypoint")
    @classmethod
    def _identifier(cls, entrypoint: str) -> str:
        if not entrypoint.isidentifier():
            raise ValueError("the entrypoint must be a Python name")
        return entrypoint


class JudgeCheck(_Record):
    """Tier 2: blinded judges answer each rubric criterion with pass, partial or fail."""

    kind: Literal["judge"]
    rubric: tuple[Criterion, ...] = Field(min_length=1)


Check = Annotated[
    ExactFieldsCheck | JsonSchemaCheck | RegexCheck | NumericCheck | UnitTestsCheck | JudgeCheck,
    Field(discriminator="kind"),
]
CHECK_KINDS = frozenset({"exact_fields", "json_schema", "regex", "numeric", "unit_tests", "judge"})
UNION_TAGS = {"check": CHECK_KINDS}
"""For `errors.format_loc`: the tags pydantic adds after a `check` field."""


def check_tier(check: Any) -> int:
    """1 for a scripted check, 2 for a judge."""
    return 2 if check.kind == "judge" else 1


class CaseInput(_Record):
    """One input of a navigator task: the data given after the brief, and how its answer is
    graded."""

    id: Slug
    text: Text
    check: Check

    @field_validator("text")
    @classmethod
    def _line_ends(cls, value: str) -> str:
        return _lf(value)


class Prompt(_Record):
    """One text a setup is sent for a case: per input for navigator, else one (`main`)."""

    input_id: str
    text: str


MAIN_INPUT = "main"


def _duplicates(ids: list[str]) -> list[str]:
    return sorted({i for i in ids if ids.count(i) > 1})


class Case(_Record):
    """One case of the task bank (see the module docstring for the three suites)."""

    id: Slug
    """Unique within its suite."""
    suite: Suite
    task: Slug
    """The task this case belongs to (defaults to the case id): scores average cases per task
    first, so a task with more cases does not count for more."""
    title: Text
    category: Slug
    provenance: Provenance
    """`synthetic` (written for the bench), `anonymised` (real work, details changed) or
    `public` (built from public material)."""
    private: StrictBool = False
    """Held out: never published, not even its text (see `public_view`, `private_texts`)."""
    noisy: StrictBool = False
    """Runs `NOISY_REPEATS` times per setup; the spread across repeats is published."""
    core: StrictBool = True
    """PM: a setup is ranked only when it has done every core task."""
    prototype: StrictBool = False
    """PM: the deliverable is one HTML file, checked in a browser (no LLM judge)."""
    measures: Literal["model", "system"] | None = None
    """PM: whether the task mostly measures the raw model, or the whole setup (tools and
    instructions doing real work)."""
    brief: Text
    """What every setup is sent, verbatim (for a use case: its prompt)."""
    context: str = ""
    """Supplied material sent after the brief, verbatim."""
    criteria: tuple[Criterion, ...] = ()
    """PM: the case's own criteria (the standard seven are added, see `rubric`); use case:
    the success criteria. Navigator grades per input instead."""
    critical_failures: tuple[CriticalFailure, ...] = ()
    browser_checks: tuple[BrowserCheck, ...] = ()
    inputs: tuple[CaseInput, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _task_defaults_to_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "task" not in data and "id" in data:
            return {**data, "task": data["id"]}
        return data

    @field_validator("brief", "context")
    @classmethod
    def _line_ends(cls, value: str) -> str:
        return _lf(value)

    @model_validator(mode="after")
    def _suite_rules(self) -> Case:
        for name in ("criteria", "critical_failures", "browser_checks", "inputs"):
            repeated = _duplicates([item.id for item in getattr(self, name)])
            if repeated:
                raise rule_error(name, f"repeated id: {', '.join(repeated)}")
        rules = {"pm": self._pm_rules, "usecase": self._usecase_rules}
        rules.get(self.suite, self._navigator_rules)()
        return self

    def _forbid(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) != type(self).model_fields[name].default:
                raise rule_error(name, f"not used by {self.suite} cases")

    def _pm_rules(self) -> None:
        self._forbid("inputs")
        if not self.criteria:
            raise rule_error("criteria", "a PM case needs at least one criterion of its own")
        clash = sorted(STANDARD_CRITERION_IDS & {c.id for c in self.criteria})
        if clash:
            raise rule_error("criteria", f"{', '.join(clash)}: already a standard criterion")
        if not self.critical_failures:
            raise rule_error("critical_failures", "a PM case names at least one")
        if self.measures is None:
            raise rule_error("measures", "a PM case says whether it measures `model` or `system`")
        if self.prototype and not self.browser_checks:
            raise rule_error("browser_checks", "a prototype case needs at least one")
        if not self.prototype and self.browser_checks:
            raise rule_error("browser_checks", "only prototype cases have browser checks")

    def _usecase_rules(self) -> None:
        self._forbid("inputs", "critical_failures", "browser_checks", "prototype", "measures")
        if not self.criteria:
            raise rule_error("criteria", "a use case needs at least one success criterion")

    def _navigator_rules(self) -> None:
        self._forbid("criteria", "critical_failures", "browser_checks", "prototype", "measures")
        if self.category not in NAVIGATOR_CATEGORIES:
            raise rule_error(
                "category", f"not a navigator category ({', '.join(NAVIGATOR_CATEGORIES)})"
            )
        if not self.inputs:
            raise rule_error("inputs", "a navigator task needs at least one input")

    @property
    def key(self) -> str:
        """`suite/id`: unique across the bank."""
        return f"{self.suite}/{self.id}"

    @property
    def rubric(self) -> tuple[Criterion, ...]:
        """Every criterion the case is graded on: for PM the standard seven, then its own."""
        return STANDARD_CRITERIA + self.criteria if self.suite == "pm" else self.criteria

    @property
    def repeats(self) -> int:
        """Runs per setup: `NOISY_REPEATS` for a noisy case, else 1."""
        return NOISY_REPEATS if self.noisy else 1

    @property
    def measured(self) -> Literal["model", "system"]:
        """What the task's score mostly reflects (seed 000's "Measures the model" / "Measures
        the system"). A PM case says so itself (`measures`); every Navigator task is one model
        call with its data in the prompt, no tools, so it measures the model; a use case is an
        agent at work in its harness, so it measures the system."""
        if self.measures is not None:
            return self.measures
        return "system" if self.suite == "usecase" else "model"

    def versioned_content(self) -> dict[str, Any]:
        """Exactly what `version` hashes: brief, context, the full rubric (standard criteria
        included, critical failures, browser checks) and the inputs with their checks."""

        def dump(items: tuple[BaseModel, ...]) -> list[dict[str, Any]]:
            return [item.model_dump(mode="json") for item in items]

        return {
            "brief": self.brief,
            "context": self.context,
            "rubric": {
                "criteria": dump(self.rubric),
                "critical_failures": dump(self.critical_failures),
                "browser_checks": dump(self.browser_checks),
            },
            "inputs": dump(self.inputs),
        }

    @computed_field  # type: ignore[prop-decorator]
    @property
    def version(self) -> str:
        """16 hex digits of the sha256 over `canonical_json(versioned_content())`."""
        return content_hash(self.versioned_content())

    def prompts(self) -> tuple[Prompt, ...]:
        """The texts a setup is sent: the brief, a blank line and the context (one prompt,
        `main`), or for navigator the brief, a blank line and each input. Verbatim otherwise."""
        if self.suite == "navigator":
            return tuple(Prompt(input_id=i.id, text=_join(self.brief, i.text)) for i in self.inputs)
        return (Prompt(input_id=MAIN_INPUT, text=_join(self.brief, self.context)),)


def _join(first: str, second: str) -> str:
    first, second = first.strip("\n"), second.strip("\n")
    return f"{first}\n\n{second}" if second else first
