"""Setups: a model record × a harness, read from `setups/models.toml` and `setups/harnesses.toml`.

A model record is what is called: the exact API id, its company, reasoning effort,
temperature (None when it is not sent, because the API does not take it or the record leaves
the default), context limit, the date of the pricing snapshot it is costed against, and
where it is served (OpenRouter by default, or `base_url` for a local llama.cpp/vLLM server).
A harness is everything around the model: the environment (the plain API, or an app or
agent product), system instructions, skills, tools and permissions.

`setup_id` = `s` + 16 hex digits of a sha256 over canonical JSON (sorted keys) of the model
record and the harness, each without its record id, notes and (for a harness) the list of
models it is paired with: so key order, comments and renaming a record keep the id, and any
change to a parameter makes a new one. Results are always reported per setup.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from bench_pipeline.core import settings
from bench_pipeline.providers.base import (
    ChatRequest,
    EndpointUrl,
    Message,
    without_reserved_keys,
)
from bench_pipeline.providers.keys import KeyVariable, key_variable
from bench_pipeline.taskbank.errors import rule_error, validation_problems
from bench_pipeline.taskbank.models import Slug, Text, content_hash

MODELS_FILE = "models.toml"
HARNESSES_FILE = "harnesses.toml"

Environment = Literal["api", "claude", "claude_code", "chatgpt", "codex", "gemini"]
APP_ENVIRONMENTS = frozenset({"claude", "chatgpt", "gemini"})
"""Chat apps: they run on the product's defaults of a date, which the harness must record."""


def default_root() -> Path:
    """`BENCH_SETUPS`, default the setups in the repository: `setups/`."""
    return settings.setups_dir()


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Slug
    """Our name for the record (a model at two efforts is two records)."""


class ModelRecord(_Record):
    """One model as called, with every setting that changes its answers or its cost."""

    api_id: Text
    """The exact API model id, e.g. `openai/gpt-5.4` on OpenRouter."""
    company: Text
    """Who makes the model (a judge never grades its own company's models)."""
    reasoning_effort: str | None = None
    """`low`, `medium`, `high`, ... for models that take it; None sends none."""
    temperature: StrictFloat | None = Field(default=None, ge=0, allow_inf_nan=False)
    """None when the API does not take a temperature (or the record keeps the default)."""
    context_limit: StrictInt = Field(gt=0)
    """Tokens of context the model (or local server) accepts."""
    pricing_date: date | None = None
    """Date of the price snapshot the record is costed against; None only for local models."""
    local: StrictBool = False
    """Run on our own hardware: costs exactly 0."""
    base_url: EndpointUrl | None = None
    """OpenAI-compatible endpoint; None means OpenRouter. Required for local models."""
    api_key_env: KeyVariable | None = None
    """The environment variable holding this endpoint's key (its name, never the key). None:
    `OPENROUTER_API_KEY` at OpenRouter, no key anywhere else (`providers.keys`)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further request body parameters (`top_p`, OpenRouter `provider` routing, ...)."""
    notes: str = ""

    @field_validator("extra")
    @classmethod
    def _not_reserved(cls, extra: dict[str, Any]) -> dict[str, Any]:
        return without_reserved_keys(extra, "the record's")

    @model_validator(mode="after")
    def _local_rules(self) -> ModelRecord:
        if self.local and self.base_url is None:
            raise rule_error("base_url", "a local model needs the base URL of its server")
        if not self.local and self.pricing_date is None:
            raise rule_error("pricing_date", "a hosted model needs the date of its price snapshot")
        try:
            key_variable(self.base_url, self.api_key_env)
        except ValueError as error:
            raise rule_error("api_key_env", str(error)) from None
        return self

    def identity(self) -> dict[str, Any]:
        """What the setup id hashes: every field but `id`, `notes` and `api_key_env` (which
        key pays for a call changes neither its answer nor its price)."""
        return self.model_dump(mode="json", exclude={"id", "notes", "api_key_env"})


