"""UseCaseRank scores: expectations worked out by hand in the comments."""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.scores.usecase import (
    AUTONOMY_MISMATCH,
    COST_MISMATCH,
    EVIDENCE_HASH_MISMATCH,
    IMPLAUSIBLE_THROUGHPUT,
    RETRIES_VS_FIRST_TRY,
    STEP_INS_EXCEED_TURNS,
    Clearance,
    MetricWeights,
    UseCaseRun,
    bradley_terry,
    hard_flags,
    recency,
    trend,
    usecase_board,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
LOG = "x" * 200  # a substantial evidence log: +20 trust


def uc(
    run_id: str,
    *,
    model: str = "m",
    outcome: str = "success",
    first_try: bool = True,
    retries: int = 0,
    step_ins: int = 0,
    turns: int = 5,
    wall: float = 100.0,
    cost: Decimal | None = Decimal(1),
    days_old: float = 0.0,
    published_days_ago: float | None = None,
    replaced_days_ago: float | None = None,
    **extra: object,
) -> UseCaseRun:
    run_at = NOW - timedelta(days=days_old)
    published = run_at if published_days_ago is None else NOW - timedelta(days=published_days_ago)
    replaced = None if replaced_days_ago is None else NOW - timedelta(days=replaced_days_ago)
    fields: dict[str, object] = {
        "run_id": run_id,
        "use_case": "u",
        "model": model,
        "outcome": outcome,
        "first_try": first_try,
        "retries": retries,
        "step_ins": step_ins,
        "turns": turns,
        "wall_time_s": wall,
        "cost_usd": cost,
        "evidence_log": LOG,
        "run_at": run_at,
        "published_at": published,
        "replaced_at": replaced,
    }
    fields.update(extra)
    return UseCaseRun(**fields)  # type: ignore[arg-type]


def runs_by_id(board: object) -> dict[str, dict[str, object]]:
    return {r["run_id"]: r for r in board.usecase_runs.to_dicts()}  # type: ignore[attr-defined]


def groups_by_name(board: object) -> dict[str, dict[str, object]]:
    return {g["group"]: g for g in board.usecase_groups.to_dicts()}  # type: ignore[attr-defined]


# Run scores ---------------------------------------------------------------------------------


def test_run_score_from_the_five_metrics() -> None:
    runs = [
        # all five metrics 1 (cheapest, fastest, no step-in, first try): 100
        uc("a"),
        # partial: outcome 0.5; cost per success = 1 × (1 + 1) ÷ 0.5 = 4 → 1/4 = 0.25;
        # speed 100/200 = 0.5; autonomy 1/(1 + 1) = 0.5; first try 1/(1 + 1) = 0.5
        # score = 100 × (0.40 × 0.5 + 0.15 × (0.25 + 0.5 + 0.5 + 0.5)) = 20 + 26.25 = 46.25
        uc("b", outcome="partial", retries=1, first_try=False, wall=200.0, step_ins=1),
        # failed: outcome, cost efficiency and speed 0 (its 50 s is not the fastest: failed
        # runs are left out of it); autonomy 1, first try 1: 100 × 0.30 = 30
        uc("c", outcome="fail", wall=50.0),
    ]
    rows = runs_by_id(usecase_board(runs, as_of=NOW))
    assert rows["a"]["score"] == pytest.approx(100.0)
    assert rows["b"]["score"] == pytest.approx(46.25)
    assert rows["c"]["score"] == pytest.approx(30.0)
    assert (rows["a"]["cost_per_success_usd"], rows["b"]["cost_per_success_usd"]) == ("1", "4")
    assert rows["c"]["cost_per_success_usd"] is None and rows["c"]["cost_usd"] == "1"
    assert rows["b"]["metric_cost_efficiency"] == pytest.approx(0.25)


def test_weights_are_a_parameter_and_are_normalised() -> None:
    runs = [uc("a"), uc("b", outcome="partial", retries=1, first_try=False, wall=200.0)]
    # outcome only: b = 100 × 0.5 = 50, whether the weights say 1 or 2
    for weight in (1.0, 2.0):
        only = MetricWeights(weight, 0.0, 0.0, 0.0, 0.0)
        assert runs_by_id(usecase_board(runs, as_of=NOW, weights=only))["b"]["score"] == 50.0
    with pytest.raises(ValueError):
        MetricWeights(0.0, 0.0, 0.0, 0.0, 0.0)


def test_cost_per_success_is_exact() -> None:
    # 0.0000015 × (1 + 2 retries) ÷ 0.5 = 0.000009
    run = uc("p", outcome="partial", first_try=False, retries=2, cost=Decimal("0.0000015"))
    row = runs_by_id(usecase_board([run], as_of=NOW))["p"]
    assert row["cost_per_success_usd"] == "0.000009"


# Trust and weights ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"evidence_log": "x" * 199}, 60.0),  # 50 + 10 (no flag); 199 characters: no +20
        ({}, 80.0),  # 50 + 20 + 10
        ({"warnings": ("model_unpriced",)}, 75.0),  # 80 − 5
        ({"warnings": ("model_unpriced", "long_context_unpriced")}, 70.0),  # 80 − 10
        ({"step_ins": 9, "turns": 3}, 70.0),  # a hard flag: 50 + 20
        # short log, a flag and eleven warnings: 50 − 55 = −5 → 0
        (
            {
                "evidence_log": "",
                "step_ins": 9,
                "turns": 3,
                "warnings": tuple(f"w{i}" for i in range(11)),
            },
            0.0,
        ),
    ],
)
def test_trust(changes: dict[str, object], expected: float) -> None:
    row = runs_by_id(usecase_board([uc("r", **changes)], as_of=NOW))["r"]
    assert row["trust"] == expected


