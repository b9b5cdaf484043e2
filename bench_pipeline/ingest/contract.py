"""Source contracts: what a payload must hold, declared beside each source's definition.

A contract (the `[contract]` table of `sources/definitions/<source>.toml`) names the files a
payload must contain, where the records sit in each file, the fields every record carries
(nested paths such as `pricing.prompt`) with their JSON types, and the staged columns whose
row counts are compared with the last accepted run (per file, per evaluation, per arena
table). Checking it gives three things:

- payload problems (a required file missing or empty): the run is rejected;
- record problems (a field of the wrong type, a NaN, a record nested too deep): that record
  is quarantined with its file, number, field and reason, and the others go on;
- measurements (null share per field): the sanity check compares them with the last
  accepted run, so a renamed field (null everywhere) rejects the run instead of publishing
  nulls.

Record numbers count from 1 per file in document order, as the parsers number them, so a
record problem lands on the staged row the parser made from the same record.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_DEPTH = 32
"""How deeply a record may nest (objects and arrays); deeper records are quarantined. The real
payloads nest at most 5 levels inside a record."""

TOO_DEEP = "\x00bench:nested-too-deep\x00"
"""What `payload.load_json` puts where a value nested past `MAX_DEPTH` stood (see there)."""

JsonType = Literal["string", "number", "integer", "boolean", "object", "array"]


class RepeatedKeys(dict):
    """A JSON object in which some key was written more than once. Every parser keeps the last
    value silently, so the record holding it says two things at once (an Arena rating beside
    the interval of another): `payload.load_json` marks such objects, and the contract
    quarantines the record, naming the key."""

    __slots__ = ("repeated",)

    def __init__(self, entries: dict[str, Any], repeated: tuple[str, ...]) -> None:
        super().__init__(entries)
        self.repeated = repeated

    def __reduce__(self) -> tuple[Any, ...]:
        return (RepeatedKeys, (dict(self), self.repeated))


class RecordSpec(BaseModel):
    """Where the records of some files sit, and the fields each record carries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    files: str = Field(description="A file-name pattern (fnmatch), e.g. `*.json`.")
    records: str = Field(
        default="[]",
        description="Path to the records: `data[]` (the list under data), `*.models.*` (every "
        "value of every `models` object), `csv` (the rows of a CSV file).",
    )
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="Nested path → JSON type (`string`, `number`, `integer`, `boolean`, "
        "`object`, `array`, or several joined by `|`). A null or absent value is allowed here "
        "and counted for the null-share check; a type ending in `?` marks a field that is "
        "often absent by nature (only its type is checked).",
    )
    tables: list[str] = Field(
        default_factory=list,
        description="The tables whose staged rows are these records, numbered as here: a "
        "record's problem quarantines the row of the same file and number in these tables and "
        "in no other (a table numbering its rows its own way, such as per-item results inside "
        "an entry, is left out). May be empty only when the source has one table.",
    )


