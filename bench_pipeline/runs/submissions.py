"""Submitted runs: agent runs of a use case done elsewhere, sent in as one JSON file each.

`Submission` is the published format (`submission_json_schema()`, `write_schema(path)`).
`load_submission(path)` reads one file (`check_submission` one already read) and returns a
`Submission` or a `Rejection` (reason and field): it never raises on malformed input
(unreadable bytes, bad JSON, NaN, duplicate keys, wrong types, missing or unknown fields, a
file over `core.inbox.MAX_INBOX_BYTES`, not a regular file), and it never moves, changes or
deletes the file: a rejection carries the file's path, size and sha256 so it can be traced
and the file kept for review.

Validation is strict (JSON types as the schema says: `"5"` is not an integer) and only about
the shape and internal consistency of the record. What the methodology treats as a hard
flag (cost, autonomy or evidence-hash mismatch, implausible throughput, step-ins above
turns, retries against first try, a look-alike model name, a duplicate) is *not* a rejection:
such a run is accepted and put under review: scoring (scores/usecase.py) computes the flags.
`content_key` is what makes two submissions the same run for the duplicate rule (near copies
are found by scoring, `scores.usecase.duplicates`). A file is taken only from a registered
submitter who signed it (`submitter`, `signature`: `runs.submitters`).

Token counts follow the OpenAI-compatible convention of `providers.base.Usage`: `input_tokens`
includes the cached and cache-write tokens, `output_tokens` includes the reasoning tokens.
A breakdown not reported (`cached_tokens` etc. left out) is priced as 0 of that kind.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from bench_pipeline.core.files import write_text
from bench_pipeline.core.inbox import MAX_INBOX_BYTES, InboxFile, read_inbox_file
from bench_pipeline.core.text import normalise, skeleton
from bench_pipeline.grading.outcomes import Outcome, RunOutcome
from bench_pipeline.providers.base import Usage
from bench_pipeline.runs.submitters import SUBMITTER_FIELD, Submitters, check_signature
from bench_pipeline.taskbank.bank import TaskBank
from bench_pipeline.taskbank.errors import rule_error, validation_problems
from bench_pipeline.taskbank.models import FileVersion1, Slug

SCHEMA_VERSION = 1
MAX_TOKENS = 10**12
"""Any one token count above this is refused as nonsense (it would also overflow storage)."""
COST_PATTERN = r"^[0-9]+(\.[0-9]+)?$"
"""A cost given as a string: a plain non-negative decimal, no exponent or sign."""

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{64}$")]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
RunId = Annotated[str, StringConstraints(pattern=r"^sub-[0-9a-f]{16}$")]
"""A submitted run's id: `sub-` + the first 16 hex digits of its file's SHA-256."""
TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
MAX_COUNT = 1_000_000
"""Any step-in, turn or retry count above this is refused as nonsense (no column holds a
400-digit number, and no run has a million turns)."""
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
ShortText = Annotated[str, StringConstraints(max_length=200)]
"""Text shown in a group's or harness's name on every board: a setting, a version."""
SettingValue = (
    ShortText
    | Annotated[int, Field(ge=-MAX_TOKENS, le=MAX_TOKENS)]
    | Annotated[float, Field(allow_inf_nan=False)]
    | bool
)
EARLIEST_START = datetime(2020, 1, 1, tzinfo=UTC)
"""No run starts before this (the first of 2020, UTC: before any model or agent harness this
benchmark covers). The latest start is the intake's own clock (`check_not_future`)."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class TokenCounts(_Strict):
    """Tokens of one request (or a total over the run's requests)."""

    input_tokens: TokenCount
    """Prompt tokens, cached and cache-write tokens included."""
    output_tokens: TokenCount
    """Completion tokens, reasoning tokens included."""
    cached_tokens: TokenCount | None = None
    """Of `input_tokens`, read from the provider's prompt cache (left out: not reported)."""
    cache_write_tokens: TokenCount | None = None
    """Of `input_tokens`, written to the provider's prompt cache."""
    reasoning_tokens: TokenCount | None = None
    """Of `output_tokens`, spent on reasoning."""

    @model_validator(mode="after")
    def _breakdowns_fit(self) -> TokenCounts:
        if (self.cached_tokens or 0) + (self.cache_write_tokens or 0) > self.input_tokens:
            raise rule_error(
                "cached_tokens",
                "cached + cache-write tokens exceed input_tokens (which must include them)",
            )
        if (self.reasoning_tokens or 0) > self.output_tokens:
            raise rule_error(
                "reasoning_tokens", "exceeds output_tokens (which must include reasoning)"
            )
        return self

    def usage(self, per_request: bool) -> Usage:
        return Usage(
            prompt_tokens=self.input_tokens,
            completion_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens or 0,
            cache_write_tokens=self.cache_write_tokens or 0,
            reasoning_tokens=self.reasoning_tokens or 0,
            per_request=per_request,
        )