def test_recency_half_life_is_90_days() -> None:
    assert recency(NOW, NOW) == 1.0
    assert recency(NOW - timedelta(days=90), NOW) == pytest.approx(0.5)
    assert recency(NOW - timedelta(days=180), NOW) == pytest.approx(0.25)
    assert recency(NOW + timedelta(days=3), NOW) == 1.0  # dated after as_of: age 0
    # Ages count in whole UTC days: earlier the same day is new; one day back, one day old.
    midnight = NOW.replace(hour=0, minute=0, second=0, microsecond=0)
    assert recency(midnight, NOW.replace(hour=23, minute=59)) == 1.0
    assert recency(midnight - timedelta(seconds=1), midnight) == pytest.approx(0.5 ** (1 / 90))


def test_group_weighted_mean_n_eff_and_clipped_interval() -> None:
    # Trust 80 each; ages 0, 90, 180 days → weights 0.8, 0.4, 0.2.
    # Scores: success 100; partial (cost per success 2 against the cheapest 1: 0.5)
    # 100 × (0.4 × 0.5 + 0.15 × (0.5 + 1 + 1 + 1)) = 72.5; fail 30.
    runs = [
        uc("new"),
        uc("mid", outcome="partial", days_old=90),
        uc("old", outcome="fail", days_old=180),
    ]
    board = usecase_board(runs, as_of=NOW)
    weights = {r["run_id"]: r["weight"] for r in board.usecase_runs.to_dicts()}
    assert weights == pytest.approx({"new": 0.8, "mid": 0.4, "old": 0.2})
    group = groups_by_name(board)["m"]
    # μ = (0.8 × 100 + 0.4 × 72.5 + 0.2 × 30) / 1.4 = 115 / 1.4 = 82.142857…
    mu = 115 / 1.4
    assert group["score"] == pytest.approx(mu)
    # n_eff = 1.4² / (0.64 + 0.16 + 0.04) = 1.96 / 0.84 = 2.3333…
    assert group["n_eff"] == pytest.approx(1.96 / 0.84)
    # variance = Σ w (x − μ)² / Σ w = 836.07 / 1.4 = 597.19;
    # half = 1.645 × sqrt(597.19 / 2.3333) = 1.645 × 15.998 = 26.317
    variance = (0.8 * (100 - mu) ** 2 + 0.4 * (72.5 - mu) ** 2 + 0.2 * (30 - mu) ** 2) / 1.4
    half = 1.645 * math.sqrt(variance / (1.96 / 0.84))
    assert half == pytest.approx(26.317, abs=1e-3)
    assert group["ci_low"] == pytest.approx(mu - half)  # 55.83
    assert group["ci_high"] == 100.0  # 82.14 + 26.32 = 108.46, clipped
    # passes, partials and fails side by side; 3 runs: listed without a rank
    assert (group["passes"], group["partials"], group["fails"], group["runs"]) == (1, 1, 1, 3)
    assert group["pass_rate"] == pytest.approx(1 / 3)
    assert group["rank"] is None


