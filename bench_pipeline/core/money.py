"""Exact decimal arithmetic for money: one working precision and one published spelling.

Money never passes through `float`: prices are parsed from strings and combined as
`Decimal`s under a context wide enough that no sum or product the pipeline forms is rounded.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from decimal import Context, Decimal, InvalidOperation, localcontext

PRECISION = 60
"""Significant digits of the working context: far above any price × token count we form."""

TOKENS_PER_MILLION = 6
"""Power of ten between a per-token and a per-million-tokens rate."""

MAX_STORED_USD = Decimal("99999999999999999999.999999999999999999")
"""The largest amount the warehouse's money columns (`DECIMAL(38, 18)`) hold: no real cost
comes near it, so a claim above it is an absurd one (kept as written, never lost)."""


def exact(digits: int = 0) -> AbstractContextManager[Context]:
    """A decimal context of `PRECISION` digits (or `digits`, when more), for a `with` block."""
    return localcontext(prec=max(PRECISION, digits))


def tidy(value: Decimal) -> Decimal:
    """An equal decimal without trailing zeros and without exponent notation.

    `Decimal("0.269000000")` becomes `Decimal("0.269")` and `Decimal("30.00000")` becomes
    `Decimal("30")` (not `Decimal("3E+1")`); any zero becomes `Decimal("0")`.

    Args:
        value: A finite decimal.

    Returns:
        An equal decimal with no trailing fractional zeros and a non-positive exponent.
    """
    if value.is_zero():
        return Decimal(0)
    with exact(len(value.as_tuple().digits)):
        reduced = value.normalize()
        exponent = reduced.as_tuple().exponent
        if isinstance(exponent, int) and exponent > 0:
            reduced = reduced.quantize(Decimal(1))
    return reduced


def plain(value: Decimal) -> str:
    """A decimal as published text: every digit, no exponent, no trailing zeros.

    `Decimal("1.5E-7")` → `"0.00000015"`, `Decimal("3.437500000000")` → `"3.4375"`.
    """
    return format(tidy(value), "f")


def per_token_to_per_million(value: str | None) -> Decimal | None:
    """Convert an OpenRouter USD-per-token price string to USD per million tokens.

    OpenRouter reports prices as decimal strings per token (e.g.
    ``"0.000000269"``). The conversion shifts the decimal point six places, so
    it is exact, and the result carries no trailing zeros or exponent
    notation (``"0.000000269"`` gives ``Decimal("0.269")``, ``"0.00003"``
    gives ``Decimal("30")``).

    Args:
        value: The per-token price string, or None. Surrounding whitespace is
            ignored.

    Returns:
        The price per million tokens; ``Decimal("0")`` for a free rate; None
        when the value is missing or empty, or negative (OpenRouter uses
        ``"-1"`` for variable or router-determined pricing).

    Raises:
        TypeError: If ``value`` is neither a string nor None (floats included).
        ValueError: If the string is not a finite decimal number.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"price must be a string or None, got {type(value).__name__}")
    text = value.strip()
    if not text:
        return None
    try:
        per_token = Decimal(text)
    except InvalidOperation as error:
        raise ValueError(f"not a decimal price: {value!r}") from error
    if not per_token.is_finite():
        raise ValueError(f"not a finite price: {value!r}")
    if per_token < 0:
        return None
    with exact(len(per_token.as_tuple().digits)):
        per_million = per_token.scaleb(TOKENS_PER_MILLION)
    return tidy(per_million)
