"""Calibration against a person, the second-look queue, and the Navigator classic v1 display
rule and completeness flags."""

from __future__ import annotations

import math

import pytest

from bench_pipeline.grading.calibration import (
    PairedGrade,
    agreement,
    calibrate,
    release_gate,
    track_criteria,
)
from bench_pipeline.grading.decision import GradeRecord
from bench_pipeline.grading.judge_flows import CriterionPair, NavigatorJudgement
from bench_pipeline.grading.navigator_v1 import completeness, display_overall
from bench_pipeline.grading.outcomes import CheckResult
from bench_pipeline.grading.queue import (
    SECOND_LOOK_CONFIDENCE,
    decision_model_score,
    low_confidence,
    score_gap,
    second_look,
)

# --- calibration ----------------------------------------------------------------------------

# Ten paired grades (judge, person). Item n: family, tier, criterion.
#   n  judge    person   family   tier  criterion
#   1  pass     pass     llama    1     a
#   2  pass     pass     llama    1     b
#   3  pass     pass     llama    2     a
#   4  pass     pass     llama    2     b
#   5  pass     fail     llama    2     a
#   6  fail     fail     mistral  1     b
#   7  fail     fail     mistral  2     a
#   8  fail     pass     mistral  2     b
#   9  partial  partial  mistral  1     a
#  10  partial  fail     mistral  2     b
ROWS = [
    ("pass", "pass", "llama", "1", "a"),
    ("pass", "pass", "llama", "1", "b"),
    ("pass", "pass", "llama", "2", "a"),
    ("pass", "pass", "llama", "2", "b"),
    ("pass", "fail", "llama", "2", "a"),
    ("fail", "fail", "mistral", "1", "b"),
    ("fail", "fail", "mistral", "2", "a"),
    ("fail", "pass", "mistral", "2", "b"),
    ("partial", "partial", "mistral", "1", "a"),
    ("partial", "fail", "mistral", "2", "b"),
]
PAIRS = [
    PairedGrade(
        item_id=f"run-{n}",
        criterion_id=criterion,
        judge_api_id=f"{family}/judge",
        judge_family=family,
        tier=tier,
        judge=judge,
        person=person,
    )
    for n, (judge, person, family, tier, criterion) in enumerate(ROWS, start=1)
]


def test_overall_agreement_and_kappa_by_hand() -> None:
    # Agreed: items 1-4, 6, 7, 9 → 7 of 10 → p_o = 0.7.
    # Judge uses pass 5, fail 3, partial 2; the person pass 5, fail 4, partial 1.
    # p_e = (5·5 + 3·4 + 2·1) / 10² = 39/100 = 0.39.
    # κ = (0.7 − 0.39) / (1 − 0.39) = 0.31 / 0.61 = 31/61 ≈ 0.5082.
    overall = agreement(PAIRS)
    assert (overall.n, overall.agreed, overall.agreement) == (10, 7, 0.7)
    assert math.isclose(overall.kappa, 31 / 61)


