"""Navigator classic v1 comparisons: run library tasks on models, score them, store them.

One comparison answers each chosen task `calls_per_task` times per model (same request: the
mean cost per call is over these), scores every answer (`grading.v1_judge`: tier 1 scripted,
tier 2 the pinned judge), prices candidate and judge calls at the rates in effect today, and
stores comparison, runs and scores (only inserted). Two callers: the offline demo (every
library task on every declared setup, simulated provider and judge) and `bench compare` (one
task, the requester's own key). Providers are handed in, so this module never sees a key.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal

import duckdb

from bench_pipeline.core.money import exact
from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.grading.blind_names import load_blind_names
from bench_pipeline.grading.blinding import BlindNames, blind_copy
from bench_pipeline.grading.navigator_v1 import V1Display, completeness, display_overall
from bench_pipeline.grading.v1_judge import SimulatedV1Judge, V1Score, score_tier1, score_tier2
from bench_pipeline.providers.base import ChatRequest, Message, Provider
from bench_pipeline.providers.runner import run_all
from bench_pipeline.providers.simulated import SimulatedProvider
from bench_pipeline.runs.batch import Connect
from bench_pipeline.runs.costing import Rates, cost_of, cost_of_all, rate_in_effect
from bench_pipeline.runs.rates import rates_by_api_id
from bench_pipeline.taskbank.v1_library import V1Config, V1Task, load_config, load_library

COMPARISON_COLUMNS = (
    "comparison_id", "origin", "task_id", "monthly_volume", "monthly_budget_usd", "models",
    "key_source", "endpoint", "receipts_dir", "started_at",
)  # fmt: skip
RUN_COLUMNS = (
    "run_id", "comparison_id", "model", "api_id", "task_id", "task_version", "task_digest",
    "tier", "call", "request_hash", "output", "finish_reason", "max_tokens", "prompt_tokens",
    "completion_tokens", "cost_usd", "provider", "simulated", "recorded_at",
)  # fmt: skip
SCORE_COLUMNS = (
    "score_id", "run_id", "tier", "grader", "rubric_version", "methodology_version",
    "stored_overall", "dimensions", "reason", "judge_cost_usd", "simulated", "graded_at",
)  # fmt: skip


@dataclass(frozen=True)
class V1Candidate:
    """A model in a comparison: the label shown and what is sent."""

    label: str
    api_id: str
    temperature: float | None = None
    reasoning_effort: str | None = None


@dataclass(frozen=True)
class V1Result:
    """One answered and scored call."""

    run_id: str
    candidate: V1Candidate
    task: V1Task
    call: int
    request: ChatRequest
    output: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: Decimal | None
    provider: str
    simulated: bool
    score: V1Score
    judge_cost_usd: Decimal | None
    display: V1Display | None
    """None when the answer could not be scored (it then counts nowhere)."""
    incomplete: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class V1Comparison:
    """A finished comparison: its id and every result."""

    comparison_id: str
    results: tuple[V1Result, ...]


def comparison_id(origin: str, tasks: Sequence[V1Task], candidates: Sequence[V1Candidate],
                  config: V1Config, salt: str = "") -> str:  # fmt: skip
    """`v1` + 16 hex digits over what the comparison runs (and `salt`: a request's time)."""
    models = (f"{c.label}|{c.api_id}|{c.temperature}|{c.reasoning_effort}" for c in candidates)
    parts = [origin, salt, config.model_dump_json(), *(t.digest for t in tasks), *models]
    return "v1" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _run_id(comparison: str, candidate: V1Candidate, task: V1Task, call: int) -> str:
    key = "\0".join((comparison, candidate.label, task.digest, str(call)))
    return "v1r" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _request(candidate: V1Candidate, task: V1Task, config: V1Config) -> ChatRequest:
    return ChatRequest(
        model=candidate.api_id,
        messages=(Message(role="user", content=task.prompt),),
        temperature=candidate.temperature,
        max_tokens=config.max_tokens,
        reasoning_effort=candidate.reasoning_effort,
    )


def _rate(rates: Mapping[str, Sequence[Rates]], api_id: str, day: date) -> Rates | None:
    return rate_in_effect(rates.get(api_id, ()), day)


async def run_comparison(
    candidates_provider: Provider,
    judge_provider: Provider,
    candidates: Sequence[V1Candidate],
    tasks: Sequence[V1Task],
    config: V1Config,
    rates: Mapping[str, Sequence[Rates]],
    *,
    comparison: str,
    concurrency: int = 4,
    today: date | None = None,
    names: BlindNames | None = None,
) -> V1Comparison:
    """Answer and score every task on every candidate, `config.calls_per_task` times. A
    tier-1 check grades the output as it came; the tier-2 judge reads its blind copy, with
    the candidate's id and label and every name of `names` (`grading.blind_names`) redacted.

    Raises:
        ProviderError: A call failed for good (nothing of the comparison is stored then).
    """
    day = today or datetime.now(UTC).date()
    plan = [
        (c, t, n) for c in candidates for t in tasks for n in range(1, config.calls_per_task + 1)
    ]
    requests = [_request(c, t, config) for c, t, _n in plan]
    responses = await run_all(candidates_provider, requests, concurrency)
    judge_rate = _rate(rates, config.judge_model, day)
    results = []
    for (candidate, task, call), request, response in zip(plan, requests, responses, strict=True):
        output = response.content
        usage = response.usage
        if task.tier == 1:
            score = score_tier1(task, output)
            judge_cost = None
        else:
            blind = blind_copy(output, candidate.api_id, "", candidate.label, known=names)
            score = await score_tier2(judge_provider, config, task, blind)
            usages = [u for u in score.judge_usage if u is not None]
            judge_cost = cost_of_all(usages, judge_rate).cost_usd if usages else None
        cost = (
            None if usage is None else cost_of(usage, _rate(rates, candidate.api_id, day)).cost_usd
        )
        done = completeness(
            output, response.finish_reason, config.max_tokens,
            None if usage is None else usage.completion_tokens,
        )  # fmt: skip
        shown = None
        if score.stored_overall is not None:
            shown = display_overall(score.stored_overall, score.dimensions, done.output_incomplete)
        results.append(
            V1Result(
                run_id=_run_id(comparison, candidate, task, call),
                candidate=candidate, task=task, call=call, request=request, output=output,
                finish_reason=response.finish_reason,
                prompt_tokens=None if usage is None else usage.prompt_tokens,
                completion_tokens=None if usage is None else usage.completion_tokens,
                cost_usd=cost, provider=response.provider,
                simulated=response.simulated or candidates_provider.simulated,
                score=score, judge_cost_usd=judge_cost, display=shown,
                incomplete=done.model_dump(),
            )
        )  # fmt: skip
    return V1Comparison(comparison, tuple(results))


def store_comparison(
    conn: duckdb.DuckDBPyConnection,
    result: V1Comparison,
    config: V1Config,
    *,
    origin: str,
    key_source: str,
    endpoint: str | None,
    task_id: str | None = None,
    monthly_volume: int | None = None,
    monthly_budget: Decimal | None = None,
    receipts_dir: str | None = None,
    now: datetime | None = None,
) -> None:
    """Insert the comparison, its runs and scores in one transaction (a comparison id stored
    before is refused: results are never replaced)."""
    if key_source not in ("none", "prompt", "file"):
        raise ValueError(f"key_source: {key_source!r} is not none, prompt or file")
    stamp = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    models = sorted({r.candidate.api_id for r in result.results})
    runs, scores = [], []
    for r in result.results:
        runs.append([
            r.run_id, result.comparison_id, r.candidate.label, r.candidate.api_id, r.task.id,
            r.task.version, r.task.digest, r.task.tier, r.call, r.request.request_hash(),
            r.output, r.finish_reason, config.max_tokens, r.prompt_tokens, r.completion_tokens,
            r.cost_usd, r.provider, r.simulated, stamp,
        ])  # fmt: skip
        scores.append([
            "v1s" + r.run_id[3:], r.run_id, r.score.tier, r.score.grader, r.score.rubric_version,
            config.methodology_version, r.score.stored_overall,
            json.dumps(r.score.dimensions, sort_keys=True), r.score.reason, r.judge_cost_usd,
            r.score.simulated, stamp,
        ])  # fmt: skip
    with transaction(conn):
        if conn.execute("SELECT 1 FROM v1_comparisons WHERE comparison_id = ?",
                        [result.comparison_id]).fetchall():  # fmt: skip
            raise ValueError(f"comparison_id: {result.comparison_id} is already stored")
        insert_rows(conn, "v1_comparisons", COMPARISON_COLUMNS, [[
            result.comparison_id, origin, task_id, monthly_volume, monthly_budget,
            json.dumps(models), key_source, endpoint, receipts_dir, stamp,
        ]])  # fmt: skip
        insert_rows(conn, "v1_runs", RUN_COLUMNS, runs)
        insert_rows(conn, "v1_scores", SCORE_COLUMNS, scores)


def total_cost(candidate: Decimal | None, judge: Decimal | None) -> Decimal | None:
    """The candidate plus the judge cost, only when the candidate cost is known and a judge
    cost was recorded (methodology v1); else None."""
    if candidate is None or judge is None:
        return None
    with exact():
        return candidate + judge


def declared_candidates(conn: duckdb.DuckDBPyConnection) -> list[V1Candidate]:
    """Every current, executable setup declared in `setups/` (not a proposal), by label."""
    rows = conn.execute(
        "SELECT label, api_id, temperature, reasoning_effort FROM setups "
        "WHERE executable AND current AND NOT coalesce(proposed, false) ORDER BY label"
    ).fetchall()
    return [V1Candidate(*row) for row in rows]


def run_library_demo(connect: Connect, *, simulated: bool) -> str | None:
    """The offline demo's v1 comparison: every library task on every declared setup, with the
    simulated provider and the simulated v1 judge; stored once (an unchanged library, setup
    list and configuration give the same comparison id, which is not run again). Returns its
    id, or None outside simulated mode: the project pays for no v1 run (its v1 budget is $0),
    so real v1 comparisons come only from `bench compare` on a requester's own key.
    """
    if not simulated:
        return None
    library, config = load_library(), load_config()
    with connect() as conn:
        candidates = declared_candidates(conn)
        rates = rates_by_api_id(conn, [config.judge_model, *(c.api_id for c in candidates)])
        names = load_blind_names(conn)
    comparison = comparison_id("demo", library, candidates, config)
    with connect() as conn:
        if conn.execute("SELECT 1 FROM v1_comparisons WHERE comparison_id = ?",
                        [comparison]).fetchall():  # fmt: skip
            return comparison
    result = asyncio.run(
        run_comparison(
            SimulatedProvider(),
            SimulatedV1Judge(config),
            candidates,
            library,
            config,
            rates,
            comparison=comparison,
            names=names,
        )
    )
    with connect() as conn:
        store_comparison(conn, result, config, origin="demo", key_source="none", endpoint=None)
    return comparison
