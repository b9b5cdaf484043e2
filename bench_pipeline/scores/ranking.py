"""The one rank rule every board, page and diff uses: competition ranking.

Higher is better; equal values share the best rank and the next rank skips (1, 1, 3).
Equal means exactly equal: scores are compared as computed (or as published), never rounded
first. A value that is missing, or a row a board does not rank, gets no rank.

A board's ranking is declared once, as a `RankRule` (what is ranked, within which groups,
which rows take part), in the board's own module when the board needs its ranks itself (the
UseCaseRank trend arrows): the board ranks with `RankRule.ranks`, and the release checks the
published ranks with that same call on the same rule, publishes the rule in `schema.json`,
and the site and the diff read it from there.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

import polars as pl

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


@dataclass(frozen=True)
class Eligible:
    """Which rows a board ranks: those whose `column` holds `value` (`at_least`: ≥ value)."""

    column: str
    value: Any
    at_least: bool = False

    def __call__(self, row: Row) -> bool:
        """Whether `row` takes part in the ranking."""
        held = row.get(self.column)
        if self.at_least:
            return held is not None and held >= self.value
        return bool(held == self.value)

    def document(self) -> dict[str, Any]:
        """The condition as `schema.json` states it."""
        return {"column": self.column, "op": ">=" if self.at_least else "==", "value": self.value}

    def expr(self) -> pl.Expr:
        """The same condition over a whole frame (a missing value is not eligible)."""
        held = pl.col(self.column)
        test = held >= self.value if self.at_least else held == self.value
        return test.fill_null(False)


@dataclass(frozen=True)
class RankRule:
    """A board's rank column: competition ranking (1, 1, 3) of `by`, higher first.

    Attributes:
        column: The published rank column.
        by: The column ranked.
        within: Columns splitting the table into separate boards (ranks restart in each).
        eligible: Which rows are ranked (None: every row with a value).
        computed_by_release: True when the release adds the column; False when the board's
            own module computes it (it needs the rank itself, e.g. for trends) with `ranks`,
            and the release only checks it, with `ranks` too.
    """

    column: str
    by: str
    within: tuple[str, ...] = ()
    eligible: Eligible | None = None
    computed_by_release: bool = True

    def ranks(self, rows: Sequence[Row]) -> list[int | None]:
        """The rank this rule gives each row (None: not ranked)."""
        return rank_rows(rows, self.by, self.within, self.eligible)

    def rank_series(self, frame: pl.DataFrame) -> pl.Series:
        """`ranks` for a whole frame: a numeric column is ranked in one vectorised pass
        (competition ranking is polars' `min` rank, higher first); any other (decimal text)
        goes row by row through `rank_rows`, which compares exact decimals."""
        dtype = frame.schema[self.by]
        if not dtype.is_numeric():
            return pl.Series(self.column, self.ranks(frame.to_dicts()), dtype=pl.Int64)
        value = pl.col(self.by) + 0.0 if dtype.is_float() else pl.col(self.by)  # -0.0 is 0.0
        ranked = value.is_not_null() & (self.eligible.expr() if self.eligible else True)
        rank = pl.when(ranked).then(value).rank("min", descending=True)
        if self.within:
            rank = rank.over(self.within)
        return frame.select(rank.cast(pl.Int64).alias(self.column)).to_series()

    def document(self) -> dict[str, Any]:
        """The rule as `schema.json` states it."""
        return {
            "column": self.column,
            "by": self.by,
            "order": "descending",
            "method": "competition",
            "within": list(self.within),
            "eligible": self.eligible.document() if self.eligible else None,
        }
