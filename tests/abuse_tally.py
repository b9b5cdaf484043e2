"""Counts the reliability and abuse tests add up, printed at the end of the session."""

from __future__ import annotations

from collections import Counter


class Tally:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, **counts: int) -> None:
        self.counts.update(counts)


TALLY = Tally()