def test_agreement_per_family_and_per_tier_by_hand() -> None:
    report = calibrate(PAIRS)
    # llama (1-5): 4 of 5 agree → 0.8. Judge pass 5; person pass 4, fail 1.
    #   p_e = (5·4) / 25 = 0.8 → κ = (0.8 − 0.8) / 0.2 = 0.
    # mistral (6-10): items 6, 7, 9 agree → 0.6. Judge fail 3, partial 2; person fail 3,
    #   pass 1, partial 1. p_e = (3·3 + 2·1) / 25 = 11/25 = 0.44 → κ = 0.16 / 0.56 = 2/7.
    assert list(report.by_family) == ["llama", "mistral"]
    llama, mistral = report.by_family["llama"], report.by_family["mistral"]
    assert (llama.n, llama.agreement) == (5, 0.8) and math.isclose(llama.kappa, 0.0, abs_tol=1e-12)
    assert (mistral.n, mistral.agreement) == (5, 0.6) and math.isclose(mistral.kappa, 2 / 7)
    # Tier 1 (1, 2, 6, 9): all agree → 1.0; p_e = (2·2 + 1·1 + 1·1) / 16 = 6/16 → κ = 1.
    # Tier 2 (3, 4, 5, 7, 8, 10): items 3, 4, 7 agree → 0.5. Judge pass 3, fail 2,
    #   partial 1; person pass 3, fail 3. p_e = (3·3 + 2·3 + 1·0) / 36 = 15/36
    #   → κ = (18/36 − 15/36) / (21/36) = 3/21 = 1/7.
    tier1, tier2 = report.by_tier["1"], report.by_tier["2"]
    assert (tier1.n, tier1.agreement, tier1.kappa) == (4, 1.0, 1.0)
    assert (tier2.n, tier2.agreement) == (6, 0.5) and math.isclose(tier2.kappa, 1 / 7)
    assert report.overall == agreement(PAIRS)
    assert report.release_ok is False  # 70% is under 85%


def test_grader_tracking_per_criterion() -> None:
    # a: items 1, 3, 5, 7, 9 → 4 agree; item 5 is judge pass / person fail (a false pass).
    # b: items 2, 4, 6, 8, 10 → 3 agree; item 8 is judge fail / person pass (a false
    #    failure); item 10 (partial vs fail) is a disagreement but neither.
    tracking = track_criteria(PAIRS)
    a, b = tracking["a"], tracking["b"]
    assert (a.n, a.agreement, a.false_passes, a.false_failures) == (5, 0.8, 1, 0)
    assert (b.n, b.agreement, b.false_passes, b.false_failures) == (5, 0.6, 0, 1)
    llama_only = track_criteria(p for p in PAIRS if p.judge_api_id == "llama/judge")
    assert llama_only["a"].false_passes == 1 and llama_only["b"].false_failures == 0


@pytest.mark.parametrize(
    ("share", "released"),
    [(0.85, True), (17 / 20, True), (0.8499, False), (0.849999, False), (1.0, True), (0.0, False)],
)
def test_release_gate_at_the_85_percent_boundary(share: float, released: bool) -> None:
    assert release_gate(share) is released


def test_release_gate_on_counts_of_exactly_85_percent() -> None:
    # 17 of 20 agree (85%) releases; 16 of 20 (80%) does not.
    def pairs(agreed: int) -> list[PairedGrade]:
        return [
            PAIRS[0].model_copy(
                update={"item_id": f"r{n}", "person": "pass" if n < agreed else "fail"}
            )
            for n in range(20)
        ]

    assert calibrate(pairs(17)).release_ok is True
    assert calibrate(pairs(16)).release_ok is False
    assert release_gate(0.80, threshold=0.8) is True


def test_agreement_needs_pairs() -> None:
    with pytest.raises(ValueError):
        agreement([])


# --- second look ----------------------------------------------------------------------------


def grade(
    criterion: str = "uses_evidence",
    outcome: str = "pass",
    confidence: float | None = 0.9,
    judge: str = "judgeco/j1",
) -> GradeRecord:
    probabilities = None
    if outcome != "ungraded":
        rest = [o for o in ("pass", "partial", "fail") if o != outcome]
        probabilities = {outcome: 0.9, rest[0]: 0.05, rest[1]: 0.05}
    return GradeRecord(
        case_key="pm/x",
        case_version="0" * 16,
        input_id="main",
        criterion_id=criterion,
        rubric_version="1" * 16,
        outcome=outcome,
        probabilities=probabilities,
        confidence=confidence if outcome != "ungraded" else None,
        reason="r",
        judge_api_id=judge,
        judge_company="JudgeCo",
        judge_family="judge",
        attempts=1,
        simulated=False,
        request_hashes=("a" * 64,),
        usage=(None,),
    )


