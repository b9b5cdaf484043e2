"""The offline demo's latent skill: seeded, deterministic, read back by the offline graders."""

from __future__ import annotations

import asyncio
import json
import statistics

import pytest

from bench_pipeline.grading.decision import FORMAT_PREFIX, NONCE_HEX, TAG
from bench_pipeline.grading.judge_simulated import (
    SIMULATED_REASON,
    SPLIT_SHARE,
    SimulatedJudgeProvider,
    simulated_verdict,
)
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.simulated import SIMULATED_GRADER, is_simulated, simulated_check
from bench_pipeline.providers.base import ChatRequest, Message
from bench_pipeline.providers.simulated import (
    SKILL_RANGE,
    SimulatedProvider,
    latent_skill,
    simulated_outcome,
    simulated_quality,
)

pytestmark = pytest.mark.unit
NONCE = "0" * NONCE_HEX


def _answer(model: str, prompt: str, effort: str | None = None) -> str:
    request = ChatRequest(
        model=model, messages=[Message(role="user", content=prompt)], reasoning_effort=effort
    )
    return asyncio.run(SimulatedProvider().complete(request)).content


def test_skill_is_fixed_per_setup_and_spread_over_its_range() -> None:
    skills = [latent_skill(f"vendor/model-{k}") for k in range(200)]
    assert skills == [latent_skill(f"vendor/model-{k}") for k in range(200)]
    assert all(SKILL_RANGE[0] <= s < SKILL_RANGE[1] for s in skills)
    assert max(skills) - min(skills) > 0.6
    assert latent_skill("m", "high") != latent_skill("m", "low")
    assert latent_skill("m", seed=1) != latent_skill("m", seed=2)


def test_answers_carry_a_quality_around_the_skill_and_stay_labelled() -> None:
    # Pick two models whose skills are far apart, whichever they are under the seed.
    models = sorted((latent_skill(f"vendor/m{k}"), f"vendor/m{k}") for k in range(40))
    (weak_skill, weak), (strong_skill, strong) = models[0], models[-1]
    answers = {m: [_answer(m, f"question {k}") for k in range(60)] for m in (weak, strong)}
    assert all(is_simulated(a) and a.startswith("[simulated] quality ") for a in answers[weak])
    assert _answer(weak, "question 1") == answers[weak][1]  # deterministic
    mean = {m: statistics.fmean(simulated_quality(a) for a in answers[m]) for m in answers}
    assert abs(mean[weak] - weak_skill) < 0.06 and abs(mean[strong] - strong_skill) < 0.06
    # The graders turn that into more passes for the stronger setup.
    passes = {
        m: sum(simulated_check(f"case/{k}:main", a).outcome == "pass" for k, a in enumerate(v))
        for m, v in answers.items()
    }
    assert passes[strong] > passes[weak] + 15


def test_outcome_compares_quality_with_the_items_difficulty() -> None:
    items = [f"item-{k}" for k in range(300)]
    at = {q: [simulated_outcome(q, i) for i in items] for q in (0.0, 0.5, 1.0)}
    assert set(at[1.0]) == {"pass"} and at[0.0].count("pass") == 0
    assert {"pass", "partial", "fail"} <= set(at[0.5])
    # Monotone in quality for every item.
    rank = {"fail": 0, "partial": 1, "pass": 2}
    assert all(rank[a] <= rank[b] for a, b in zip(at[0.5], at[1.0], strict=True))


def test_graders_label_what_they_read() -> None:
    check = simulated_check("case:main", "[simulated] quality 0.950. text")
    assert check.grader == SIMULATED_GRADER and check.details == {"quality": 0.95}
    placeholder = simulated_check("case:main", "[simulated] no quality here")
    assert placeholder.outcome == "fail"
    verdict = simulated_verdict("brief text", "[simulated] quality 0.990. anything")
    assert verdict.outcome == "pass" and "latent quality 0.990" in verdict.reason
    assert simulated_verdict("brief", "[simulated] Simulated answer").outcome == "fail"


def _navigator_decision(judge: str, output: str, criterion: str) -> str:
    prompt = (
        "## Brief\nSummarise the incident report for the on-call team.\n\n"
        "## Input\nThe database failed over at 02:10 and recovered at 02:25.\n\n"
        f"## Criterion\nQuestion: {criterion}\n\n"
        f"## Answer to grade\n<{TAG}-{NONCE}>\n{output}\n</{TAG}-{NONCE}>"
    )
    request = ChatRequest(
        model=judge,
        messages=[
            Message(role="system", content=f"{FORMAT_PREFIX}decision\n\nJudge it."),
            Message(role="user", content=prompt),
        ],
    )
    answer = asyncio.run(SimulatedJudgeProvider().complete(request))
    assert answer.simulated and SIMULATED_REASON in answer.content
    return json.loads(answer.content)["outcome"]


def test_the_simulated_judge_pair_splits_on_a_small_seeded_share_of_navigator_criteria() -> None:
    a, b = (j.api_id for j in SIMULATED_JUDGE_POOL[:2])
    outputs = [_answer("vendor/model-x", f"incident {k}") for k in range(400)]
    pairs = [(_navigator_decision(a, o, "Is the timeline right?"), o) for o in outputs]
    sides = [(first, _navigator_decision(b, o, "Is the timeline right?")) for first, o in pairs]
    splits = [s for s in sides if set(s) == {"pass", "fail"}]
    # Roughly SPLIT_SHARE of criteria, never zero, never most; A passes where B fails.
    assert 0.5 * SPLIT_SHARE * 400 <= len(splits) <= 2 * SPLIT_SHARE * 400
    assert all(s == ("pass", "fail") for s in splits)
    again = [_navigator_decision(b, o, "Is the timeline right?") for o in outputs]
    assert again == [second for _, second in sides]  # deterministic
    # A prepared (non-simulated) answer never splits, whatever the criterion.
    prose = "The database failed over at 02:10 and recovered at 02:25; the on-call team paged."
    for k in range(100):
        assert _navigator_decision(a, prose, f"q{k}") == _navigator_decision(b, prose, f"q{k}")