def test_no_interval_when_n_eff_is_at_most_one() -> None:
    single = groups_by_name(usecase_board([uc("only")], as_of=NOW))["m"]
    assert single["n_eff"] == 1.0 and single["ci_low"] is None and single["ci_high"] is None
    # Two runs, but one has trust 0 (short log, a cleared flag, ten warnings: 50 − 50):
    # all the weight is on one run, n_eff = 0.8² / 0.8² = 1 → no interval.
    zero = uc(
        "zero",
        outcome="fail",
        evidence_log="",
        step_ins=9,
        turns=3,
        warnings=tuple(f"w{i}" for i in range(10)),
    )
    cleared = [Clearance("zero", STEP_INS_EXCEED_TURNS, NOW)]
    board = usecase_board([uc("only"), zero], cleared, as_of=NOW)
    assert runs_by_id(board)["zero"]["trust"] == 0.0
    group = groups_by_name(board)["m"]
    assert (group["runs"], group["n_eff"], group["ci_low"]) == (2, 1.0, None)
    assert group["score"] == pytest.approx(100.0)


# Ranks and Bradley–Terry ---------------------------------------------------------------------


def test_five_runs_for_a_rank() -> None:
    runs = [uc(f"a{i}", model="a") for i in range(5)] + [uc(f"b{i}", model="b") for i in range(4)]
    groups = groups_by_name(usecase_board(runs, as_of=NOW))
    assert (groups["a"]["rank"], groups["b"]["rank"]) == (1, None)


def test_settings_make_a_separate_group() -> None:
    runs = [uc("on", settings="thinking on"), uc("off", settings="thinking off")]
    assert set(groups_by_name(usecase_board(runs, as_of=NOW))) == {
        "m · thinking on",
        "m · thinking off",
    }


@pytest.mark.parametrize(("pairs", "blended", "score"), [(19, False, 100.0), (20, True, 85.0)])
def test_bradley_terry_blend_from_20_pairs(pairs: int, blended: bool, score: float) -> None:
    # Every run is identical (score 100), so every rerun pair is a tie: both groups have
    # equal strength and a win probability of 0.5. With 20 pairs the score becomes
    # 0.7 × 100 + 0.3 × 100 × 0.5 = 85; with 19 it stays 100.
    runs = [uc(f"a{i}", model="a") for i in range(20)]
    runs += [uc(f"b{i}", model="b", rerun_of=f"a{i}") for i in range(pairs)]
    groups = groups_by_name(usecase_board(runs, as_of=NOW))
    for name in ("a", "b"):
        assert groups[name]["bt_pairs"] == pairs
        assert groups[name]["bt_win_probability"] == pytest.approx(0.5)
        assert groups[name]["blended"] is blended
        assert groups[name]["score"] == pytest.approx(score)
        assert groups[name]["weighted_score"] == pytest.approx(100.0)


def test_bradley_terry_fit_is_the_regularised_maximum() -> None:
    # a beats b 15 times, loses 5; b and c tie 4 times. At the maximum, for each group,
    # wins (plus the virtual half) = expected wins (plus the virtual game's π/(π + 1)).
    games = [("a", "b", 1.0)] * 15 + [("a", "b", 0.0)] * 5 + [("b", "c", 0.5)] * 4
    pi = bradley_terry(games)
    expected_wins = {
        "a": 20 * pi["a"] / (pi["a"] + pi["b"]),
        "b": 20 * pi["b"] / (pi["a"] + pi["b"]) + 4 * pi["b"] / (pi["b"] + pi["c"]),
        "c": 4 * pi["c"] / (pi["b"] + pi["c"]),
    }
    actual_wins = {"a": 15.0, "b": 7.0, "c": 2.0}
    for group, strength in pi.items():
        virtual = strength / (strength + 1.0)
        assert actual_wins[group] + 0.5 == pytest.approx(expected_wins[group] + virtual)
    assert pi["a"] > pi["b"]
    # symmetric ties: every strength is the reference's, exactly solvable by hand
    assert bradley_terry([("x", "y", 0.5)] * 4) == pytest.approx({"x": 1.0, "y": 1.0})


def test_rerun_on_the_same_group_is_not_a_pair() -> None:
    runs = [uc("a0", model="a"), uc("a1", model="a", rerun_of="a0")]
    assert groups_by_name(usecase_board(runs, as_of=NOW))["a"]["bt_pairs"] == 0


# Trend ---------------------------------------------------------------------------------------