class Contract(BaseModel):
    """One source's contract (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    files: list[str] = Field(
        default_factory=list, description="File-name patterns that must each match a file."
    )
    records: list[RecordSpec] = Field(default_factory=list)
    group_by: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Table → staged columns whose row counts per value are compared with the "
        "last accepted run (`_file` is the file a record came from).",
    )
    scales: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Table → numeric columns whose median over the valid rows is compared "
        "with the last accepted run: a median that moved by more than `scale_ratio` either way "
        "is a change of unit (prices per token become per thousand, a percentage a fraction), "
        "which every value could pass one by one, and rejects the run.",
    )
    scale_ratio: float = Field(
        default=4.0, gt=1, description="How far apart two medians may be (4: a quarter to 4×)."
    )
    scale_min_values: int = Field(
        default=20,
        ge=1,
        description="Values a median needs, in the run and in the baseline, to be compared.",
    )
    null_count_slack: int = Field(
        default=1,
        ge=0,
        description="How many records beyond the baseline's share may turn null whatever the "
        "share: one odd record of a four-record payload is not a renamed field.",
    )
    null_share_slack: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="How much a field's share of null records may rise over the last accepted "
        "run (0.1: ten percentage points).",
    )

    def spec_for(self, file_name: str) -> RecordSpec | None:
        """The record spec a file is read under: the first whose pattern matches it."""
        return next((r for r in self.records if fnmatch.fnmatchcase(file_name, r.files)), None)


@dataclass(frozen=True)
class RecordProblem:
    """Why one record is quarantined."""

    file_name: str
    record_number: int
    field: str
    reason: str


@dataclass
class ContractReport:
    """What checking a payload against its contract found."""

    missing: list[str] = field(default_factory=list)
    problems: list[RecordProblem] = field(default_factory=list)
    fields: dict[str, tuple[int, int]] = field(default_factory=dict)
    """`<file pattern>:<path>` → (records, records where the field is null or absent)."""
    records: int = 0
    """Records read from every file (for the source's `limits.max_records`)."""


_ABSENT = object()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _fits(value: Any, declared: str) -> bool:
    kind = _json_type(value)
    allowed = set(declared.rstrip("?").split("|"))
    return kind in allowed or (kind == "integer" and "number" in allowed)


def describe_value(value: Any) -> str:
    """A short, safe rendering of a value for a quarantine reason."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def lookup(record: Any, path: str) -> tuple[Any, str | None]:
    """The value at a dotted path, or `_ABSENT`; with the name of a step that was not an object
    (`pricing` when the record has `"pricing": "free"`), else None."""
    value = record
    walked: list[str] = []
    for step in path.split("."):
        if not isinstance(value, dict):
            return _ABSENT, ".".join(walked) or "record"
        walked.append(step)
        if step not in value:
            return _ABSENT, None
        value = value[step]
    return value, None


def depth(value: Any) -> int:
    """Nesting depth (a scalar is 0, `{}` and `[]` are 1), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
            deepest = max(deepest, level + 1)
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
            deepest = max(deepest, level + 1)
        elif item == TOO_DEEP:
            return MAX_DEPTH + 1
    return deepest


def non_finite(value: Any) -> str | None:
    """The path of the first NaN or infinite number inside `value`, or None."""
    stack = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path or "record"
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


def repeated_key(record: Any) -> tuple[str, str] | None:
    """(path, reason) of the first key written twice in one object of the record, or None."""
    stack: list[tuple[Any, str]] = [(record, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, RepeatedKeys):
            key = item.repeated[0]
            return (f"{path}.{key}" if path else key), _repeated_reason(key)
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


def _repeated_reason(key: str, where: str = "") -> str:
    shown = describe_value(key)
    return f"key {shown} appears more than once{where}; which value is meant is unknown"


def repeats_on_path(document: Any, records_path: str) -> dict[int, tuple[str, str]]:
    """Records (numbered from 0, in `walk` order) held by an object that repeats a key on the
    way down to them: under a `*` step only the record (or branch) under the repeated key;
    under any other object every record below it, since a parser may read that object's
    fields for each of them (a leaderboard's name). Empty when no object on the way repeats
    a key, found without a pass over the records themselves."""
    steps = [s for s in records_path.split(".") if s] if records_path != "[]" else ["[]"]
    level: list[Any] = [document]
    marks: list[tuple[str, str] | None] = [None]
    for step in steps:
        if not any(marks) and not any(isinstance(v, RepeatedKeys) for v in level):
            level = _next_level(level, step)  # the usual case: nothing to carry down
            marks = [None] * len(level)
            continue
        below: list[Any] = []
        below_marks: list[tuple[str, str] | None] = []
        key, listed = (step[:-2], True) if step.endswith("[]") else (step, False)
        for value, mark in zip(level, marks, strict=True):
            if step == "*":
                if isinstance(value, dict):
                    repeated = value.repeated if isinstance(value, RepeatedKeys) else ()
                    for name, child in value.items():
                        below.append(child)
                        below_marks.append(mark or _held(name, repeated, " in its container"))
                continue
            if key:
                if not isinstance(value, dict) or key not in value:
                    continue
                if mark is None and isinstance(value, RepeatedKeys):
                    name = key if key in value.repeated else value.repeated[0]
                    mark = _held(name, (name,), " in an object above this record")
                children = [value[key]]
            else:
                children = [value]
            if listed:
                children = [c for v in children if isinstance(v, list) for c in v]
            below += children
            below_marks += [mark] * len(children)
        level, marks = below, below_marks
    return {number: mark for number, mark in enumerate(marks) if mark is not None}


def _held(name: str, repeated: tuple[str, ...], where: str) -> tuple[str, str] | None:
    """The problem of a record under key `name` of an object repeating `repeated`."""
    return ("record", _repeated_reason(name, where)) if name in repeated else None


def _next_level(level: list[Any], step: str) -> list[Any]:
    """The values one step of a records path below `level` (as `walk` reads them)."""
    if step == "*":
        dicts = [value for value in level if isinstance(value, dict)]
        return list(chain.from_iterable(map(dict.values, dicts)))
    key, listed = (step[:-2], True) if step.endswith("[]") else (step, False)
    if key:
        level = [value[key] for value in level if isinstance(value, dict) and key in value]
    if listed:
        level = list(chain.from_iterable(v for v in level if isinstance(v, list)))
    return level


def walk(document: Any, records_path: str) -> Iterator[Any]:
    """The records under `records_path` in document order (see `RecordSpec.records`); a step
    that does not fit (a list where an object was expected) yields nothing there.

    Read a level at a time (each level's values in order, each value's children in order),
    which is document order: a million records cost a few list passes, not a generator
    frame per record."""
    steps = [s for s in records_path.split(".") if s] if records_path != "[]" else ["[]"]
    level = [document]
    for step in steps:
        level = _next_level(level, step)
    return iter(level)


def check_record(record: Any, spec: RecordSpec) -> tuple[str, str] | None:
    """(field, reason) when the record breaks the contract, else None."""
    if depth(record) > MAX_DEPTH:
        return "record", f"nested deeper than {MAX_DEPTH} levels"
    if spec.records != "csv" and not isinstance(record, dict):
        return "record", f"expected an object, got {_json_type(record)}"
    repeated = repeated_key(record)
    if repeated is not None:
        return repeated
    bad_number = non_finite(record)
    if bad_number is not None:
        return bad_number, "not a finite number (NaN or Infinity)"
    for path, declared in spec.fields.items():
        value, broken = lookup(record, path)
        if broken is not None:
            parent, _ = lookup(record, broken) if broken != "record" else (record, None)
            return path, f"{broken} is {_json_type(parent)}, not an object"
        if value is _ABSENT or value is None:
            continue
        if spec.records == "csv":
            if declared.rstrip("?") == "number" and not _csv_number(value):
                return path, f"expected a number, got {describe_value(value)}"
        elif not _fits(value, declared):
            expected = declared.rstrip("?")
            return path, f"expected {expected}, got {_json_type(value)} {describe_value(value)}"
    return None


def _csv_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def missing_files(contract: Contract, names: Sequence[str], sizes: dict[str, int]) -> list[str]:
    """Required patterns that no non-empty file matches, each with why."""
    missing = []
    for pattern in contract.files:
        matched = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if not matched:
            missing.append(f"{pattern}: no such file")
        elif not any(sizes.get(n, 0) for n in matched):
            missing.append(f"{pattern}: empty file")
    return missing


def check_document(contract: Contract, name: str, document: Any, report: ContractReport) -> None:
    """Check one parsed file's records (a CSV file's rows are a list of dicts)."""
    for spec in contract.records:
        if not fnmatch.fnmatchcase(name, spec.files):
            continue
        csv = spec.records == "csv"
        records = document if csv else list(walk(document, spec.records))
        held = {} if csv else repeats_on_path(document, spec.records)
        report.records += len(records)
        for number, record in enumerate(records, start=1):
            problem = held.get(number - 1) or check_record(record, spec)
            if problem is not None:
                report.problems.append(RecordProblem(name, number, *problem))
            for path, declared in spec.fields.items():
                if declared.endswith("?"):
                    continue
                key = f"{spec.files}:{path}"
                total, nulls = report.fields.get(key, (0, 0))
                value, _ = lookup(record, path)
                empty = value is _ABSENT or value is None or value == ""
                report.fields[key] = (total + 1, nulls + empty)
        return  # one record spec per file: the first that matches


def null_share_problems(
    contract: Contract,
    now: dict[str, tuple[int, int]],
    before: dict[str, tuple[int, int]],
) -> list[str]:
    """Fields whose share of null records rose by more than the slack since the baseline, by
    more records than `null_count_slack`."""
    problems = []
    for key, (records, nulls) in sorted(now.items()):
        if key not in before or not records or not before[key][0]:
            continue
        share, was = nulls / records, before[key][1] / before[key][0]
        beyond = nulls - was * records  # null records the baseline's share does not explain
        if share > was + contract.null_share_slack and beyond > contract.null_count_slack:
            pattern, path = key.split(":", 1)
            problems.append(
                f"{pattern}: field {path} is null in {share:.0%} of {records} records, "
                f"{was:.0%} in the last accepted run (allowed: +{contract.null_share_slack:.0%})"
            )
    return problems


def scale_problems(
    contract: Contract,
    now: dict[str, tuple[float | None, int]],
    before: dict[str, tuple[float | None, int]],
) -> list[str]:
    """Columns whose median moved by more than `scale_ratio` since the baseline (see
    `Contract.scales`); `now` and `before` map `table.column` → (median, values counted).
    A zero median (most models free) has no scale to compare, nor has a small sample."""
    problems = []
    for key, (median, values) in sorted(now.items()):
        was, counted = before.get(key, (None, 0))
        if median is None or was is None or min(values, counted) < contract.scale_min_values:
            continue
        if median <= 0 or was <= 0:
            continue
        apart = max(median / was, was / median)
        if apart > contract.scale_ratio:
            problems.append(
                f"{key}: median {median:.6g} against {was:.6g} in the last accepted run, "
                f"{apart:.3g}× apart (allowed: {contract.scale_ratio:g}×): a change of unit?"
            )
    return problems
