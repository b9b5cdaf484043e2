"""Parity before rank: a board's score from per-item results against the publisher's headline.

Where a publisher states a headline score beside its per-item results (SWE-bench's
`resolved` percentage, an inspect_ai log's metric), the score computed from the items is
compared with it at the headline's own rounding: they agree when the computed score lies
within half a unit of the headline's last written digit (64.93 allows 64.925 to 64.935).
An entry that disagrees is listed with both numbers and the reason, and gets no rank range:
its per-item results are not the results its headline describes, so ranking either would
rank something the publisher did not publish. The one rule for every board of per-item
results (`scores/item_boards.py`, `scores/item_matrix_boards.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

SLACK = 1e-9
"""Float noise allowed on top of the half unit (a mean of 0/1 results is not exact)."""


@dataclass(frozen=True)
class Parity:
    """The comparison of one entry's computed score with its stated one.

    Attributes:
        agrees: True when they agree at the stated rounding.
        decimals: The digits after the point the publisher wrote.
        reason: Why the entry is not ranked (both numbers); None when it agrees.
    """

    agrees: bool
    decimals: int
    reason: str | None


def stated_text(stated: str | float) -> str:
    """A headline as the publisher wrote it: a text as is, a float as its shortest decimal
    (a trailing zero the publisher wrote cannot be recovered from a float)."""
    return stated.strip() if isinstance(stated, str) else repr(float(stated))


def parity(computed: float, stated: str | float, *, basis: str = "", unit: str = "") -> Parity:
    """`computed` against `stated` at the stated figure's rounding (see the module docstring).

    Args:
        computed: The score from the per-item results, on the stated figure's scale.
        stated: The publisher's headline (text keeps its digits).
        basis: What the computed score is over, for the reason (``325 of 500 items``).
        unit: Appended to both numbers in the reason (``%``).

    Raises:
        ValueError: When `stated` is not a number.
    """
    text = stated_text(stated)
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"stated score {text!r} is not a number") from None
    if not value.is_finite():
        raise ValueError(f"stated score {text!r} is not a finite number")
    exponent = value.as_tuple().exponent
    decimals = max(0, -exponent) if isinstance(exponent, int) else 0
    half = Decimal(1).scaleb(-decimals) / 2
    agrees = abs(Decimal(repr(float(computed))) - value) <= half + Decimal(repr(SLACK))
    if agrees:
        return Parity(True, decimals, None)
    shown, digits = f"{computed:.{decimals}f}", decimals
    while abs(float(shown) - computed) > SLACK and digits < decimals + 4:  # 0.25, not 0.2
        digits += 1
        shown = f"{computed:.{digits}f}"
    over = f" ({basis})" if basis else ""
    places = "decimal" if decimals == 1 else "decimals"
    reason = (
        f"the per-item results give {shown}{unit}{over}; the publisher states "
        f"{text}{unit}, which they do not round to at its {decimals} {places}: not ranked"
    )
    return Parity(False, decimals, reason)


__all__ = ["Parity", "parity", "stated_text"]