def _trend_runs() -> list[UseCaseRun]:
    """Then (as of 7 days ago): a 100 (1st), b 72.5 (2nd), d 30 (3rd).

    Now: a's runs were replaced 2 days ago by partial runs with one step-in; with no
    success left the cheapest cost per success is 2 (a partial's), so
    b = 100 × (0.2 + 0.15 × 4) = 80, a = 100 × (0.2 + 0.15 × (1 + 1 + 0.5 + 1)) = 72.5,
    d = 30, and c (new, fails with one step-in) = 100 × 0.15 × (0.5 + 1) = 22.5.
    So b 1st (up), a 2nd (down), d 3rd (same), c 4th (new).
    """
    runs = []
    for i in range(5):
        runs.append(uc(f"a{i}", model="a", days_old=30, replaced_days_ago=2))
        runs.append(uc(f"a{i}'", model="a", outcome="partial", step_ins=1, days_old=2))
        runs.append(uc(f"b{i}", model="b", outcome="partial", days_old=30))
        runs.append(uc(f"d{i}", model="d", outcome="fail", days_old=30))
        runs.append(uc(f"c{i}", model="c", outcome="fail", step_ins=1, days_old=2))
    return runs


def test_trend_arrows_against_the_board_a_week_ago() -> None:
    runs = _trend_runs()
    then = groups_by_name(usecase_board(runs, as_of=NOW - timedelta(days=7)))
    assert {g: then[g]["rank"] for g in then} == {"a": 1, "b": 2, "d": 3}
    now = groups_by_name(usecase_board(runs, as_of=NOW))
    assert now["b"]["score"] == pytest.approx(80.0)
    assert now["a"]["score"] == pytest.approx(72.5)
    assert {g: (now[g]["rank"], now[g]["trend"]) for g in now} == {
        "b": (1, "up"),
        "a": (2, "down"),
        "d": (3, "same"),
        "c": (4, "new"),
    }
    # the replaced runs are gone from the board now, and were on it then
    assert not {"a0", "a4"} & set(runs_by_id(usecase_board(runs, as_of=NOW)))


def test_no_trend_without_ranked_history() -> None:
    # 27 days ago the board had runs; 7 days before that (34 days ago) it had none.
    board = usecase_board(_trend_runs(), as_of=NOW - timedelta(days=27))
    ranked = [g for g in board.usecase_groups.to_dicts() if g["rank"] is not None]
    assert ranked and all(g["trend"] is None for g in ranked)
    assert trend(None, 1, True) is None  # unranked now: no arrow either


def test_board_as_of_a_past_date_uses_what_was_published_then() -> None:
    runs = [uc("early", days_old=10), uc("late", days_old=10, published_days_ago=1)]
    past = runs_by_id(usecase_board(runs, as_of=NOW - timedelta(days=5)))
    assert set(past) == {"early"}
    assert set(runs_by_id(usecase_board(runs, as_of=NOW))) == {"early", "late"}