def test_confidence_of_exactly_65_percent_is_not_queued() -> None:
    assert SECOND_LOOK_CONFIDENCE == 0.65
    assert low_confidence("r1", [grade(confidence=0.65)]) == []
    [item] = low_confidence("r1", [grade(confidence=0.6499)])
    assert (item.run_id, item.reason, item.criterion_id) == (
        "r1",
        "low_confidence",
        "uses_evidence",
    )
    assert item.judge_api_id == "judgeco/j1" and "65%" in item.detail
    [ungraded] = low_confidence("r1", [grade(outcome="ungraded")])
    assert ungraded.reason == "ungraded"


@pytest.mark.parametrize(
    ("dm", "review", "queued"),
    [
        (80.0, 3, False),  # 80 vs 50: exactly 30 apart
        (80.5, 3, True),  # 30.5 apart
        (20.0, 3, False),  # 20 vs 50: exactly 30, the other way
        (19.9, 3, True),
        (70.0, 5, False),  # 70 vs 100
        (69.9, 5, True),
        (0.0, 1, False),
        (100.0, 1, True),
        (None, 3, False),  # nothing to compare yet
        (80.0, None, False),
    ],
)
def test_score_gap_of_exactly_30_points_is_not_queued(
    dm: float | None, review: int | None, queued: bool
) -> None:
    item = score_gap("r1", dm, review)
    assert (item is not None) is queued
    if item is not None:
        assert item.reason == "score_gap"


def test_second_look_from_a_runs_grades_and_review() -> None:
    grades = [grade(f"c{n}", "pass") for n in range(4)] + [grade("c4", "fail")]
    assert decision_model_score(grades) == 80.0  # 100 × (1 + 1 + 1 + 1 + 0) / 5
    assert second_look("r1", grades=grades, review=3) == ()  # 80 vs 50: exactly 30
    [gap] = second_look("r1", grades=grades, review=2)  # 80 vs 25
    assert gap.reason == "score_gap" and "55.0 points" in gap.detail
    # An ungraded criterion leaves the DM score pending: queued as ungraded, no gap yet.
    pending = [*grades[:4], grade("c4", "ungraded")]
    assert decision_model_score(pending) is None
    assert [q.reason for q in second_look("r1", grades=pending, review=1)] == ["ungraded"]


def test_inconclusive_browser_checks_and_navigator_splits_are_queued() -> None:
    browser = {
        "cta_visible": CheckResult("inconclusive", "the agent got stuck on step 2", "browser:x@1"),
        "no_gradients": CheckResult("pass", "none found", "browser:x@1"),
        "one_font": CheckResult("fail", "three font families", "browser:x@1"),
    }
    [item] = second_look("r2", browser=browser)
    assert (item.reason, item.criterion_id, item.detail) == (
        "inconclusive_browser_check",
        "cta_visible",
        "the agent got stuck on step 2",
    )
    judgement = NavigatorJudgement(
        case_key="navigator/x",
        case_version="0" * 16,
        input_id="a",
        criteria=(
            CriterionPair(
                criterion_id="split",
                grades=(grade("split", "pass"), grade("split", "fail", judge="other/j2")),
            ),
            CriterionPair(
                criterion_id="near",
                grades=(grade("near", "pass"), grade("near", "partial", judge="other/j2")),
            ),
            CriterionPair(
                criterion_id="unsure",
                grades=(grade("unsure", "pass", 0.5), grade("unsure", "pass", judge="other/j2")),
            ),
        ),
    )
    queue = second_look("r3", navigator=judgement)
    assert [(q.reason, q.criterion_id) for q in queue] == [
        ("judge_disagreement", "split"),
        ("low_confidence", "unsure"),
    ]
    assert judgement.needs_person  # the pass/fail split; pass vs partial is not one


# --- Navigator classic v1 -------------------------------------------------------------------

STRONG = {"accuracy": 5.0, "clarity": 4.0, "tone": 5.0}
ONE_AT_3 = {"accuracy": 5.0, "clarity": 3.0, "tone": 5.0}
ONE_JUST_ABOVE_3 = {"accuracy": 5.0, "clarity": 3.5, "tone": 5.0}


