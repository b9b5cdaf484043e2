"""Judges: assignment rules, blinding, the PM and Navigator flows, sentinels and the offline
judge. Judge answers come over real loopback HTTP through `OpenAICompatibleProvider`."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, Reply

from bench_pipeline.core.http import RetryPolicy
from bench_pipeline.grading.decision import (
    REDACTED,
    BoundedProvider,
    criterion_request,
    grade_criterion,
    grade_rubric,
    parse_decision,
    redact,
)
from bench_pipeline.grading.judge_flows import navigator_judge, pm_judge
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider, simulated_verdict
from bench_pipeline.grading.judges import (
    SIMULATED_JUDGE_POOL,
    JudgeAssignmentError,
    JudgeModel,
    assign_judges,
)
from bench_pipeline.grading.queue import second_look
from bench_pipeline.grading.sentinels import (
    DEMO_KNOWN_GOOD,
    KNOWN_BAD_TEXTS,
    CycleItem,
    flag_judges,
    grade_cycle,
    held_runs,
    judged_inputs,
    known_bad,
    mix_cycle,
    sentinel_misgrades,
    sentinels_for,
)
from bench_pipeline.providers import (
    CachedProvider,
    ChatRequest,
    OpenAICompatibleProvider,
    ResponseCache,
    SimulatedProvider,
)
from bench_pipeline.taskbank import Case, load_bank
from bench_pipeline.taskbank.setups import Harness, ModelRecord, Setup, load_setups

pytestmark = pytest.mark.timeout(120)

PATH = "/v1/chat/completions"

MISTRAL = JudgeModel(api_id="mistralai/judge-large", company="Mistral AI", family="mistral")
META = JudgeModel(api_id="meta-llama/judge-70b", company="Meta", family="llama")
ANTHROPIC = JudgeModel(api_id="anthropic/judge-s", company="Anthropic", family="claude")
ANTHROPIC_2 = JudgeModel(api_id="anthropic/judge-h", company="Anthropic", family="claude")
OPENAI = JudgeModel(api_id="openai/judge-m", company="OpenAI", family="gpt")
GOOGLE = JudgeModel(api_id="google/judge-f", company="Google", family="gemini")


@pytest.fixture(scope="module")
def bank() -> dict[str, Case]:
    return {case.key: case for case in load_bank()}


def answer(outcome: str = "pass", **extra: Any) -> str:
    """A judge reply that reads as a decision, a claims check and a review alike."""
    others = [o for o in ("pass", "partial", "fail") if o != outcome]
    body = {
        "outcome": outcome,
        "probabilities": {outcome: 0.9, others[0]: 0.05, others[1]: 0.05},
        "confidence": 0.9,
        "reason": f"judged {outcome}",
        "claims": [{"claim": "Orbis asked for a refund.", "found": False}],
        "score": 4,
        **extra,
    }
    return json.dumps(body)


def completion(content: str) -> str:
    return json.dumps(
        {
            "id": "gen-1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 500, "completion_tokens": 60},
        }
    )


def provider_for(server: LoopbackServer) -> BoundedProvider:
    """The real client, at most 4 requests in flight (the loopback server's accept backlog
    is small; a real API would rate-limit instead)."""
    live = OpenAICompatibleProvider(
        "sk-test",
        base_url=server.url + "/v1",
        retry=RetryPolicy(max_retries=0, backoff_base=0.01, max_wait=1.0),
        timeout=5.0,
    )
    return BoundedProvider(live, 4)


def bodies(server: LoopbackServer) -> list[str]:
    return [r.body.decode() for r in server.requests(PATH)]


# --- assignment -----------------------------------------------------------------------------


def test_a_judge_of_the_models_own_company_is_refused() -> None:
    with pytest.raises(JudgeAssignmentError, match="its own company"):
        assign_judges("pm", "openai ", [OPENAI], benchmarked_companies=["OpenAI"])
    with pytest.raises(JudgeAssignmentError, match="its own company"):
        assign_judges("navigator", "Anthropic", [ANTHROPIC, ANTHROPIC_2], ["Anthropic"])
    # Case and spacing do not let the same company through under another spelling.
    assert assign_judges("usecase", "OPENAI", [OPENAI, MISTRAL], ["OpenAI"]) == [MISTRAL]


def test_the_pm_judge_comes_from_outside_every_benchmarked_company() -> None:
    benchmarked = sorted({m.company for m in load_setups().models.values()})
    assert "Anthropic" in benchmarked and "Mistral AI" not in benchmarked
    pool = [OPENAI, GOOGLE, MISTRAL, META]
    assert assign_judges("pm", "Anthropic", pool, benchmarked) == [MISTRAL]
    assert assign_judges("pm", "Anthropic", pool, [*benchmarked, "mistral ai"]) == [META]
    assert assign_judges(
        "pm", "Anthropic", pool, benchmarked, benchmarked_families=["Mistral"]
    ) == [META]
    with pytest.raises(JudgeAssignmentError, match="outside the PM suite"):
        assign_judges("pm", "Anthropic", [OPENAI, GOOGLE], benchmarked)


def test_navigator_gets_two_judges_from_two_companies_other_than_the_models() -> None:
    pool = [GOOGLE, ANTHROPIC, ANTHROPIC_2, OPENAI]
    assert assign_judges("navigator", "Google", pool, ["Google"]) == [ANTHROPIC, OPENAI]
    assert assign_judges("navigator", "Anthropic", pool, ["Anthropic"]) == [GOOGLE, OPENAI]
    with pytest.raises(JudgeAssignmentError, match="two companies"):
        assign_judges("navigator", "OpenAI", [OPENAI, ANTHROPIC, ANTHROPIC_2], ["OpenAI"])


def test_the_simulated_pool_meets_every_rule_for_every_benchmarked_company() -> None:
    companies = {m.company for m in load_setups().models.values()}
    for company in companies:
        assert len(assign_judges("pm", company, SIMULATED_JUDGE_POOL, companies)) == 1
        pair = assign_judges("navigator", company, SIMULATED_JUDGE_POOL, companies)
        assert len({j.company for j in pair}) == 2


# --- blinding -------------------------------------------------------------------------------

DISTINCTIVE_MODEL = ModelRecord(
    id="zanzibar-quetzal-model",
    api_id="xylocorp/quetzal-9000-preview",
    company="Xylocorp Heliotrope",
    temperature=0.3,
    context_limit=128000,
    pricing_date=date(2026, 8, 14),
)
DISTINCTIVE_HARNESS = Harness(
    id="okapi-harness-77",
    environment="api",
    system_instructions="You are Okapi-Assistant by Xylocorp.",
)


@pytest.mark.integration
def test_no_model_setup_company_or_harness_reaches_the_judge(bank: dict[str, Case]) -> None:
    setup = Setup(model=DISTINCTIVE_MODEL, harness=DISTINCTIVE_HARNESS)
    identity = [
        DISTINCTIVE_MODEL.id,
        DISTINCTIVE_MODEL.api_id,
        DISTINCTIVE_MODEL.company,
        "quetzal",
        "Xylocorp",
        DISTINCTIVE_HARNESS.id,
        "Okapi",
        setup.setup_id,
        setup.label,
    ]
    pm_case = bank["pm/pm-delay-update"]
    nav_case = bank["navigator/nav-writing-plain-rewrite"]
    # The candidate answers through the real run path; the simulated answer names its model,
    # as a real answer might name its maker, so the judge's copy is redacted.
    request = setup.chat_request(pm_case.prompts()[0].text)
    raw = asyncio.run(SimulatedProvider().complete(request)).content
    assert DISTINCTIVE_MODEL.api_id in raw
    pm_output = redact(raw + " Signed, Okapi-Assistant by XYLOCORP.", identity)
    assert REDACTED in pm_output
    nav_output = redact("Flood damage is not covered in a flood zone, said Quetzal.", identity)

    [judge] = assign_judges("pm", DISTINCTIVE_MODEL.company, [MISTRAL], ["Xylocorp Heliotrope"])
    pair = assign_judges("navigator", DISTINCTIVE_MODEL.company, [ANTHROPIC, OPENAI], [])
    with LoopbackServer({PATH: [Reply(200, body=completion(answer()))]}) as server:
        provider = provider_for(server)
        asyncio.run(pm_judge(provider, judge, pm_case, pm_output))
        asyncio.run(navigator_judge(provider, pair, nav_case, "insurance", nav_output))
        sent = bodies(server)

    assert len(sent) == 11 + 2 * 2  # PM: claims, 9 criteria, review; Navigator: 2 judges × 2
    for body in sent:
        for term in identity:
            assert term.lower() not in body.lower(), term


# --- the PM flow ----------------------------------------------------------------------------


@pytest.mark.integration
def test_the_pm_judge_checks_claims_then_criteria_then_answers_the_review(
    bank: dict[str, Case],
) -> None:
    case = bank["pm/pm-delay-update"]
    output = KNOWN_BAD_TEXTS[0]
    with LoopbackServer({PATH: [Reply(200, body=completion(answer()))]}) as server:
        result = asyncio.run(pm_judge(provider_for(server), MISTRAL, case, output))
        sent = [json.loads(b) for b in bodies(server)]

    kinds = [body["messages"][0]["content"].split("\n", 1)[0] for body in sent]
    assert kinds == ["Answer format: claims"] + ["Answer format: decision"] * 9 + [
        "Answer format: review"
    ]
    assert all(body["model"] == MISTRAL.api_id for body in sent)
    assert result.claims.graded and result.claims.not_found == ("Orbis asked for a refund.",)
    assert [g.criterion_id for g in result.criteria] == [c.id for c in case.rubric]
    assert all(g.outcome == "pass" and g.judge_api_id == MISTRAL.api_id for g in result.criteria)
    assert (result.review.score, result.judge_score) == (4, 75.0)
    assert result.review.call.usage[0].prompt_tokens == 500
    assert not result.simulated


def test_the_pm_judge_does_not_grade_prototypes_or_other_suites(bank: dict[str, Case]) -> None:
    provider = SimulatedJudgeProvider()
    with pytest.raises(ValueError, match="prototype"):
        asyncio.run(pm_judge(provider, MISTRAL, bank["pm/pm-proto-invite-flow"], "x"))
    with pytest.raises(ValueError, match="not a PM case"):
        asyncio.run(pm_judge(provider, MISTRAL, bank["usecase/uc-csv-dedupe"], "x"))


# --- the Navigator flow ---------------------------------------------------------------------


@pytest.mark.integration
def test_a_navigator_disagreement_goes_to_the_human_queue(bank: dict[str, Case]) -> None:
    case = bank["navigator/nav-writing-plain-rewrite"]  # two criteria on this input
    # The judges are asked one after the other: the first two answers are the first judge's.
    script = [Reply(200, body=completion(answer("pass")))] * 2 + [
        Reply(200, body=completion(answer("fail")))
    ]
    output = "Flood damage in a flood zone is only covered if you bought extra cover first."
    with LoopbackServer({PATH: script}) as server:
        judgement = asyncio.run(
            navigator_judge(provider_for(server), [ANTHROPIC, OPENAI], case, "insurance", output)
        )
        models = [json.loads(b)["model"] for b in bodies(server)]

    assert models == [ANTHROPIC.api_id] * 2 + [OPENAI.api_id] * 2
    assert judgement.needs_person and judgement.score is None
    assert len(judgement.person_reasons) == 2
    queue = second_look("run-nav-1", navigator=judgement)
    assert [(q.reason, q.criterion_id) for q in queue] == [
        ("judge_disagreement", "facts_kept"),
        ("judge_disagreement", "plain"),
    ]
    assert "anthropic/judge-s says pass, openai/judge-m says fail" in queue[0].detail


def test_agreeing_navigator_judges_give_a_score_and_no_queue(bank: dict[str, Case]) -> None:
    case = bank["navigator/nav-writing-plain-rewrite"]
    good = next(p.text for p in DEMO_KNOWN_GOOD if p.input_id == "insurance")
    pair = list(SIMULATED_JUDGE_POOL[:2])
    judgement = asyncio.run(
        navigator_judge(SimulatedJudgeProvider(), pair, case, "insurance", good)
    )
    assert not judgement.needs_person
    assert judgement.score == 1.0
    with pytest.raises(ValueError, match="two different companies"):
        asyncio.run(
            navigator_judge(
                SimulatedJudgeProvider(), [ANTHROPIC, ANTHROPIC_2], case, "insurance", good
            )
        )


# --- sentinels ------------------------------------------------------------------------------


def _runs(case: Case) -> list[CycleItem]:
    good = next(p.text for p in DEMO_KNOWN_GOOD if p.case_key == case.key)
    return [
        CycleItem(item_id="run-1", case_key=case.key, output=good.replace("4 June", "June")),
        CycleItem(item_id="run-2", case_key=case.key, output="Export is late. Sorry."),
        # A run that happens to answer like the known-bad sentinel: it must be asked the same.
        CycleItem(item_id="run-3", case_key=case.key, output=known_bad(case, "main").text),
    ]


@pytest.mark.integration
def test_a_judge_that_passes_a_known_bad_sentinel_is_flagged_and_its_cycle_held(
    bank: dict[str, Case],
) -> None:
    case = bank["pm/pm-delay-update"]
    sentinels = sentinels_for(case)
    assert {s.kind for s in sentinels} == {"known_good", "known_bad"}
    cycle = mix_cycle("cycle-2026-11-w48", _runs(case), sentinels)
    lenient = MISTRAL  # answers pass to everything
    with LoopbackServer({PATH: [Reply(200, body=completion(answer("pass")))]}) as server:
        judged = asyncio.run(
            grade_cycle(provider_for(server), lenient, bank, "cycle-2026-11-w48", cycle)
        )
        sent = bodies(server)

    assert len(sent) == len(cycle) * len(case.rubric)
    # Sentinels are asked exactly as runs are: the run with the known-bad text produced the
    # very same requests as the sentinel, so each of those bodies arrived twice.
    bad_requests = {
        criterion_request(lenient, case, c, known_bad(case, "main").text).canonical_json()
        for c in case.rubric
    }
    counts = Counter(
        json.dumps(json.loads(b), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        for b in sent
    )
    assert all(counts[body] == 2 for body in bad_requests)

    misgrades = sentinel_misgrades(judged)
    assert [(m.judge_api_id, m.sentinel, m.verdict) for m in misgrades] == [
        (lenient.api_id, "known_bad", "pass")
    ]
    flagged = flag_judges(judged)
    assert flagged == {lenient.api_id}
    assert held_runs(judged, flagged) == {"run-1", "run-2", "run-3"}


def test_the_offline_judge_catches_the_known_bad_and_passes_the_known_good(
    bank: dict[str, Case],
) -> None:
    case = bank["pm/pm-delay-update"]
    cycle = mix_cycle("c1", _runs(case), sentinels_for(case))
    judge = SIMULATED_JUDGE_POOL[0]
    judged = asyncio.run(grade_cycle(SimulatedJudgeProvider(), judge, bank, "c1", cycle))
    verdicts = {j.item.sentinel or j.item.item_id: j.verdict for j in judged}
    assert verdicts["known_bad"] == "fail" and verdicts["known_good"] == "pass"
    assert verdicts["run-2"] == "fail"  # too short
    assert flag_judges(judged) == set()
    assert held_runs(judged, flag_judges(judged)) == set()
    assert all(g.simulated for j in judged for g in j.grades)


def test_a_judge_that_fails_a_known_good_is_flagged(bank: dict[str, Case]) -> None:
    case = bank["pm/pm-delay-update"]
    cycle = mix_cycle("c2", _runs(case), sentinels_for(case))
    strict = OPENAI

    class FailsEverything(SimulatedJudgeProvider):
        async def complete(self, request: ChatRequest):
            response = await super().complete(request)
            return response.model_copy(update={"content": answer("fail")})

    judged = asyncio.run(grade_cycle(FailsEverything(), strict, bank, "c2", cycle))
    assert [m.sentinel for m in sentinel_misgrades(judged)] == ["known_good"]
    assert flag_judges(judged) == {strict.api_id}
    assert held_runs(judged, {strict.api_id}) == {"run-1", "run-2", "run-3"}
    assert held_runs(judged, {"someone/else"}) == set()
    other = judged[0].model_copy(update={"cycle_id": "c3"})
    with pytest.raises(ValueError, match="several cycles"):
        flag_judges([*judged, other])


def test_mixing_is_deterministic_and_blind_to_input_order(bank: dict[str, Case]) -> None:
    case = bank["pm/pm-delay-update"]
    runs, sentinels = _runs(case), sentinels_for(case)
    first = mix_cycle("c1", runs, sentinels)
    assert first == mix_cycle("c1", list(reversed(runs)), tuple(reversed(sentinels)))
    assert {i.item_id for i in first} == {r.item_id for r in runs} | {s.item_id for s in sentinels}
    orders = {tuple(i.item_id for i in mix_cycle(f"c{n}", runs, sentinels)) for n in range(8)}
    assert len(orders) > 1  # another cycle id reshuffles
    with pytest.raises(ValueError, match="distinct"):
        mix_cycle("c1", [runs[0], runs[0]], ())


def test_every_judged_input_has_a_known_bad_the_offline_judge_fails(bank: dict[str, Case]) -> None:
    judge = SIMULATED_JUDGE_POOL[0]
    provider = SimulatedJudgeProvider()
    for case in bank.values():
        for input_id in judged_inputs(case):
            bad = known_bad(case, input_id)
            assert bad in sentinels_for(case)
            grades = asyncio.run(grade_rubric(provider, judge, case, bad.text, input_id=input_id))
            assert {g.outcome for g in grades} == {"fail"}, (case.key, input_id)


def test_prepared_known_good_answers_match_the_current_bank_and_pass(
    bank: dict[str, Case],
) -> None:
    # When a case changes, its prepared answer is retired: this says which need rewriting.
    judge = SIMULATED_JUDGE_POOL[0]
    for prepared in DEMO_KNOWN_GOOD:
        case = bank[prepared.case_key]
        assert prepared.case_version == case.version, f"rewrite the answer for {case.key}"
        assert not case.private  # a prepared answer in the source would publish the case
        grades = asyncio.run(
            grade_rubric(
                SimulatedJudgeProvider(), judge, case, prepared.text, input_id=prepared.input_id
            )
        )
        assert {g.outcome for g in grades} == {"pass"}, prepared.case_key
    stale = bank["pm/pm-delay-update"].model_copy(update={"brief": "Changed brief."})
    assert {s.kind for s in sentinels_for(stale)} == {"known_bad"}


# --- the offline judge ----------------------------------------------------------------------


def test_the_offline_judge_is_deterministic_and_labelled(
    bank: dict[str, Case], tmp_path: Path
) -> None:
    case = bank["pm/pm-delay-update"]
    criterion = case.rubric[0]
    judge = SIMULATED_JUDGE_POOL[1]
    request = criterion_request(judge, case, criterion, "A short answer.")
    one = asyncio.run(SimulatedJudgeProvider().complete(request))
    two = asyncio.run(SimulatedJudgeProvider().complete(request))
    assert one == two and one.simulated and one.provider == "simulated-judge"
    assert json.loads(one.content)["reason"].startswith("[simulated judge]")
    cache = ResponseCache(tmp_path / "cache")
    grade = asyncio.run(
        grade_criterion(
            CachedProvider(SimulatedJudgeProvider(), cache), judge, case, criterion, "x"
        )
    )
    assert grade.simulated and grade.outcome == "fail"
    assert len(cache) == 0  # simulated answers are never cached as if real


@pytest.mark.parametrize(
    ("output", "outcome", "why"),
    [
        ("", "fail", "empty"),
        (
            "[simulated] Simulated answer from x to: 'y'. Recommendation: ship.",
            "fail",
            "placeholder",
        ),
        ("The export is late.", "fail", "too short"),
        (
            "I'm sorry, but I can’t help with that request about the export date and customers.",
            "fail",
            "declines",
        ),
        (KNOWN_BAD_TEXTS[1], "fail", "ignores"),
        (
            "Quick note for the team: the export will ship later than planned, sorry about that.",
            "partial",
            "lightly",
        ),
    ],
)
def test_the_offline_heuristic(bank: dict[str, Case], output: str, outcome: str, why: str) -> None:
    case = bank["pm/pm-delay-update"]
    verdict = simulated_verdict(case.brief + "\n" + case.context, output)
    assert verdict.outcome == outcome and why in verdict.reason


def test_a_request_that_is_not_a_judge_request_gets_an_unreadable_answer() -> None:
    request = ChatRequest(model="simulated/judge-a", messages=[{"role": "user", "content": "hi"}])
    response = asyncio.run(SimulatedJudgeProvider().complete(request))
    assert response.content.startswith("[simulated]") and response.simulated
    assert parse_decision(response.content) is None  # so a grade built on it is ungraded
