"""A person's review of one run, as typed in `bench review` or dropped as a JSON file."""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bench_pipeline.taskbank.models import FileVersion1, Slug

RunId = Annotated[str, StringConstraints(pattern=r"^r[0-9a-f]{16}$")]
Reviewer = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=r"^\S.*\S$|^\S$")]
Said = Annotated[str, StringConstraints(min_length=1, max_length=10_000)]


class Review(BaseModel):
    """One blind review; every field is required except the critical-failure mark."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, title="Blind review")

    schema_version: FileVersion1 = 1
    run_id: RunId
    """The run reviewed (`bench review` fills it in; files must name it)."""
    reviewer: Reviewer
    score: int = Field(ge=1, le=5)
    """1 (unusable) to 5 (would ship as is)."""
    understood: Said
    """What the output understood about the situation."""
    missed: Said
    """What it missed (write `nothing` when nothing)."""
    decisive_reason: Said
    """The one reason that decided the score."""
    critical_failure: Slug | None = None
    """The id of a critical failure of the case the output commits, if any."""

    @property
    def review_id(self) -> str:
        """`rv` + 16 hex digits over run and reviewer: one review per person and run."""
        key = f"{self.run_id}\n{self.reviewer}".encode()
        return "rv" + hashlib.sha256(key).hexdigest()[:16]
