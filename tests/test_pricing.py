"""Tests for exact Decimal pricing helpers."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.core.money import per_token_to_per_million
from bench_pipeline.indices.pricing import (
    blended_price,
    blended_prices,
    load_trial_providers,
    prices_disagree,
    prices_disagree_series,
    rate_flag,
)

pytestmark = pytest.mark.unit

# --- per_token_to_per_million -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.000000269", "0.269"),
        ("0.00000125", "1.25"),
        ("0.0000025", "2.5"),
        ("0.000015", "15"),
        ("0.00003", "30"),
        ("0.000000269000", "0.269"),
        ("2.5E-6", "2.5"),
        (" 0.000001 ", "1"),
        ("0", "0"),
        ("0.0000000", "0"),
        ("-0", "0"),
    ],
)
def test_per_token_to_per_million_exact(value: str, expected: str) -> None:
    result = per_token_to_per_million(value)
    assert isinstance(result, Decimal)
    assert result == Decimal(expected)
    # no exponent noise or trailing zeros in the printed form
    assert str(result) == expected


@pytest.mark.parametrize("value", [None, "", "   ", "-1", "-0.000001"])
def test_per_token_missing_or_variable_is_none(value: str | None) -> None:
    assert per_token_to_per_million(value) is None


@pytest.mark.parametrize("value", ["abc", "NaN", "Infinity", "1,5"])
def test_per_token_rejects_non_numbers(value: str) -> None:
    with pytest.raises(ValueError):
        per_token_to_per_million(value)


def test_per_token_rejects_floats() -> None:
    with pytest.raises(TypeError):
        per_token_to_per_million(0.000001)  # type: ignore[arg-type]


def test_per_token_keeps_many_digits_exact() -> None:
    # 30 significant digits: more than the default Decimal context keeps.
    value = "0.000000123456789012345678901234567891"
    assert per_token_to_per_million(value) == Decimal("0.123456789012345678901234567891")


@given(st.decimals(min_value=0, max_value=1, allow_nan=False, allow_infinity=False, places=12))
def test_per_token_round_trips(per_token: Decimal) -> None:
    result = per_token_to_per_million(str(per_token))
    assert result is not None
    assert result / 1_000_000 == per_token
    assert "E" not in str(result)


# --- blended_price --------------------------------------------------------------


def test_blended_price_exact() -> None:
    # (3 * 1.25 + 10) / 4 = 13.75 / 4 = 3.4375
    result = blended_price(Decimal("1.25"), Decimal("10"))
    assert result == Decimal("3.4375")
    assert str(result) == "3.4375"


def test_blended_price_whole_number_has_no_exponent() -> None:
    # (3 * 10 + 10) / 4 = 10
    assert str(blended_price(Decimal("10"), Decimal("10"))) == "10"


def test_blended_price_of_free_model_is_zero() -> None:
    assert blended_price(Decimal(0), Decimal(0)) == Decimal(0)


@pytest.mark.parametrize(
    ("input_rate", "output_rate"),
    [(None, Decimal("10")), (Decimal("1.25"), None), (None, None)],
)
def test_blended_price_missing_rate_is_none(
    input_rate: Decimal | None, output_rate: Decimal | None
) -> None:
    assert blended_price(input_rate, output_rate) is None


def test_blended_price_rejects_float() -> None:
    with pytest.raises(TypeError):
        blended_price(1.25, Decimal("10"))  # type: ignore[arg-type]


def test_blended_price_rejects_negative() -> None:
    with pytest.raises(ValueError):
        blended_price(Decimal("-1"), Decimal("10"))


# --- prices_disagree ------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (Decimal("1.00"), Decimal("1.00"), False),
        # |1.00 - 1.01| = 0.01 <= 0.01 * 1.01 = 0.0101 -> agree
        (Decimal("1.00"), Decimal("1.01"), False),
        # |1.00 - 1.02| = 0.02 > 0.0102 -> disagree, in either order
        (Decimal("1.00"), Decimal("1.02"), True),
        (Decimal("1.02"), Decimal("1.00"), True),
        (Decimal("3"), Decimal("2.5"), True),
        (Decimal("0"), Decimal("0"), False),
        (Decimal("0"), Decimal("0.1"), True),
        # exactly at the tolerance: |100 - 99| = 1 = 0.01 * 100 -> agree
        (Decimal("100"), Decimal("99"), False),
    ],
)
def test_prices_disagree(a: Decimal, b: Decimal, expected: bool) -> None:
    assert prices_disagree(a, b) is expected


@pytest.mark.parametrize(("a", "b"), [(None, Decimal("1")), (Decimal("1"), None), (None, None)])
def test_prices_disagree_false_when_missing(a: Decimal | None, b: Decimal | None) -> None:
    assert prices_disagree(a, b) is False


def test_prices_disagree_custom_tolerance() -> None:
    # |1.00 - 1.04| = 0.04 <= 0.05 * 1.04 = 0.052 -> agree at 5%, not at 1%
    assert prices_disagree(Decimal("1.00"), Decimal("1.04"), rel_tol=Decimal("0.05")) is False
    assert prices_disagree(Decimal("1.00"), Decimal("1.04")) is True


def test_prices_disagree_rejects_bad_tolerance() -> None:
    with pytest.raises(ValueError):
        prices_disagree(Decimal("1"), Decimal("1"), rel_tol=Decimal("-0.01"))
    with pytest.raises(TypeError):
        prices_disagree(Decimal("1"), Decimal("1"), rel_tol=0.01)  # type: ignore[arg-type]


MONEY = pl.Decimal(24, 12)
RATES = st.one_of(
    st.none(),
    st.integers(0, 40).map(lambda units: Decimal(units).scaleb(-12)),  # halves and quarters
    st.decimals(0, 10**6, places=12, allow_nan=False, allow_infinity=False),
    st.sampled_from([Decimal("0.15"), Decimal("0.6"), Decimal("3"), Decimal("999999999999")]),
)


def _blended_one_by_one(inputs: list, outputs: list, dtype: pl.Decimal = MONEY) -> list:
    """The column `blended_price` gives when called row by row (polars rounds into `dtype`)."""
    values = [
        None if i is None or o is None else blended_price(i, o)
        for i, o in zip(inputs, outputs, strict=True)
    ]
    return pl.Series(values, dtype=dtype, strict=False).to_list()


@given(st.lists(st.tuples(RATES, RATES), max_size=60))
def test_blended_prices_are_the_rule_row_by_row(pairs: list) -> None:
    inputs, outputs = [p[0] for p in pairs], [p[1] for p in pairs]
    got = blended_prices(pl.Series(inputs, dtype=MONEY), pl.Series(outputs, dtype=MONEY), MONEY)
    assert got.dtype == MONEY and got.to_list() == _blended_one_by_one(inputs, outputs)


def test_blended_prices_round_a_finer_blend_half_to_even() -> None:
    # (3 × i + o) / 4 in units of 1e-12: 0.5 → 0, 1.5 → 2, 2.5 → 2, 0.75 → 1, 3.25 → 3
    units = [(0, 2), (0, 6), (0, 10), (1, 0), (4, 1)]
    inputs = [Decimal(i).scaleb(-12) for i, _ in units]
    outputs = [Decimal(o).scaleb(-12) for _, o in units]
    got = blended_prices(pl.Series(inputs, dtype=MONEY), pl.Series(outputs, dtype=MONEY), MONEY)
    assert got.to_list() == [Decimal(u).scaleb(-12) for u in (0, 2, 2, 1, 3)]
    assert got.to_list() == _blended_one_by_one(inputs, outputs)


def test_blended_prices_refuse_a_negative_rate_as_the_rule_does() -> None:
    inputs = pl.Series([Decimal("1"), Decimal("-0.5")], dtype=MONEY)
    outputs = pl.Series([Decimal("1"), Decimal("1")], dtype=MONEY)
    with pytest.raises(ValueError, match="input_per_m must be a finite, non-negative"):
        blended_prices(inputs, outputs, MONEY)


def test_blended_prices_of_another_scale_follow_the_rule() -> None:
    coarse = pl.Decimal(10, 2)
    inputs, outputs = (
        [Decimal("0.01"), Decimal("0.03"), None],
        [Decimal("0"), Decimal("0.01"), None],
    )
    got = blended_prices(pl.Series(inputs, dtype=coarse), pl.Series(outputs, dtype=coarse), MONEY)
    assert got.to_list() == _blended_one_by_one(inputs, outputs)


def _at_tolerance(hundreds: int, nudge: int) -> tuple[Decimal, Decimal]:
    """Two rates 1% apart exactly (`nudge` 0), or one unit of 1e-12 either side of it."""
    return Decimal(100 * hundreds).scaleb(-12), Decimal(99 * hundreds + nudge).scaleb(-12)


PAIRS = st.one_of(
    st.tuples(RATES, RATES),
    st.builds(_at_tolerance, st.integers(1, 10**9), st.sampled_from([-1, 0, 1])),
    st.builds(_at_tolerance, st.integers(0, 10**9), st.just(0)).map(lambda p: p[::-1]),
)
TOLERANCES = st.sampled_from([Decimal("0.01"), Decimal("0"), Decimal("0.05"), Decimal("0.125")])


@settings(deadline=None)  # one example builds frames of up to 60 rows: slow on a busy machine
@given(st.lists(PAIRS, max_size=60), TOLERANCES)
def test_prices_disagree_series_is_the_rule_row_by_row(pairs: list, rel_tol: Decimal) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    got = prices_disagree_series(pl.Series(a, dtype=MONEY), pl.Series(b, dtype=MONEY), rel_tol)
    assert got.dtype == pl.Boolean
    assert got.to_list() == [prices_disagree(x, y, rel_tol) for x, y in zip(a, b, strict=True)]


def test_prices_disagree_series_at_the_edges() -> None:
    a = [Decimal("100"), Decimal("99"), Decimal("0"), Decimal("0"), None, Decimal("1"), None]
    b = [Decimal("99"), Decimal("100"), Decimal("0"), Decimal("0.1"), Decimal("1"), None, None]
    got = prices_disagree_series(pl.Series(a, dtype=MONEY), pl.Series(b, dtype=MONEY))
    assert got.to_list() == [False, False, False, True, False, False, False]


def test_prices_disagree_series_of_two_scales_follow_the_rule() -> None:
    a = [Decimal("1.00"), Decimal("1.00"), Decimal("0.01"), Decimal("0.99")]
    b = [Decimal("1.010101010102"), Decimal("1.01"), Decimal("0"), Decimal("1")]
    got = prices_disagree_series(pl.Series(a, dtype=pl.Decimal(10, 2)), pl.Series(b, dtype=MONEY))
    assert got.to_list() == [prices_disagree(x, y) for x, y in zip(a, b, strict=True)]
    assert got.to_list() == [True, False, True, False]


def test_prices_disagree_series_refuses_what_the_rule_refuses() -> None:
    ones = pl.Series([Decimal("1")], dtype=MONEY)
    with pytest.raises(ValueError, match="b must be a finite, non-negative"):
        prices_disagree_series(ones, pl.Series([Decimal("-1")], dtype=MONEY))
    with pytest.raises(TypeError, match="a must be a Decimal"):
        prices_disagree_series(pl.Series([1.0]), ones)
    with pytest.raises(ValueError, match="rel_tol"):
        prices_disagree_series(ones, ones, rel_tol=Decimal("-0.01"))


ZERO, ONE = Decimal(0), Decimal(1)
TRIALS = load_trial_providers()


def flag(prompt=ZERO, completion=ZERO, **listing) -> str | None:
    fields = {"variable": False, "provider": "openrouter", "output_modalities": "text",
              "tokenizer": "GPT", "trial_providers": TRIALS} | listing  # fmt: skip
    return rate_flag(prompt, completion, **fields)


def test_zero_rates_that_are_not_prices() -> None:
    assert "nvidia" in TRIALS  # NVIDIA's free API catalogue, from sources/rate_flags.toml
    assert flag(provider="nvidia") == "trial"
    assert flag(provider="NVIDIA") == "trial"  # provider ids ignore case
    assert flag(output_modalities="text,audio") == "per_unit"  # Lyria: billed per clip
    assert flag(output_modalities="image") == "per_unit"
    assert flag(tokenizer="Router") == "variable"  # openrouter/free
    assert flag(ONE, ONE, variable=True) == "variable"  # OpenRouter's -1, whatever the rate
    assert flag(provider="zai") is None  # a lab's own free model stands
    assert flag(ZERO, ONE, provider="nvidia") is None  # only a $0 rate is a trial
    assert flag(None, None, provider="nvidia") is None
    assert flag(provider="kilo", output_modalities=None, sold_per_unit=True) == "per_unit"


def test_the_trial_table_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "rate_flags.toml"
    path.write_text('[trial_providers.acme]\nwhy = "free tier"\nevidence = "https://x"\n')
    assert dict(load_trial_providers(path)) == {"acme": "free tier"}
    path.write_text('[trial_providers.acme]\nwhy = "free tier"\n')
    with pytest.raises(
        ValueError, match=r"rate_flags.toml: \[trial_providers.acme\] has no evidence"
    ):
        load_trial_providers(path)
    path.write_text('[providers.acme]\nwhy = "x"\nevidence = "y"\n')
    with pytest.raises(ValueError, match="unexpected top-level"):
        load_trial_providers(path)