class Tokens(_Strict):
    """Per-request counts where known (needed for long-context tiers), else a total; both
    may be given, and then the total must be their sum."""

    model_config = ConfigDict(
        json_schema_extra={"anyOf": [{"required": ["per_request"]}, {"required": ["total"]}]}
    )

    per_request: tuple[TokenCounts, ...] | None = Field(default=None, min_length=1)
    total: TokenCounts | None = None

    @model_validator(mode="after")
    def _some_and_consistent(self) -> Tokens:
        if self.per_request is None and self.total is None:
            raise rule_error("per_request", "give per_request counts, a total, or both")
        if self.per_request is not None and self.total is not None:
            for name in TokenCounts.model_fields:
                values = [getattr(r, name) for r in self.per_request]
                declared = getattr(self.total, name)
                summed = None if any(v is None for v in values) else sum(values)
                if declared is not None and summed is not None and declared != summed:
                    raise rule_error(
                        f"total.{name}", f"is {declared}, the requests sum to {summed}"
                    )
        return self


class ModelUsed(_Strict):
    """The model as the submitter ran it. Runs are grouped by name + settings."""

    name: Name
    """The model's name or API id, e.g. `anthropic/claude-opus-4.6`."""
    settings: dict[Name, SettingValue] = Field(default_factory=dict)
    """Settings that make it a different group, e.g. `{"thinking": "off"}`."""


class HarnessUsed(_Strict):
    """What the model ran in: the agent product or framework, its version, skills, tools."""

    name: Name
    version: ShortText | None = None
    skills: tuple[Name, ...] = ()
    tools: tuple[Name, ...] = ()


