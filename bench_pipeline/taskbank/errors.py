"""Readable locations for validation errors: `inputs[0].check.pattern`, not a pydantic tuple.

Shared by the task bank, the setups loader and the submission intake, so every error a person
sees names the field the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

RULE_ERROR = "rule"
"""Error type of the cross-field rules below (`rule_error`): the field it names is in `ctx`."""


def rule_error(field: str, reason: str) -> PydanticCustomError:
    """An error for a rule that spans fields, raised inside a model validator: pydantic places it
    at the model, `field` says which of the model's fields it is about."""
    return PydanticCustomError(RULE_ERROR, "{reason}", {"field": field, "reason": reason})


def format_loc(
    loc: tuple[int | str, ...] | list[int | str],
    tags: Mapping[str, frozenset[str]] | None = None,
) -> str:
    """`('inputs', 0, 'check', 'regex', 'pattern')` → `inputs[0].check.pattern`.

    Args:
        loc: A pydantic error location.
        tags: For a field holding a tagged union, the tags pydantic inserts after it (the
            `regex` above), which are dropped: the union's own `kind` field already says it.
    """
    tags = tags or {}
    text = ""
    previous: int | str | None = None
    for part in loc:
        if isinstance(part, str) and isinstance(previous, str) and part in tags.get(previous, ()):
            previous = None
            continue
        if part == "[key]":  # the key itself of a dict entry is wrong
            text += " (key)"
        elif isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
        previous = part
    return text


def join_field(prefix: str, field: str) -> str:
    """`case[2]` + `inputs[0].text` → `case[2].inputs[0].text` (either side may be empty)."""
    if not prefix:
        return field
    if not field:
        return prefix
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def validation_problems(
    error: ValidationError, tags: Mapping[str, frozenset[str]] | None = None
) -> list[tuple[str, str]]:
    """Every error of `error` as (field, message), in pydantic's order; a rule error names the
    field from its context."""
    problems = []
    for item in error.errors(include_url=False):
        field = format_loc(item["loc"], tags)
        context: Any = item.get("ctx") or {}
        if item["type"] == RULE_ERROR and context.get("field"):
            field = join_field(field, str(context["field"]))
        problems.append((field, item["msg"]))
    return problems
