"""Exact run costs: hand-computed examples of every rule in `bench_pipeline.runs.costing`."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from bench_pipeline.providers import Usage
from bench_pipeline.runs.costing import (
    LONG_CONTEXT_UNPRICED,
    MODEL_UNPRICED,
    USAGE_INCONSISTENT,
    CostResult,
    LongContextTier,
    Rates,
    cost_of,
    cost_of_all,
    format_usd,
    rate_in_effect,
)

pytestmark = pytest.mark.unit

D = Decimal

# A Claude-Sonnet-like price row: $3 in, $15 out, $0.30 cached, $3.75 cache write per 1M
# tokens; above 200,000 prompt tokens per request: $6, $22.50, $0.60, $7.50.
SONNET = Rates(
    effective_date=date(2025, 8, 1),
    input=D("3"),
    output=D("15"),
    cached_input=D("0.30"),
    cache_write=D("3.75"),
    long_context=LongContextTier(
        threshold_tokens=200_000,
        input=D("6"),
        output=D("22.50"),
        cached_input=D("0.60"),
        cache_write=D("7.50"),
    ),
)


def _one(**counts: int) -> Usage:
    return Usage(per_request=True, **counts)


def test_input_and_output() -> None:
    # 1,000 × $3 + 500 × $15 = $10,500 per 1M → $0.0105
    assert cost_of(_one(prompt_tokens=1000, completion_tokens=500), SONNET) == CostResult(
        D("0.0105"), []
    )


def test_cached_input_is_priced_apart_and_reasoning_is_not_added_to_output() -> None:
    usage = _one(
        prompt_tokens=10_000, cached_tokens=8_000, completion_tokens=200, reasoning_tokens=150
    )
    # uncached 2,000 × 3 = 6,000; cached 8,000 × 0.30 = 2,400; output 200 × 15 = 3,000
    # (the 150 reasoning tokens are inside the 200) → 11,400 / 1M
    assert cost_of(usage, SONNET).cost_usd == D("0.0114")


def test_cache_write_is_priced_apart() -> None:
    usage = _one(prompt_tokens=5_000, cache_write_tokens=4_000, completion_tokens=100)
    # uncached 1,000 × 3 = 3,000; write 4,000 × 3.75 = 15,000; output 100 × 15 = 1,500
    assert cost_of(usage, SONNET).cost_usd == D("0.0195")


def test_all_four_categories_together() -> None:
    usage = _one(
        prompt_tokens=12_345, cached_tokens=10_000, cache_write_tokens=2_000, completion_tokens=678
    )
    # 345 × 3 = 1,035; 10,000 × 0.30 = 3,000; 2,000 × 3.75 = 7,500; 678 × 15 = 10,170
    assert cost_of(usage, SONNET).cost_usd == D("0.021705")


def test_long_context_tier_applies_per_request() -> None:
    above = _one(prompt_tokens=250_000, cached_tokens=50_000, completion_tokens=1_000)
    # tier rates: 200,000 × 6 = 1,200,000; 50,000 × 0.60 = 30,000; 1,000 × 22.50 = 22,500
    assert cost_of(above, SONNET) == CostResult(D("1.2525"), [])
    at_threshold = _one(prompt_tokens=200_000, completion_tokens=1_000)
    # not above the threshold: base rates, 600,000 + 15,000
    assert cost_of(at_threshold, SONNET) == CostResult(D("0.615"), [])


def test_a_total_that_may_have_crossed_the_threshold_gets_base_rates_and_a_warning() -> None:
    total = Usage(prompt_tokens=250_000, completion_tokens=1_000)  # per_request=False
    # base rates: 750,000 + 15,000
    assert cost_of(total, SONNET) == CostResult(D("0.765"), [LONG_CONTEXT_UNPRICED])
    small_total = Usage(prompt_tokens=150_000, completion_tokens=1_000)
    assert cost_of(small_total, SONNET) == CostResult(D("0.465"), [])


def test_per_request_costs_of_a_run_are_summed() -> None:
    usages = [
        _one(prompt_tokens=250_000, cached_tokens=50_000, completion_tokens=1_000),  # 1.2525
        _one(prompt_tokens=1_000, completion_tokens=500),  # 0.0105
    ]
    assert cost_of_all(usages, SONNET) == CostResult(D("1.263"), [])
    # The same tokens known only as a total: base rates and the warning.
    # 201,000 × 3 = 603,000; 50,000 × 0.30 = 15,000; 1,500 × 15 = 22,500
    assert cost_of(Usage.total(usages), SONNET) == CostResult(D("0.6405"), [LONG_CONTEXT_UNPRICED])
    assert not Usage.total(usages).per_request
    assert Usage.total(usages[:1]).per_request


def test_a_missing_rate_makes_the_cost_unknown_not_partial() -> None:
    assert cost_of(_one(prompt_tokens=10), None) == CostResult(None, [MODEL_UNPRICED])
    no_output = Rates(effective_date=date(2025, 1, 1), input=D("1"))
    assert cost_of(_one(prompt_tokens=10, completion_tokens=5), no_output) == CostResult(
        None, [MODEL_UNPRICED]
    )
    # A category without tokens needs no rate.
    no_cache_rates = Rates(effective_date=date(2025, 1, 1), input=D("1"), output=D("2"))
    assert cost_of(_one(prompt_tokens=10, completion_tokens=5), no_cache_rates).cost_usd == D(
        "0.00002"
    )
    assert cost_of(_one(prompt_tokens=10, cached_tokens=4), no_cache_rates) == CostResult(
        None, [MODEL_UNPRICED]
    )
    # A tier that leaves a category unset does not fall back to the base rate.
    partial_tier = Rates(
        effective_date=date(2025, 1, 1),
        input=D("1"),
        output=D("2"),
        cached_input=D("0.1"),
        long_context=LongContextTier(threshold_tokens=100, input=D("2"), output=D("4")),
    )
    assert cost_of(_one(prompt_tokens=200, cached_tokens=50), partial_tier) == CostResult(
        None, [MODEL_UNPRICED]
    )
    assert cost_of(_one(prompt_tokens=200), partial_tier).cost_usd == D("0.0004")


def test_local_models_cost_zero() -> None:
    local = Rates.local_model(date(2025, 1, 1))
    huge = _one(prompt_tokens=5_000_000, cached_tokens=1_000, completion_tokens=900_000)
    assert cost_of(huge, local) == CostResult(D(0), [])
    assert format_usd(cost_of(huge, local).cost_usd) == "0"


def test_inconsistent_usage_is_not_priced() -> None:
    usage = _one(prompt_tokens=100, cached_tokens=80, cache_write_tokens=40)
    assert cost_of(usage, SONNET) == CostResult(None, [USAGE_INCONSISTENT])


def test_costs_are_exact_decimals_published_without_exponent() -> None:
    cheap = Rates(effective_date=date(2025, 1, 1), input=D("0.075"), output=D("0.3"))
    cost = cost_of(_one(prompt_tokens=7), cheap).cost_usd
    assert cost == D("0.000000525")
    assert format_usd(cost) == "0.000000525"
    # Ten requests of 0.1 cent each add up to exactly one cent (no float drift).
    tenth = Rates(effective_date=date(2025, 1, 1), input=D("10"), output=D("0"))
    assert cost_of_all([_one(prompt_tokens=100)] * 10, tenth).cost_usd == D("0.01")
    assert format_usd(D("1.50")) == "1.5"
    assert format_usd(D("1E+1")) == "10"
    assert format_usd(D("1.5E-7")) == "0.00000015"
    assert format_usd(D("0.000")) == "0"
    assert format_usd(None) is None
    with pytest.raises(TypeError):
        format_usd(0.1)  # type: ignore[call-overload]


def test_rates_refuse_floats_and_negative_rates() -> None:
    with pytest.raises(TypeError):
        Rates(effective_date=date(2025, 1, 1), input=0.1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Rates(effective_date=date(2025, 1, 1), output=D("-1"))
    with pytest.raises(TypeError):
        Rates(effective_date=datetime(2025, 1, 1, tzinfo=UTC))


def test_rate_in_effect_picks_the_latest_row_on_or_before_the_run_date() -> None:
    rows = [
        Rates(effective_date=date(2025, 9, 15), input=D("2"), output=D("8")),
        Rates(effective_date=date(2025, 1, 1), input=D("4"), output=D("16")),
        Rates(effective_date=date(2025, 6, 1), input=D("3"), output=D("12")),
    ]
    picked = {
        day: (rate_in_effect(rows, day) or Rates(effective_date=date.min)).effective_date
        for day in (date(2025, 5, 31), date(2025, 6, 1), date(2025, 9, 14), date(2026, 1, 1))
    }
    assert picked == {
        date(2025, 5, 31): date(2025, 1, 1),
        date(2025, 6, 1): date(2025, 6, 1),  # the effective day itself counts
        date(2025, 9, 14): date(2025, 6, 1),
        date(2026, 1, 1): date(2025, 9, 15),
    }
    assert rate_in_effect(rows, date(2024, 12, 31)) is None
    assert rate_in_effect([], date(2025, 1, 1)) is None
    assert rate_in_effect(rows, datetime(2025, 6, 1, 23, 59, tzinfo=UTC)) is rows[2]
    with pytest.raises(ValueError, match="2025-06-01"):
        rate_in_effect([*rows, Rates(effective_date=date(2025, 6, 1))], date(2025, 7, 1))
    # The run is priced by the row in effect on its date.
    usage = _one(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert cost_of(usage, rate_in_effect(rows, date(2025, 7, 4))).cost_usd == D("15")
