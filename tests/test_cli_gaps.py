"""Gaps in the command line closed (issue 41): every column of `bench scores navigator` has a
name, and `bench review` wraps long lines at words and, where only the offline demo's
simulated outputs wait, says how to practise on them. (`bench splits` showing the answer and
the judges' reasons is in test_navigator_splits.py.)"""

from __future__ import annotations

import io
import re
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from stages import simulated_runs

from bench_pipeline.cli.boards import leaderboard, navigator_rows
from bench_pipeline.cli.review import review_session, show_blind
from bench_pipeline.core.warehouse import connect
from bench_pipeline.grading.review_store import QueueItem
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store

NAVIGATOR = pl.DataFrame(
    {
        "rank_best": [1, 1, 3, None],
        "rank_worst": [2, 2, 3, None],
        "model": ["alpha", "beta", "gamma", "delta"],
        "index": [71.25, 70.5, 40.0, None],
        "tied": [True, True, False, None],
        "tasks": [5, 5, 5, 0],
        "cost_per_success_usd": [0.1, None, 0.25, None],
    }
)


def test_every_column_of_the_navigator_board_is_named() -> None:
    headers, rows = navigator_rows(NAVIGATOR)
    assert all(name.strip() for name in headers), headers
    assert [row[headers.index("tied")] for row in rows] == ["yes", "yes", "no", "–"]
    shown = leaderboard("navigator", {"navigator_models": NAVIGATOR}, datetime(2026, 12, 1))
    header_line = shown.splitlines()[1]
    assert re.split(r"\s{2,}", header_line.strip()) == headers


def test_review_wraps_long_lines_at_words_never_inside_one() -> None:
    case = load_bank().suite("pm")[0]
    words = [f"word{i}" for i in range(300)]
    url = "https://example.com/" + "x" * 90
    output = " ".join(words) + "\n    indented " + " ".join(words[:40]) + f"\n{url}"
    screen = io.StringIO()
    show_blind(QueueItem("r1", case, output, "pm review"), 1, 1, screen, width=60)
    lines = screen.getvalue().splitlines()
    assert all(len(line) <= 60 or len(line.split()) == 1 for line in lines)
    tokens = screen.getvalue().split()
    assert all(word in tokens for word in words) and url in lines  # no word cut in two
    continued = lines[lines.index(next(x for x in lines if x.startswith("    indented"))) + 1]
    assert continued.startswith("    word")  # a continuation keeps its line's indent


def test_review_on_the_demo_says_how_to_practise(tmp_path: Path) -> None:
    database = tmp_path / "warehouse" / "bench.duckdb"
    database.parent.mkdir()
    assert simulated_runs(database, suites=("pm",)) > 0
    bank, screen = load_bank(), io.StringIO()
    assert review_session(lambda: connect(database), bank, "Ada Reviewer", out=screen) == 0
    text = " ".join(screen.getvalue().split())
    assert text.startswith("Nothing waits for a review by Ada Reviewer.")
    assert "bench review --reviewer 'Ada Reviewer' --include-simulated" in text
    practice = io.StringIO()
    with pytest.raises(EOFError):  # (`bench review` says it stopped)
        review_session(
            lambda: connect(database), bank, "Ada Reviewer", out=practice, ask=_Stop(),
            include_simulated=True,
        )  # fmt: skip
    assert "outputs wait for a blind review by Ada Reviewer" in practice.getvalue()


class _Stop:
    """A reviewer who leaves at the first question."""

    def line(self, question: str) -> str:
        raise EOFError

    def text(self, question: str) -> str:
        raise EOFError
