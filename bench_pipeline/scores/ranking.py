"""The one rank rule every board, page and diff uses: competition ranking.

Higher is better; equal values share the best rank and the next rank skips (1, 1, 3).
Equal means exactly equal: scores are compared as computed (or as published), never rounded
first. A value that is missing, or a row a board does not rank, gets no rank.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeVar

K = TypeVar("K", bound=Hashable)
Row = Mapping[str, Any]


def _number(value: Any) -> Decimal:
    """A score as an exact number: exact decimals are published as text ("10.5")."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def competition_ranks(values: Mapping[K, Any]) -> dict[K, int]:
    """Rank keys by value, highest first; equal values share the better rank (1, 1, 3).

    Args:
        values: The value of each key (a float, an int, a `Decimal` or decimal text).

    Returns:
        Each key's rank. Keys of equal value get the same rank; their order among
        themselves does not matter to the result.
    """
    ordered = sorted(values, key=lambda k: -_number(values[k]))
    ranks: dict[K, int] = {}
    previous: Decimal | None = None
    for position, key in enumerate(ordered, start=1):
        value = _number(values[key])
        ranks[key] = ranks[ordered[position - 2]] if value == previous else position
        previous = value
    return ranks


def rank_rows(
    rows: Sequence[Row],
    by: str,
    within: Sequence[str] = (),
    eligible: Callable[[Row], bool] | None = None,
) -> list[int | None]:
    """The competition rank of each row by `by`, restarting in every `within` group.

    Args:
        rows: The table's rows, in any order.
        by: The column ranked (higher is better).
        within: Columns whose values split the table into separate boards.
        eligible: Rows it rejects get no rank and do not take part.

    Returns:
        One rank per row, in the order of `rows`; None where the row has no value of `by`
        or is not eligible.
    """
    boards: dict[tuple, dict[int, Any]] = {}
    for index, row in enumerate(rows):
        value = row.get(by)
        if value is None or value == "" or (eligible is not None and not eligible(row)):
            continue
        boards.setdefault(tuple(row.get(c) for c in within), {})[index] = value
    out: list[int | None] = [None] * len(rows)
    for values in boards.values():
        for index, rank in competition_ranks(values).items():
            out[index] = rank
    return out