class Harness(_Record):
    """Everything around the model: environment, instructions, skills, tools, permissions."""

    environment: Environment
    system_instructions: str = ""
    """Sent as the system message (API harnesses); empty sends none."""
    skills: tuple[Text, ...] = ()
    tools: tuple[Text, ...] = ()
    permissions: tuple[Text, ...] = ()
    defaults_date: date | None = None
    """For chat apps: the date whose product defaults the runs used."""
    models: tuple[Slug, ...] | None = None
    """Model record ids this harness is paired with; None pairs it with every model."""
    notes: str = ""

    @model_validator(mode="after")
    def _app_rules(self) -> Harness:
        if self.environment in APP_ENVIRONMENTS and self.defaults_date is None:
            raise rule_error("defaults_date", f"a {self.environment} harness records the date")
        return self

    def identity(self) -> dict[str, Any]:
        """What the setup id hashes: every field but `id`, `notes` and `models`."""
        return self.model_dump(mode="json", exclude={"id", "notes", "models"})


def setup_id_of(model: ModelRecord, harness: Harness) -> str:
    """`s` + 16 hex digits of the sha256 of the canonical model and harness identities."""
    return "s" + content_hash({"model": model.identity(), "harness": harness.identity()})


@dataclass(frozen=True)
class Setup:
    """One model record in one harness: the unit every result is reported for."""

    model: ModelRecord
    harness: Harness

    @property
    def setup_id(self) -> str:
        return setup_id_of(self.model, self.harness)

    @property
    def label(self) -> str:
        """`model · harness`, for people."""
        return f"{self.model.id} · {self.harness.id}"

    @property
    def executable(self) -> bool:
        """True when the pipeline can run it as plain chat requests: an API harness without
        skills or tools (anything else is run elsewhere and submitted)."""
        return (
            self.harness.environment == "api"
            and not self.harness.skills
            and not (self.harness.tools)
        )

    def chat_request(self, prompt: str, max_tokens: int | None = None) -> ChatRequest:
        """The request for one prompt: the harness's system instructions (if any), then the
        prompt as the user message, with the record's model id and settings.

        Raises:
            ValueError: The setup is not `executable`.
        """
        if not self.executable:
            raise ValueError(
                f"{self.label} is not run as chat requests ({self.harness.environment})"
            )
        messages = [Message(role="user", content=prompt)]
        if self.harness.system_instructions:
            messages.insert(0, Message(role="system", content=self.harness.system_instructions))
        return ChatRequest(
            model=self.model.api_id,
            messages=tuple(messages),
            temperature=self.model.temperature,
            max_tokens=max_tokens,
            reasoning_effort=self.model.reasoning_effort,
            extra=dict(self.model.extra),
        )


@dataclass(frozen=True)
class SetupProblem:
    """One thing wrong with the setup files: file, record, field and why."""

    path: Path
    record: str
    """`model[2] (glm-5)`, or empty for the whole file."""
    field: str
    message: str

    def __str__(self) -> str:
        where = ": ".join(part for part in (str(self.path), self.record, self.field) if part)
        return f"{where}: {self.message}"


