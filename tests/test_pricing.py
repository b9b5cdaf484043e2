"""Tests for exact Decimal pricing helpers."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench_pipeline.core.money import per_token_to_per_million
from bench_pipeline.indices.pricing import blended_price, prices_disagree

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
