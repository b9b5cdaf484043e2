"""Rank numbers shared by the score modules."""

from __future__ import annotations

from collections.abc import Mapping


def competition_ranks(values: Mapping[str, float]) -> dict[str, int]:
    """Rank keys by value, highest first; equal values share the better rank (1, 2, 2, 4).

    Equal means exactly equal: scores are compared as computed, never rounded first.
    """
    ordered = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    ranks: dict[str, int] = {}
    for position, (key, value) in enumerate(ordered, start=1):
        if position > 1 and ordered[position - 2][1] == value:
            ranks[key] = ranks[ordered[position - 2][0]]
        else:
            ranks[key] = position
    return ranks