class SetupError(ValueError):
    """The setup files do not load; `problems` lists every problem (file, record, field)."""

    def __init__(self, problems: list[SetupProblem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"the setups do not load ({len(problems)} problems):\n{lines}")

    @property
    def path(self) -> Path:
        """The file of the first problem."""
        return self.problems[0].path

    @property
    def record(self) -> str:
        """The record of the first problem (empty for the whole file)."""
        return self.problems[0].record

    @property
    def field(self) -> str:
        """The field of the first problem."""
        return self.problems[0].field


@dataclass(frozen=True)
class SetupCatalog:
    """The model records, harnesses and every setup they pair into (ordered by model, then
    harness, as in the files), then any proposed setups (`with_proposed`)."""

    models: dict[str, ModelRecord]
    harnesses: dict[str, Harness]
    setups: tuple[Setup, ...]
    proposed: frozenset[str] = frozenset()
    """Ids of the setups that were proposed (for a model new on OpenRouter), not declared in
    the files; their records are not in `models` and `harnesses`."""

    def get(self, setup_id: str) -> Setup:
        for setup in self.setups:
            if setup.setup_id == setup_id:
                return setup
        raise KeyError(f"no setup {setup_id}")

    def with_proposed(self, setups: Iterable[Setup]) -> SetupCatalog:
        """This catalog and, after its own setups, the proposed ones it does not already
        hold (a declared setup with the same id stays declared)."""
        known = {s.setup_id for s in self.setups}
        extra: list[Setup] = []
        for setup in setups:
            if setup.setup_id not in known:
                known.add(setup.setup_id)
                extra.append(setup)
        return replace(
            self,
            setups=(*self.setups, *extra),
            proposed=self.proposed | {s.setup_id for s in extra},
        )


R = TypeVar("R", bound=_Record)


def _records(
    path: Path, table: str, kind: type[R]
) -> tuple[list[tuple[str, R]], list[SetupProblem]]:
    """(`table[n] (id)`, record) for each valid record of one file, and the problems found."""
    try:
        document = tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return [], [SetupProblem(path, "", "", "no such file")]
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return [], [SetupProblem(path, "", "", f"not valid TOML: {exc}")]
    problems = [
        SetupProblem(path, "", key, f"unknown key (records go in [[{table}]] tables)")
        for key in document
        if key != table
    ]
    entries = document.get(table, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return [], [*problems, SetupProblem(path, "", table, f"must be [[{table}]] tables")]
    records: list[tuple[str, R]] = []
    seen: dict[str, str] = {}
    for number, entry in enumerate(entries):
        name = entry.get("id") if isinstance(entry.get("id"), str) else None
        record = f"{table}[{number}]" + (f" ({name})" if name else "")
        try:
            item = kind.model_validate(entry)
        except ValidationError as exc:
            problems += [
                SetupProblem(path, record, field, message)
                for field, message in validation_problems(exc)
            ]
            continue
        if item.id in seen:
            problems.append(SetupProblem(path, record, "id", f"already used by {seen[item.id]}"))
            continue
        seen[item.id] = record
        records.append((record, item))
    return records, problems


def load_setups(root: Path | None = None) -> SetupCatalog:
    """Read `models.toml` and `harnesses.toml` under `root` (default `setups/`) and pair them.

    Raises:
        SetupError: Anything wrong, each problem naming the file, the record and the field: a
            record that fails validation, a repeated id, a harness naming an unknown model, or
            two pairs with the same setup id (records identical but for their names).
    """
    root = root or default_root()
    models_path, harnesses_path = root / MODELS_FILE, root / HARNESSES_FILE
    labelled_models, problems = _records(models_path, "model", ModelRecord)
    labelled_harnesses, harness_problems = _records(harnesses_path, "harness", Harness)
    problems += harness_problems
    models = [m for _, m in labelled_models]
    harnesses = [h for _, h in labelled_harnesses]
    by_id = {m.id: m for m in models}
    for record, harness in labelled_harnesses:
        unknown = [m for m in harness.models or () if m not in by_id]
        if unknown:
            problems.append(
                SetupProblem(
                    harnesses_path, record, "models", f"unknown model record {', '.join(unknown)}"
                )
            )
    setups = [
        Setup(model, harness)
        for model in models
        for harness in harnesses
        if harness.models is None or model.id in harness.models
    ]
    first: dict[str, Setup] = {}
    for setup in setups:
        other = first.setdefault(setup.setup_id, setup)
        if other is not setup:
            twin_models = other.model is not setup.model
            problems.append(
                SetupProblem(
                    models_path if twin_models else harnesses_path,
                    f"{other.label} and {setup.label}",
                    "",
                    f"the same setup ({setup.setup_id}): the "
                    f"{'model records' if twin_models else 'harnesses'} differ only in name",
                )
            )
    if problems:
        raise SetupError(problems)
    return SetupCatalog(models=by_id, harnesses={h.id: h for h in harnesses}, setups=tuple(setups))
