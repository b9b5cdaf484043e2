"""Index intervals propagated from the publisher's standard errors, in a real warehouse, checked
against a three-model example worked by hand with the method stated on
`site/methodology/indices.md`."""

from pathlib import Path

import duckdb
import pytest

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.indices.intervals import Component, interval
from bench_pipeline.indices.store import compute, store

pytestmark = pytest.mark.store

DIRECTIONS = {
    "gpqa_diamond": "higher",
    "math_aime": "higher",
    "swe_bench_verified": "higher",
    "livebench": "higher",
    "math_level5": "higher",
}

# (model, evaluation, score %, standard error in percentage points or None)
SCORES = [
    ("a", "gpqa_diamond", 80.0, 2.0),
    ("b", "gpqa_diamond", 60.0, 3.0),
    ("c", "gpqa_diamond", 40.0, 1.0),
    ("a", "math_aime", 50.0, 4.0),
    ("b", "math_aime", 70.0, 5.0),
    ("c", "math_aime", 90.0, 2.0),
    ("a", "swe_bench_verified", 30.0, 2.0),
    ("b", "swe_bench_verified", 30.0, 1.0),
    ("c", "swe_bench_verified", 50.0, 4.0),
]


def add(conn: duckdb.DuckDBPyConnection, rows) -> None:
    for model, evaluation, score, stderr in rows:
        conn.execute(
            "INSERT INTO models SELECT ?, ?, NULL, 'test', ?, NULL "
            "WHERE NOT EXISTS (SELECT 1 FROM models WHERE model_id = ?)",
            [model, model, model, model],
        )
        key = f"{model}-{evaluation}"
        conn.execute(
            "INSERT INTO evaluation_scores "
            "VALUES (?, ?, ?, 'higher', NULL, ?, NULL, ?, 'f.csv', 'epoch-1', 1)",
            [model, evaluation, score, model, key],
        )
        conn.execute(
            "INSERT INTO evaluation_rows VALUES (?, ?, ?, NULL, NULL, NULL, NULL, ?, ?, NULL, "
            "'f.csv', 'epoch-1')",
            [evaluation, key, model, score, stderr],
        )


@pytest.fixture
def conn(tmp_path: Path):
    with connect(tmp_path / "w.duckdb") as conn:
        migrate(conn, settings.migrations_dir())
        add(conn, SCORES)
        yield conn


def kgi(conn, model: str):
    return conn.execute(
        "SELECT known_good_index, known_good_index_low, known_good_index_high, without_stderr "
        "FROM known_good_index WHERE model_id = ?",
        [model],
    ).fetchone()


def test_three_model_interval_matches_the_hand_worked_method(conn) -> None:
    """Worked by hand. Spreads (strongest − weakest holder): GPQA 80 − 40 = 40, AIME
    90 − 50 = 40, SWE-bench 50 − 30 = 20. A normalised value's standard error is the score's
    over its evaluation's spread:
      a: 2/40 = .05, 4/40 = .10, 2/20 = .10 → se = 100/3 × √(.0025 + .01 + .01) = 5.0
      b: 3/40 = .075, 5/40 = .125, 1/20 = .05 → se = 100/3 × √.02375 = 5.1370
      c: 1/40 = .025, 2/40 = .05, 4/20 = .20 → se = 100/3 × √.043125 = 6.9222
    Index (100 × mean of the normalised values) ± 1.96 se:
      a: 33.33 ± 9.7998 → 23.53 .. 43.13
      b: 33.33 ± 10.0683 → 23.26 .. 43.40
      c: 66.67 ± 13.5672 → 53.10 .. 80.24
    """
    store(conn, compute(conn, DIRECTIONS))
    assert kgi(conn, "a") == (33.33, 23.53, 43.13, None)
    assert kgi(conn, "b") == (33.33, 23.26, 43.4, None)
    assert kgi(conn, "c") == (66.67, 53.1, 80.24, None)


def test_a_component_without_standard_error_leaves_no_interval_and_says_so(conn) -> None:
    # LiveBench publishes no standard error (two holders: a spread the error would act on)
    add(conn, [("b", "livebench", 50.0, None), ("c", "livebench", 70.0, None)])
    store(conn, compute(conn, DIRECTIONS))
    value, low, high, without = kgi(conn, "c")
    assert value is not None and (low, high) == (None, None)
    assert without == "livebench"
    assert kgi(conn, "a")[1:] == (23.53, 43.13, None)  # the others keep theirs


def test_capability_intervals_are_published_per_index(conn) -> None:
    add(conn, [("a", "math_level5", 60.0, 3.0), ("b", "math_level5", 90.0, 1.0)])
    store(conn, compute(conn, DIRECTIONS))
    row = conn.execute(
        "SELECT science_index, science_index_low, science_index_high, mathematics_index, "
        "mathematics_index_low, mathematics_index_high FROM capability_indices "
        "WHERE model_id = 'a'"
    ).fetchone()
    # science: GPQA alone, 100 × 1 ± 1.96 × 100 × 2/40 = 100 ± 9.80, clipped at 100
    # mathematics: AIME 0 (se 4/40), MATH L5 0 (se 3/30): 0 ± 1.96 × 50 × √.02 = 0 .. 13.86
    assert row == (100.0, 90.2, 100.0, 0.0, 0.0, 13.86)


def test_an_evaluation_without_spread_adds_no_error() -> None:
    """One holder (or all equal) gives the fixed neutral value, which no score moves."""
    assert interval(50.0, [Component(None, 0.0)]) == (50.0, 50.0)
    assert interval(50.0, [Component(None, 10.0)]) is None
    assert interval(50.0, [Component(1.0, 10.0), Component(None, 0.0)]) == (40.2, 59.8)
