"""Navigator classic v1: its own task library and its pinned judge configuration.

The library (`tasks/navigator_v1.toml`) is a list of definitions a person extends by adding a
`[[task]]` table: id, title, category, tier, version, the prompt, and either a tier-1 scripted
check (the task bank's check kinds) or tier-2 guidance for the judge. The configuration
(`setups/navigator_v1.toml`) pins the one judge model and the rubric version with its
dimensions; both are recorded on every tier-2 score, and changing either is a new methodology
version. Every problem is reported naming the file, the task and the field.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from bench_pipeline.core import settings
from bench_pipeline.taskbank.errors import validation_problems
from bench_pipeline.taskbank.models import (
    ExactFieldsCheck,
    JsonSchemaCheck,
    NumericCheck,
    RegexCheck,
)

V1_CATEGORIES = ("coding", "extraction", "reasoning", "summarization", "support", "writing")
"""The categories of the active v1 library (methodology v1)."""

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$")]
V1Check = Annotated[
    ExactFieldsCheck | JsonSchemaCheck | RegexCheck | NumericCheck, Field(discriminator="kind")
]
"""Tier-1 checks: scripted and deterministic (code-running checks are not part of v1)."""


class V1LibraryError(ValueError):
    """The library or the configuration cannot be used; the message names file, task, field."""


class V1Task(BaseModel):
    """One task of the v1 library."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Slug
    title: Text
    category: Literal["coding", "extraction", "reasoning", "summarization", "support", "writing"]
    tier: Literal[1, 2]
    version: Text
    prompt: Text
    check: V1Check | None = None
    """Tier 1: the answer key. Never published."""
    guidance: Text | None = None
    """Tier 2: what a good answer does, for the judge. Never published."""

    @model_validator(mode="after")
    def _one_grader(self) -> V1Task:
        if self.tier == 1 and (self.check is None or self.guidance is not None):
            raise ValueError("a tier-1 task has a `check` and no `guidance`")
        if self.tier == 2 and (self.guidance is None or self.check is not None):
            raise ValueError("a tier-2 task has `guidance` for the judge and no `check`")
        return self

    @property
    def digest(self) -> str:
        """16 hex digits of a sha256 over what decides the answer and its grade (prompt,
        check, guidance), recorded on every run beside `version`."""
        content = self.model_dump(mode="json", include={"prompt", "check", "guidance"})
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class Dimension(BaseModel):
    """One dimension of the rubric, scored 0–5 by the judge."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Slug
    question: Text


class V1Config(BaseModel):
    """The pinned judge and rubric of methodology v1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    methodology_version: Text
    judge_model: Text
    """The exact API id of the one judge; recorded on every tier-2 score."""
    judge_company: Text
    rubric_version: Text
    dimensions: tuple[Dimension, ...] = Field(min_length=1)
    max_tokens: int = Field(gt=0)
    calls_per_task: int = Field(ge=1, le=20)

    @model_validator(mode="after")
    def _unique_dimensions(self) -> V1Config:
        ids = [d.id for d in self.dimensions]
        if len(set(ids)) != len(ids):
            raise ValueError("two dimensions share an id")
        return self


def config_path() -> Path:
    """`navigator_v1.toml` in the setups folder (`BENCH_SETUPS`)."""
    return settings.setups_dir() / "navigator_v1.toml"


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise V1LibraryError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise V1LibraryError(f"{path}: not readable TOML: {error}") from None


def load_library(path: Path | None = None) -> tuple[V1Task, ...]:
    """Every task of the library, in file order.

    Raises:
        V1LibraryError: Naming the file, the task (its id, or its position) and the field.
    """
    path = path or settings.v1_library_path()
    document = _read(path)
    unknown = sorted(set(document) - {"task"})
    if unknown:
        raise V1LibraryError(f"{path}: {unknown[0]}: unknown top-level key (tasks are [[task]])")
    entries = document.get("task")
    if not isinstance(entries, list) or not entries:
        raise V1LibraryError(f"{path}: task: the library needs at least one [[task]]")
    tasks, seen = [], set()
    for position, entry in enumerate(entries, start=1):
        name = entry.get("id") if isinstance(entry, dict) else None
        where = f"{path}: task {name!r}" if isinstance(name, str) else f"{path}: task #{position}"
        try:
            task = V1Task.model_validate(entry)
        except ValidationError as error:
            field, message = validation_problems(error)[0]
            raise V1LibraryError(f"{where}: {field or 'task'}: {message}") from None
        if task.id in seen:
            raise V1LibraryError(f"{where}: id: a second task with this id")
        seen.add(task.id)
        tasks.append(task)
    return tuple(tasks)


def load_config(path: Path | None = None) -> V1Config:
    """The pinned v1 judge and rubric.

    Raises:
        V1LibraryError: Naming the file and the field.
    """
    path = path or config_path()
    try:
        return V1Config.model_validate(_read(path))
    except ValidationError as error:
        field, message = validation_problems(error)[0]
        raise V1LibraryError(f"{path}: {field or 'config'}: {message}") from None


def library_task(tasks: tuple[V1Task, ...], task_id: str) -> V1Task:
    """The task `task_id`, or a ValueError listing the library's ids."""
    for task in tasks:
        if task.id == task_id:
            return task
    raise ValueError(
        f"task: no v1 task {task_id!r} (the library has: {', '.join(t.id for t in tasks)})"
    )