class Submission(_Strict):
    """One submitted run: one attempt by one model at one use case."""

    model_config = ConfigDict(title="Submitted use-case run")

    schema_version: FileVersion1
    use_case: Slug
    """The use case's id."""
    use_case_version: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]
    """The version of the use case that was run (shown on its page)."""
    started_at: AwareDatetime = Field(
        json_schema_extra={"formatMinimum": f"{EARLIEST_START:%Y-%m-%dT%H:%M:%SZ}"}
    )
    """When the run started, with its UTC offset; its date picks the price row. Not before
    `EARLIEST_START`, not after the intake's clock (plus `CLOCK_SKEW`)."""
    model: ModelUsed
    harness: HarnessUsed
    tokens: Tokens
    claimed_cost_usd: Annotated[
        Decimal | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "number", "minimum": 0},
                    {"type": "string", "pattern": COST_PATTERN},
                    {"type": "null"},
                ]
            }
        ),
    ] = Field(default=None, ge=0, allow_inf_nan=False)
    """The cost in USD the submitter computed or was billed: a number, or a decimal string
    such as `"0.0312"` to keep every digit."""
    wall_time_seconds: float = Field(gt=0, allow_inf_nan=False)
    step_ins: Count
    """Messages after the first prompt that corrected, clarified, approved or nudged the
    agent, scripted `continue` messages included."""
    turns: Annotated[int, Field(ge=1, le=MAX_COUNT)]
    retries: Count
    first_try: bool
    autonomy: Literal["autonomous", "lightly_guided", "heavily_guided"] | None = None
    """Claimed autonomy (checked against `step_ins` by the intake)."""
    criteria: dict[Slug, Outcome] = Field(
        min_length=1, json_schema_extra={"additionalProperties": False}
    )
    """Outcome per success criterion of the use case, by criterion id."""
    evidence_log: str
    """The run's log as text (transcript, commands, test output)."""
    evidence_sha256: Sha256
    """SHA-256 (hex) of `evidence_log` encoded as UTF-8."""
    output: str
    """The run's output, or a description of it (e.g. the diff or files produced)."""
    reproduces: RunId | None = None
    """The run id of a run this one independently reproduces. It counts for the original
    (+10 trust, Verified) only when by another submitter, with the same model and settings,
    on the same use case version, and successful; otherwise it is shown as a claim that does
    not count, with the reason (`scores.usecase.reproductions`)."""
    rerun_of: RunId | None = None
    """The run id of a run this one repeats on another model: the two form a head-to-head
    pair."""
    submitter: str | None = None
    """The registered submitter's name, exactly as registered. The intake takes a file only
    from a registered submitter who signed it (`runs.submitters`)."""
    signature: Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{64}$")] | None = None
    """HMAC-SHA256 (hex) of the file's canonical bytes under the submitter's secret
    (`runs.submitters.canonical_bytes`; `bench sign FILE --submitter NAME` writes it)."""
    notes: str | None = None

    @field_validator("started_at")
    @classmethod
    def _a_real_start(cls, value: datetime) -> datetime:
        """Not before `EARLIEST_START`, and a moment UTC can hold (`0001-01-01T00:00+14:00`
        is a day before the first date Python has)."""
        if value < EARLIEST_START:
            raise ValueError(f"is before {EARLIEST_START:%Y-%m-%d}, the earliest start taken")
        try:
            value.astimezone(UTC)
        except OverflowError as error:
            raise ValueError("is outside the range of dates") from error
        return value

    @field_validator("claimed_cost_usd", mode="before")
    @classmethod
    def _exact_decimal(cls, value: Any) -> Any:
        """A string keeps every digit (it must be a plain decimal); a JSON number is taken
        at its shortest decimal form (`0.1` is 0.1, not the float's binary expansion)."""
        if isinstance(value, str):
            if not re.fullmatch(COST_PATTERN, value):
                raise ValueError("a cost string is a plain decimal such as 0.0312")
            return Decimal(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return Decimal(str(value))
        return value

    @field_validator("evidence_sha256")
    @classmethod
    def _lowercase(cls, value: str) -> str:
        return value.lower()

    @property
    def outcome(self) -> RunOutcome:
        """`success` only when every criterion passed; `fail` when every one failed; else
        `partial` (real work, not a completed task)."""
        values = set(self.criteria.values())
        if values == {"pass"}:
            return "success"
        if values == {"fail"}:
            return "fail"
        return "partial"

    @property
    def group(self) -> str:
        """Model name plus its settings, e.g. `glm-5 (thinking=off)`: runs are ranked per
        group."""
        if not self.model.settings:
            return self.model.name
        settings = ", ".join(f"{k}={v}" for k, v in sorted(self.model.settings.items()))
        return f"{self.model.name} ({settings})"

    @property
    def run_date(self) -> date:
        """The run's own calendar date (at its stated offset)."""
        return self.started_at.date()

    @property
    def evidence_hash_matches(self) -> bool:
        """False raises the `evidence_hash_mismatch` flag (a flag, not a rejection)."""
        return hashlib.sha256(self.evidence_log.encode()).hexdigest() == self.evidence_sha256

    @property
    def content_key(self) -> str:
        """What makes two submissions the same run (see `content_key`)."""
        total = Usage.total(self.usages())
        return content_key(
            model=self.model.name,
            settings=self.model.settings,
            use_case=self.use_case,
            use_case_version=self.use_case_version,
            tokens=token_totals(total),
            criteria=self.criteria,
            evidence_log=self.evidence_log,
        )

    def usages(self) -> list[Usage]:
        """The token counts as `Usage` for `costing.cost_of_all`: one per request when known
        (`per_request=True`, so long-context tiers apply), else the total."""
        if self.tokens.per_request is not None:
            return [r.usage(per_request=True) for r in self.tokens.per_request]
        assert self.tokens.total is not None  # the model's validator guarantees one of them
        return [self.tokens.total.usage(per_request=False)]


def token_totals(usage: Usage) -> dict[str, int]:
    """The token counts `content_key` compares."""
    return {
        "input": usage.prompt_tokens,
        "output": usage.completion_tokens,
        "cached": usage.cached_tokens,
        "cache_write": usage.cache_write_tokens,
        "reasoning": usage.reasoning_tokens,
    }


def _plain(value: Any) -> Any:
    """A string as compared for duplicates: normalised, white space collapsed."""
    return " ".join(normalise(value).split()) if isinstance(value, str) else value


def content_key(
    *,
    model: str,
    settings: Mapping[str, Any],
    use_case: str,
    use_case_version: str,
    tokens: Mapping[str, int],
    criteria: Mapping[str, str],
    evidence_log: str,
) -> str:
    """SHA-256 of a run's content (model, settings, use case and version, token counts,
    outcome per criterion, evidence log), the same whatever the field order, white space,
    letter case or look-alike letters of the model name, or invisible characters: two
    submissions with one key are one run resubmitted."""
    document = {
        "model": " ".join(skeleton(model).split()),
        "settings": {_plain(k): _plain(v) for k, v in settings.items()},
        "use_case": use_case,
        "use_case_version": use_case_version.lower(),
        "tokens": dict(tokens),
        "criteria": dict(criteria),
        "evidence_log": _plain(evidence_log),
    }
    text = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Rejection:
    """Why a submission was refused. The file itself is left exactly where it was."""

    reason: str
    """For the submitter: what is wrong, and where."""
    field: str | None
    """The first offending field as a dotted path (`tokens.per_request[0].input_tokens`);
    None when the file as a whole is the problem (unreadable, not JSON, too large)."""
    problems: tuple[tuple[str | None, str], ...] = ()
    """Every problem found, as (field, message)."""
    source: str | None = None
    """The file's path, when read from a file."""
    sha256: str | None = None
    """SHA-256 of the bytes read; None when the file was not read (missing, too large)."""
    size: int | None = None
    final: bool = True
    """False when the file was not judged at all (the submitters file cannot be used now):
    the intake leaves it unrecorded, to be taken when it can."""


class _BadJson(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _BadJson(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise _BadJson(f"{name} is not a JSON number")


def _reject(
    problems: list[tuple[str | None, str]],
    source: str | None,
    data: bytes | None,
    size: int | None = None,
    final: bool = True,
) -> Rejection:
    field, message = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return Rejection(
        reason=f"{field}: {message}{more}" if field else f"{message}{more}",
        field=field or None,
        problems=tuple(problems),
        source=source,
        sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
        size=len(data) if data is not None else size,
        final=final,
    )


def parse_submission(data: bytes, source: str | None = None) -> Submission | Rejection:
    """A submission from the bytes of its JSON file, or why not. Never raises on bad input."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _reject([(None, f"not UTF-8 text: {exc.reason} at byte {exc.start}")], source, data)
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return _reject([(None, f"not valid JSON: {exc}")], source, data)
    if not isinstance(document, dict):
        return _reject([(None, "a submission is one JSON object")], source, data)
    try:
        return Submission.model_validate_json(text)
    except ValidationError as exc:
        problems: list[tuple[str | None, str]] = [
            (field or None, message) for field, message in validation_problems(exc)
        ]
        return _reject(problems, source, data)


def load_submission(
    path: Path,
    *,
    max_bytes: int = MAX_INBOX_BYTES,
    bank: TaskBank | None = None,
    now: datetime | None = None,
) -> Submission | Rejection:
    """Read one submitted file: a `Submission`, or a `Rejection` saying why (never raises on a
    missing, unreadable, oversized, odd or malformed file; never moves or changes it).

    Args:
        path: The JSON file, read as an inbox file is (`core.inbox.read_inbox_file`).
        max_bytes: Larger files are rejected without being read.
        bank: When given, the submission is also checked against it (`check_against_bank`).
        now: When given, a run said to start after it is rejected (`check_not_future`).
    """
    entry = read_inbox_file(path, max_bytes)
    if entry is None:
        return _reject([(None, "cannot read the file now")], str(path), None)
    return check_submission(entry, bank=bank, now=now)


def check_submission(
    entry: InboxFile,
    *,
    bank: TaskBank | None = None,
    now: datetime | None = None,
    submitters: Submitters | None = None,
) -> Submission | Rejection:
    """The submission in an inbox file already read, or why not (its refusal, if it was not
    read). No file is opened here, so an intake can do this with no warehouse open.

    Args:
        entry: The file as `core.inbox.read_inbox_file` read it.
        bank: When given, the submission is also checked against it (`check_against_bank`).
        now: When given, a run said to start after it is rejected (`check_not_future`).
        submitters: When given, the file must name a registered submitter and carry their
            signature (`runs.submitters.check_signature`); when that file cannot be used, a
            submission otherwise valid is a Rejection that is not `final`.
    """
    source = str(entry.path)
    if entry.data is None:
        return _reject([(None, entry.refusal or "not read")], source, None, size=entry.size)
    result = parse_submission(entry.data, source)
    if isinstance(result, Submission):
        problem = (
            check_not_simulated(result)
            or (check_against_bank(result, bank) if bank is not None else None)
            or (check_not_future(result, now) if now is not None else None)
        )
        if problem is not None:
            return _reject([problem], source, entry.data)
        if submitters is not None:
            return _proven(result, entry.data, source, submitters)
    return result


def _proven(
    submission: Submission, data: bytes, source: str, submitters: Submitters
) -> Submission | Rejection:
    """`submission` when its file proves a registered submitter, else why not."""
    if submitters.problem is not None:
        waiting = f"waits: {submitters.problem}"
        return _reject([(SUBMITTER_FIELD, waiting)], source, data, final=False)
    document = json.loads(data.decode("utf-8-sig"))  # parsed once already: valid JSON
    problem = check_signature(document, submitters)
    return submission if problem is None else _reject([problem], source, data)


SIMULATED_SETTING = "simulated"
"""The setting that marks the pipeline's own demo runs (`runs.demo_submissions`)."""


def check_not_simulated(submission: Submission) -> tuple[str, str] | None:
    """(field, message) when a submitted file claims the demo's `simulated` setting: a real
    run dressed as a demo one would share its group name and board."""
    if any(key.strip().lower() == SIMULATED_SETTING for key in submission.model.settings):
        return "model.settings", "the 'simulated' setting is reserved for the pipeline's demo runs"
    return None


CLOCK_SKEW = timedelta(minutes=5)
"""How far ahead of our clock a submitter's clock may run before a start is `in the future`."""


def check_not_future(submission: Submission, now: datetime) -> tuple[str, str] | None:
    """(field, message) when the run says it started after `now` (an aware datetime)."""
    if submission.started_at > now + CLOCK_SKEW:
        return "started_at", f"{submission.started_at.isoformat()} is in the future"
    return None


def check_against_bank(submission: Submission, bank: TaskBank) -> tuple[str, str] | None:
    """(field, message) when the submission does not fit the bank: an unknown use case, a
    version other than the current one, or criteria that are not exactly the use case's."""
    try:
        case = bank.get("usecase", submission.use_case)
    except KeyError:
        return "use_case", f"no use case {submission.use_case!r}"
    if submission.use_case_version != case.version:
        return (
            "use_case_version",
            f"the use case is at version {case.version}; runs of other versions are not taken",
        )
    wanted = {c.id for c in case.rubric}
    missing = sorted(wanted - submission.criteria.keys())
    if missing:
        return "criteria", f"no outcome for {', '.join(missing)}"
    unknown = sorted(submission.criteria.keys() - wanted)
    if unknown:
        return "criteria", f"not criteria of {case.id}: {', '.join(unknown)}"
    return None


def submission_json_schema() -> dict[str, Any]:
    """The published JSON Schema (2020-12) of a submission file, from the pydantic model."""
    schema = Submission.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def write_schema(path: Path) -> Path:
    """Write `submission_json_schema()` to `path` (sorted keys, 2-space indent), atomically."""
    text = json.dumps(submission_json_schema(), indent=2, sort_keys=True, ensure_ascii=False)
    return write_text(path, text + "\n")