# Hard flags ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "flag", "raised"),
    [
        # computed 1.00: a claim within 25% passes, past it fails
        ({"claimed_cost_usd": Decimal("1.25")}, COST_MISMATCH, False),
        ({"claimed_cost_usd": Decimal("1.2500001")}, COST_MISMATCH, True),
        ({"claimed_cost_usd": Decimal("0.75")}, COST_MISMATCH, False),
        ({"claimed_cost_usd": Decimal("0.7499999")}, COST_MISMATCH, True),
        ({"cost": Decimal(0), "claimed_cost_usd": Decimal(0)}, COST_MISMATCH, False),
        ({"cost": Decimal(0), "claimed_cost_usd": Decimal("0.01")}, COST_MISMATCH, True),
        ({"cost": None, "claimed_cost_usd": Decimal(5)}, COST_MISMATCH, False),  # unpriced
        # 0 step-ins autonomous; 1–3 lightly guided; 4+ heavily guided
        ({"step_ins": 0, "claimed_autonomy": "autonomous"}, AUTONOMY_MISMATCH, False),
        ({"step_ins": 1, "claimed_autonomy": "autonomous"}, AUTONOMY_MISMATCH, True),
        ({"step_ins": 3, "claimed_autonomy": "lightly_guided"}, AUTONOMY_MISMATCH, False),
        ({"step_ins": 4, "claimed_autonomy": "lightly_guided"}, AUTONOMY_MISMATCH, True),
        ({"step_ins": 4, "claimed_autonomy": "heavily_guided"}, AUTONOMY_MISMATCH, False),
        # the log's own hash (any case) passes; another hash fails
        (
            {"evidence_sha256": hashlib.sha256(LOG.encode()).hexdigest().upper()},
            EVIDENCE_HASH_MISMATCH,
            False,
        ),
        ({"evidence_sha256": "0" * 64}, EVIDENCE_HASH_MISMATCH, True),
        # 10,000 tokens in 10 s is exactly 1,000/s: passes; one more token fails
        ({"output_tokens": 10_000, "wall": 10.0}, IMPLAUSIBLE_THROUGHPUT, False),
        ({"output_tokens": 10_001, "wall": 10.0}, IMPLAUSIBLE_THROUGHPUT, True),
        ({"output_tokens": 1, "wall": 0.0}, IMPLAUSIBLE_THROUGHPUT, True),
        ({"step_ins": 5, "turns": 5}, STEP_INS_EXCEED_TURNS, False),
        ({"step_ins": 6, "turns": 5}, STEP_INS_EXCEED_TURNS, True),
        ({"first_try": True, "retries": 0}, RETRIES_VS_FIRST_TRY, False),
        ({"first_try": True, "retries": 1}, RETRIES_VS_FIRST_TRY, True),
        ({"first_try": False, "retries": 0}, RETRIES_VS_FIRST_TRY, True),
        ({"first_try": False, "retries": 1}, RETRIES_VS_FIRST_TRY, False),
        # first try = succeeded on the first attempt: an honest failure is not flagged
        ({"outcome": "fail", "first_try": False, "retries": 0}, RETRIES_VS_FIRST_TRY, False),
        ({"outcome": "partial", "first_try": False, "retries": 0}, RETRIES_VS_FIRST_TRY, False),
        ({"outcome": "fail", "first_try": False, "retries": 2}, RETRIES_VS_FIRST_TRY, False),
        ({"outcome": "fail", "first_try": True, "retries": 1}, RETRIES_VS_FIRST_TRY, True),
        ({"outcome": "partial", "first_try": True, "retries": 3}, RETRIES_VS_FIRST_TRY, True),
    ],
)
def test_hard_flag_boundaries(changes: dict[str, object], flag: str, raised: bool) -> None:
    assert (flag in hard_flags(uc("r", **changes))) is raised


def test_under_review_until_every_flag_is_cleared() -> None:
    flagged = uc("f", claimed_cost_usd=Decimal(2), step_ins=6, turns=5)
    assert hard_flags(flagged) == (COST_MISMATCH, STEP_INS_EXCEED_TURNS)
    runs = [uc("ok"), flagged]

    board = usecase_board(runs, as_of=NOW)
    row = runs_by_id(board)["f"]
    assert row["under_review"] and row["flags"] == "cost_mismatch,step_ins_exceed_turns"
    group = groups_by_name(board)["m"]
    assert (group["runs"], group["under_review_runs"]) == (1, 1)  # listed, not counted

    one = [Clearance("f", COST_MISMATCH, NOW - timedelta(days=1))]
    assert runs_by_id(usecase_board(runs, one, as_of=NOW))["f"]["under_review"]
    both = [*one, Clearance("f", STEP_INS_EXCEED_TURNS, NOW - timedelta(days=1))]
    cleared = usecase_board(runs, both, as_of=NOW)
    row = runs_by_id(cleared)["f"]
    assert not row["under_review"] and row["cleared_flags"] == row["flags"]
    assert row["trust"] == 70.0  # a flag was raised: no +10, cleared or not
    assert groups_by_name(cleared)["m"]["runs"] == 2
    # a clearance made after as_of does not count yet
    later = [Clearance("f", f, NOW + timedelta(days=1)) for f in row["flags"].split(",")]
    assert runs_by_id(usecase_board(runs, later, as_of=NOW))["f"]["under_review"]
    with pytest.raises(ValueError, match="hard flag"):
        Clearance("f", "model_unpriced", NOW)


def test_an_honest_failure_counts_in_its_group() -> None:
    failed = uc("f", outcome="fail", first_try=False, retries=0)
    contradicted = uc("c", outcome="success", first_try=False, retries=0)
    board = usecase_board([uc("ok"), failed, contradicted], as_of=NOW)
    rows = runs_by_id(board)
    assert not rows["f"]["under_review"] and rows["f"]["flags"] == ""
    assert rows["c"]["under_review"] and rows["c"]["flags"] == RETRIES_VS_FIRST_TRY
    group = groups_by_name(board)["m"]
    assert (group["runs"], group["under_review_runs"]) == (2, 1)  # the failure is counted


# Properties ----------------------------------------------------------------------------------

