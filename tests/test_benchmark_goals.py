"""A benchmark that misses its goal says so in its exit status, which `make bench` adds up."""

from __future__ import annotations

import pytest

from benchmarks import index_family, row_writer
from benchmarks.index_family import Measurement

pytestmark = pytest.mark.unit


def _family(seconds: float) -> Measurement:
    outputs = {"known_good rows": 1, "eligible": 1, "capability rows": 1}
    return Measurement("family", 10, 2, seconds, (seconds,), 100.0, 50.0, {"fit": seconds}, outputs)


@pytest.mark.parametrize(("seconds", "met"), [(0.5, True), (index_family.GOAL_SECONDS, False)])
def test_the_index_family_report_says_whether_its_goal_is_met(seconds: float, met: bool) -> None:
    baseline = Measurement("baseline", 10, 2, 0.1, (0.1,), 80.0, 50.0, {"loop": 0.1})
    assert index_family.print_report(baseline, _family(seconds), seed=1, repeat=1) is met


@pytest.mark.parametrize(("goal", "status"), [(0.0, 0), (1e9, 1)])
def test_the_row_writer_exits_non_zero_when_its_goal_is_missed(
    monkeypatch: pytest.MonkeyPatch, goal: float, status: int
) -> None:
    monkeypatch.setattr(row_writer, "CASES", (row_writer.GOAL_CASE,))
    monkeypatch.setattr(row_writer, "GOAL", goal)
    assert row_writer.main(["--repeat", "1"]) == status
