"""The judge pool and who may judge whom.

Assignment happens here, outside every prompt: `assign_judges` is the only function that
sees the candidate's company; the flows (`judge_flows`) receive only the case and the output.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from bench_pipeline.providers.base import EndpointUrl
from bench_pipeline.providers.keys import KeyVariable, key_variable
from bench_pipeline.taskbank.models import Suite

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class JudgeModel(BaseModel):
    """A model used as a judge, and the settings it is called with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_id: NonEmpty
    """The exact API model id, recorded on every grade."""
    company: NonEmpty
    """Who makes it: it never judges that company's models."""
    family: NonEmpty
    """The model family (e.g. `llama`), recorded for per-family calibration."""
    temperature: float | None = 0.0
    """0 by default so reruns agree; None for APIs that take no temperature."""
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: str | None = None
    base_url: EndpointUrl | None = None
    """Where it is served; None means OpenRouter."""
    local: bool = False
    """Served on our own hardware: never sent the OpenRouter key (needs `base_url`)."""
    api_key_env: KeyVariable | None = None
    """The environment variable holding its endpoint's key; None: `OPENROUTER_API_KEY` at
    OpenRouter, no key anywhere else (`providers.keys`)."""

    @model_validator(mode="after")
    def _local_needs_a_server(self) -> JudgeModel:
        if self.local and self.base_url is None:
            raise ValueError("a local judge needs the base URL of its server (base_url)")
        key_variable(self.base_url, self.api_key_env)  # api_key_env: no OpenRouter key elsewhere
        return self


SIMULATED_JUDGE_POOL: tuple[JudgeModel, ...] = (
    JudgeModel(api_id="simulated/judge-a", company="Simulated judge A", family="simulated-a"),
    JudgeModel(api_id="simulated/judge-b", company="Simulated judge B", family="simulated-b"),
    JudgeModel(api_id="simulated/judge-c", company="Simulated judge C", family="simulated-c"),
)
"""The offline pool: companies that make no benchmarked model, so every rule can be met.
Served by `SimulatedJudgeProvider`."""


class JudgeAssignmentError(ValueError):
    """No judge in the pool satisfies the assignment rules."""


def company_key(name: str) -> str:
    """A company (or family) name compared case- and space-insensitively."""
    return " ".join(name.split()).casefold()


def assign_judges(
    suite: Suite,
    candidate_company: str,
    pool: Sequence[JudgeModel],
    benchmarked_companies: Collection[str],
    *,
    benchmarked_families: Collection[str] = (),
) -> list[JudgeModel]:
    """The judges for a candidate of `candidate_company` in `suite`, in pool order (the pool
    is listed by preference).

    - Never a judge of the candidate's own company (names compared case- and
      space-insensitively).
    - PM: one judge whose company makes no model benchmarked in the suite (and whose family,
      if families are given, is not benchmarked either). Excluding the whole company, not
      only the family, is deliberately the stricter reading: family labels are ours, the
      maker is not.
    - Navigator: two judges from two different companies.
    - Use cases: one judge.

    Raises:
        JudgeAssignmentError: The pool has no eligible judge (or, for Navigator, no two from
            different companies).
    """
    own = company_key(candidate_company)
    eligible = [j for j in pool if company_key(j.company) != own]
    if not eligible:
        raise JudgeAssignmentError(
            f"no judge in the pool outside {candidate_company}: a judge never grades a model "
            "of its own company"
        )
    if suite == "pm":
        companies = {company_key(c) for c in benchmarked_companies}
        families = {company_key(f) for f in benchmarked_families}
        outside = [
            j
            for j in eligible
            if company_key(j.company) not in companies and company_key(j.family) not in families
        ]
        if not outside:
            raise JudgeAssignmentError(
                "no judge in the pool comes from outside the PM suite's benchmarked companies "
                f"({', '.join(sorted(benchmarked_companies))})"
            )
        return [outside[0]]
    if suite == "navigator":
        first = eligible[0]
        second = next(
            (j for j in eligible[1:] if company_key(j.company) != company_key(first.company)), None
        )
        if second is None:
            raise JudgeAssignmentError(
                f"Navigator needs two judges from two companies other than {candidate_company}; "
                f"the pool offers only {first.company}"
            )
        return [first, second]
    return [eligible[0]]