run_strategy = st.builds(
    lambda i, outcome, retries, step_ins, wall, cost, days: uc(
        f"r{i}",
        model=f"m{i % 3}",
        outcome=outcome,
        first_try=retries == 0,
        retries=retries,
        step_ins=step_ins,
        turns=step_ins + 1,
        wall=wall,
        cost=cost,
        days_old=days,
    ),
    st.integers(0, 10_000),
    st.sampled_from(["success", "partial", "fail"]),
    st.integers(0, 5),
    st.integers(0, 8),
    st.floats(0.0, 1e5),
    st.one_of(st.none(), st.decimals("0", "100", places=6)),
    st.floats(0.0, 1000.0),
)


@settings(max_examples=80, deadline=None)
@given(
    runs=st.lists(run_strategy, min_size=1, max_size=15, unique_by=lambda r: r.run_id),
    weights=st.tuples(*[st.floats(0.0, 5.0)] * 5).filter(lambda w: sum(w) > 0.01),
)
def test_scores_and_intervals_stay_in_0_100(
    runs: list[UseCaseRun], weights: tuple[float, float, float, float, float]
) -> None:
    board = usecase_board(runs, as_of=NOW, weights=MetricWeights(*weights))
    for row in board.runs:
        assert -1e-9 <= row.score <= 100.0 + 1e-9
        assert 0.0 <= row.trust <= 100.0
    for group in board.groups:
        for value in (group.score, group.ci_low, group.ci_high):
            assert value is None or -1e-9 <= value <= 100.0 + 1e-9
        if group.ci_low is not None:
            assert group.ci_low <= group.weighted_score <= group.ci_high  # type: ignore[operator]


# Near copies and plausible cost (the rules themselves; test_usecase_trust goes end to end)


def test_token_counts_within_five_percent_with_the_same_evidence_are_one_run() -> None:
    from bench_pipeline.scores.usecase import duplicates

    log = "".join(f"line {i}\n" for i in range(10))
    base = {"evidence_log": log, "token_counts": (20_000, 1_000, 0, 0, 0)}
    runs = [
        uc("a", published_days_ago=3, **base),
        uc("b", published_days_ago=2, **base | {"token_counts": (21_000, 1_050, 0, 0, 0)}),
        uc("c", published_days_ago=1, **base | {"token_counts": (20_000, 1_053, 0, 0, 0)}),
        # one line of ten changed: 9 of 10 shared, still a near copy
        uc("d", **base | {"evidence_log": log.replace("line 3", "line three")}),
        uc("e", **base | {"evidence_log": "".join(f"other {i}\n" for i in range(10))}),
        uc("f", model="m2", **base),  # another model: never a duplicate of m's runs
    ]
    # exactly 5% (21,000 vs 20,000; 1,050 vs 1,000) is close; 1,053 vs 1,000 is not
    assert duplicates(runs) == {"b": "a", "d": "a"}


def test_evidence_overlap_counts_the_shorter_logs_distinct_lines() -> None:
    from bench_pipeline.scores.usecase import evidence_lines, evidence_overlap

    log = evidence_lines("a\nb\n\n  c  \nd\ne\n")
    assert evidence_lines(" c \r\nc\n") == frozenset({"c"})
    assert evidence_overlap(log, log) == 1.0
    padded = evidence_lines("a\nb\nc\nd\ne\n" + "x\n" * 3 + "".join(f"y{i}\n" for i in range(50)))
    assert evidence_overlap(log, padded) == 1.0  # padding a copy does not hide it
    assert evidence_overlap(log, evidence_lines("a\nb\nc\nd\nz\n")) == 0.8
    assert evidence_overlap(log, frozenset()) == 0.0


def test_a_claimed_cost_is_implausible_only_above_every_token_at_the_dearest_rate() -> None:
    from bench_pipeline.scores.usecase import IMPLAUSIBLE_COST, plausible_cost_bound

    tokens = {"token_counts": (90_000, 10_000, 50_000, 0, 4_000), "cost": None}
    at = uc("a", claimed_cost_usd=Decimal(1000), **tokens)
    assert plausible_cost_bound(at) == Decimal(1000)  # 100,000 tokens × $10,000 / 1M
    assert IMPLAUSIBLE_COST not in hard_flags(at)
    over = uc("b", claimed_cost_usd=Decimal("1000.000001"), **tokens)
    assert IMPLAUSIBLE_COST in hard_flags(over)
    assert IMPLAUSIBLE_COST not in hard_flags(uc("c", claimed_cost_usd=Decimal(10**9)))
