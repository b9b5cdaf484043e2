"""Loading the task bank from `tasks/<suite>/*.toml`, with errors that name file and field.

A TOML file holds either one case (its keys at the top level) or several: an array of
`[[case]]` tables, where the file's other top-level keys are defaults every case of the file
takes unless it sets its own (so a navigator category file says `category` once). The suite
is the folder's name; a case may repeat it but not contradict it. Other files (README.md)
are ignored.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench_pipeline.core import settings
from bench_pipeline.taskbank.errors import join_field, validation_problems
from bench_pipeline.taskbank.models import SUITES, UNION_TAGS, Case


def default_root() -> Path:
    """`BENCH_TASKS`, default the bank in the repository: `tasks/`."""
    return settings.tasks_dir()


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the bank: the file, the field inside it and why."""

    path: Path
    field: str
    """Dotted path inside the file, e.g. `case[2].inputs[0].check.pattern`; empty for the
    whole file."""
    message: str
    case_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}: {self.field}" if self.field else str(self.path)
        if self.case_id:
            where += f" (case {self.case_id})"
        return f"{where}: {self.message}"


class TaskBankError(ValueError):
    """The bank does not load; `problems` lists every problem found (file, field, message)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"the task bank does not load ({len(problems)} problems):\n{lines}")

    @property
    def path(self) -> Path:
        """The file of the first problem."""
        return self.problems[0].path

    @property
    def field(self) -> str:
        """The field of the first problem."""
        return self.problems[0].field


@dataclass(frozen=True)
class TaskBank:
    """Every case of the bank, in suite order then file order, and the file each came from."""

    root: Path
    cases: tuple[Case, ...]
    sources: dict[str, Path] = field(default_factory=dict, compare=False)
    """Case key (`suite/id`) → the file it was read from."""

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def suite(self, name: str) -> tuple[Case, ...]:
        """The cases of one suite."""
        if name not in SUITES:
            raise KeyError(f"no suite {name!r} (suites: {', '.join(SUITES)})")
        return tuple(c for c in self.cases if c.suite == name)

    def get(self, suite: str, case_id: str) -> Case:
        """One case by suite and id."""
        for case in self.cases:
            if case.suite == suite and case.id == case_id:
                return case
        raise KeyError(f"no case {suite}/{case_id}")

    def tasks(self, suite: str) -> dict[str, tuple[Case, ...]]:
        """Task id → its cases, for one suite, in bank order."""
        grouped: dict[str, list[Case]] = {}
        for case in self.suite(suite):
            grouped.setdefault(case.task, []).append(case)
        return {task: tuple(cases) for task, cases in grouped.items()}


def _entries(document: dict[str, Any]) -> tuple[list[tuple[str, Any]], list[Problem]]:
    """(location prefix, raw case) for each case of a parsed file."""
    if "case" not in document:
        return [("", document)], []
    listed = document["case"]
    defaults = {k: v for k, v in document.items() if k != "case"}
    if not isinstance(listed, list) or not all(isinstance(e, dict) for e in listed):
        return [], [Problem(Path(), "case", "must be an array of tables ([[case]])")]
    if not listed:
        return [], [Problem(Path(), "case", "no cases: the array is empty")]
    return [(f"case[{i}]", {**defaults, **entry}) for i, entry in enumerate(listed)], []


def _load_file(path: Path, suite: str) -> tuple[list[tuple[str, Case]], list[Problem]]:
    """(location, case) for each case of one file, and the problems found in it (a bad case
    never stops the others of the file from being checked)."""
    try:
        document = tomllib.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        return [], [Problem(path, "", f"not UTF-8 text: {exc}")]
    except tomllib.TOMLDecodeError as exc:
        return [], [Problem(path, "", f"not valid TOML: {exc}")]
    entries, problems = _entries(document)
    problems = [Problem(path, p.field, p.message) for p in problems]
    cases: list[tuple[str, Case]] = []
    for prefix, raw in entries:
        case_id = raw["id"] if isinstance(raw.get("id"), str) else None
        if raw.get("suite", suite) != suite:
            problems.append(
                Problem(
                    path, join_field(prefix, "suite"), f"is {raw['suite']!r} in {suite}/", case_id
                )
            )
            continue
        try:
            cases.append((prefix, Case.model_validate({**raw, "suite": suite})))
        except ValidationError as exc:
            problems += [
                Problem(path, join_field(prefix, loc), message, case_id)
                for loc, message in validation_problems(exc, UNION_TAGS)
            ]
    return cases, problems


def _bank_rules(cases: list[Case], sources: dict[str, Path]) -> list[Problem]:
    """Every case of one task shares its category and `core` flag."""
    first_of_task: dict[tuple[str, str], Case] = {}
    problems = []
    for case in cases:
        first = first_of_task.setdefault((case.suite, case.task), case)
        differing = [n for n in ("category", "core") if getattr(case, n) != getattr(first, n)]
        problems += [
            Problem(
                sources[case.key],
                name,
                f"differs from {first.id} ({sources[first.key].name}) of the same task "
                f"{case.task!r}: every case of a task shares it",
                case.id,
            )
            for name in differing
        ]
    return problems


def load_bank(root: Path | None = None) -> TaskBank:
    """Read and check every case under `root` (default `tasks/`).

    Raises:
        TaskBankError: Anything wrong: a missing root, a folder that is not a suite, a file
            that is not TOML, a case that fails validation, a case id used twice in one
            suite, or cases of one task that disagree on category. Each problem names the
            file, the field (e.g. `case[2].inputs[0].check.pattern`) and the case id.
    """
    root = root or default_root()
    if not root.is_dir():
        raise TaskBankError([Problem(root, "", "no such folder")])
    problems: list[Problem] = []
    cases: list[Case] = []
    sources: dict[str, Path] = {}
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    problems += [
        Problem(p, "", f"not a suite folder (suites: {', '.join(SUITES)})")
        for p in folders
        if p.name not in SUITES
    ]
    for suite in SUITES:
        for path in sorted((root / suite).glob("*.toml")):
            found, file_problems = _load_file(path, suite)
            problems += file_problems
            for prefix, case in found:
                if case.key in sources:
                    problems.append(
                        Problem(
                            path,
                            join_field(prefix, "id"),
                            f"already used in {sources[case.key]}",
                            case.id,
                        )
                    )
                    continue
                sources[case.key] = path
                cases.append(case)
    problems += _bank_rules(cases, sources)
    if problems:
        raise TaskBankError(problems)
    return TaskBank(root=root, cases=tuple(cases), sources=sources)