@pytest.mark.parametrize(
    ("stored", "dimensions", "incomplete", "shown", "label"),
    [
        # a dimension at exactly 3 caps a stored 5 at 4 and labels it mixed
        (5.0, ONE_AT_3, False, 4.0, "mixed"),
        # the cap applies to any stored overall above 4, not only to 5
        (4.5, ONE_AT_3, False, 4.0, "mixed"),
        # a stored overall of exactly 4 is not above 4: shown as stored, not labelled mixed
        (4.0, ONE_AT_3, False, 4.0, "clean"),
        # a low overall with a weak dimension stays as it is
        (2.0, {"accuracy": 1.0}, False, 2.0, "clean"),
        # every dimension above 3 and complete: the 5 shows
        (5.0, STRONG, False, 5.0, "clean"),
        (5.0, ONE_JUST_ABOVE_3, False, 5.0, "clean"),
        # every dimension above 3 but the output is incomplete: never a displayed 5
        (5.0, STRONG, True, 4.0, "incomplete"),
        # incomplete below 5: the number stands, the row is flagged for review
        (4.5, STRONG, True, 4.5, "incomplete"),
        # weak dimension and incomplete: the mixed cap wins the label
        (5.0, ONE_AT_3, True, 4.0, "mixed"),
        (0.0, {"accuracy": 0.0}, False, 0.0, "clean"),
    ],
)
def test_display_rule(
    stored: float, dimensions: dict[str, float], incomplete: bool, shown: float, label: str
) -> None:
    display = display_overall(stored, dimensions, incomplete)
    assert display.stored_overall == stored  # the stored score is never rewritten
    assert display.displayed_overall == shown
    assert display.label == label
    assert display.needs_review is incomplete


@pytest.mark.parametrize(
    ("stored", "dimensions"),
    [(5.5, STRONG), (-1.0, STRONG), (4.0, {"accuracy": 6.0}), (4.0, {})],
)
def test_display_rule_rejects_out_of_range_or_missing_dimensions(
    stored: float, dimensions: dict[str, float]
) -> None:
    with pytest.raises(ValueError):
        display_overall(stored, dimensions, False)


@pytest.mark.parametrize(
    ("output", "finish", "budget", "used", "incomplete", "confidence", "says"),
    [
        ("A full answer.", "stop", 500, 120, False, "high", "finish_reason=stop"),
        ("A full answer.", "STOP", None, None, False, "high", "finish_reason=stop"),
        ("A cut-off ans", "length", 500, 500, True, "high", "token budget"),
        ("Partial", "content_filter", 500, 20, True, "high", "filter"),
        ("Calling a tool", "tool_calls", 500, 20, True, "medium", "not a normal end"),
        ("Budget spent", None, 500, 500, True, "medium", "whole budget of 500"),
        ("Under budget", None, 500, 499, False, "low", "499 of 500"),
        ("Nothing stored", None, None, None, False, "low", "no finish reason or token budget"),
        ("   \n", "stop", 500, 0, True, "high", "empty"),
    ],
)
def test_completeness_flags(
    output: str,
    finish: str | None,
    budget: int | None,
    used: int | None,
    incomplete: bool,
    confidence: str,
    says: str,
) -> None:
    before = output
    flags = completeness(output, finish, budget, used)
    assert output == before  # read only
    assert flags.output_incomplete is incomplete
    assert flags.completeness_confidence == confidence
    assert says in flags.completeness_reason


def test_an_incomplete_output_never_shows_as_a_clean_five() -> None:
    flags = completeness("The plan is: 1. migrate the", "length", 64, 64)
    display = display_overall(5.0, STRONG, flags.output_incomplete)
    assert (display.displayed_overall, display.label, display.needs_review) == (
        4.0,
        "incomplete",
        True,
    )
