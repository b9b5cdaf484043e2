"""The disclosures page's content: funding, conflicts, who pays for runs and the sponsorship
policy (seed 001), from `site/disclosures.toml`, a file a person edits.

The file is checked before anything is rendered: a missing file, unreadable TOML, a missing
or empty field or an unknown one is a `DisclosuresError` naming the file and the field, so
the site build stops and the published site stays as it was.
"""

from __future__ import annotations

import tomllib
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from bench_pipeline.core import settings

DISCLOSURES = settings.REPO_ROOT / "site" / "disclosures.toml"
Statement = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Statements = Annotated[tuple[Statement, ...], Field(min_length=1)]
SECTIONS = (
    ("funding", "Funding"),
    ("conflicts", "Conflicts of interest"),
    ("who_pays", "Who pays for runs"),
    ("sponsorship", "Sponsorship policy"),
)
"""The page's sections, in order: (field, heading)."""


class DisclosuresError(ValueError):
    """The disclosures file is missing or malformed."""


class Disclosures(BaseModel):
    """What the disclosures page states; every list is one bullet per statement."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    updated: date
    """When a person last checked that every statement is true."""
    responsible: Statement
    """Who stands behind the statements."""
    funding: Statements
    conflicts: Statements
    who_pays: Statements
    sponsorship: Statements

    def sections(self) -> list[tuple[str, tuple[str, ...]]]:
        """(heading, statements) in page order."""
        return [(heading, getattr(self, name)) for name, heading in SECTIONS]


def load_disclosures(path: Path) -> Disclosures:
    """The checked disclosures (see the module docstring).

    Raises:
        DisclosuresError: Naming `path` and the field at fault.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DisclosuresError(f"{path}: missing (the disclosures page is made from it)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DisclosuresError(f"{path}: not readable TOML: {exc}") from None
    try:
        return Disclosures.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"field `{'.'.join(str(p) for p in e['loc']) or '(file)'}`: {e['msg']}"
            for e in exc.errors()
        )
        raise DisclosuresError(f"{path}: {problems}") from None


class Renderer(Protocol):
    """What the page needs from the site builder."""

    def render(self, path: str, template: str, shows: Any = (), **context: Any) -> None: ...


def render_disclosures(builder: Renderer, path: Path | None = None) -> None:
    """`disclosures.html`, from the checked file (default `DISCLOSURES`; a bad file raises
    before the page is written, and the site build with it)."""
    checked = load_disclosures(DISCLOSURES if path is None else path)
    builder.render("disclosures.html", "disclosures.html", disclosures=checked)
