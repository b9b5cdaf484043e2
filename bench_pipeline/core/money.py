"""Exact decimal arithmetic for money: one working precision and one published spelling.

Money never passes through `float`: prices are parsed from strings and combined as
`Decimal`s under a context wide enough that no sum or product the pipeline forms is rounded.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from decimal import Context, Decimal, localcontext

PRECISION = 60
"""Significant digits of the working context: far above any price × token count we form."""


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
