"""Index computations in a real warehouse: relative values, recorded inputs, checks."""

from pathlib import Path

import duckdb
import pytest

from bench_pipeline.assets.indices import INDEX_CHECKS
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.indices.store import compute, store

DIRECTIONS = {
    "gpqa_diamond": "higher",
    "math_aime": "higher",
    "swe_bench_verified": "higher",
    "hle": "higher",
}


def add_scores(conn: duckdb.DuckDBPyConnection, run: str, rows: list[tuple[str, str, float]]):
    for model, evaluation, score in rows:
        conn.execute(
            "INSERT INTO models SELECT ?, ?, NULL, 'test', ?, NULL "
            "WHERE NOT EXISTS (SELECT 1 FROM models WHERE model_id = ?)",
            [model, model, model, model],
        )
        conn.execute(
            "INSERT INTO evaluation_scores "
            "VALUES (?, ?, ?, 'higher', NULL, ?, NULL, ?, 'f.csv', ?, 1)",
            [model, evaluation, score, model, f"{model}-{evaluation}", run],
        )


@pytest.fixture
def conn(tmp_path: Path):
    with connect(tmp_path / "w.duckdb") as conn:
        migrate(conn, settings.migrations_dir())
        add_scores(
            conn,
            "epoch-1",
            [
                ("a", "gpqa_diamond", 80.0),
                ("a", "math_aime", 60.0),
                ("a", "swe_bench_verified", 50.0),
                ("b", "gpqa_diamond", 40.0),
                ("b", "math_aime", 90.0),
                ("b", "swe_bench_verified", 70.0),
                ("b", "hle", 20.0),
                ("c", "gpqa_diamond", 60.0),
                ("c", "hle", 30.0),
            ],
        )
        yield conn


def index_of(conn, model: str):
    return conn.execute(
        "SELECT known_good_index, index_components FROM known_good_index WHERE model_id = ?",
        [model],
    ).fetchone()


def test_hand_computed_index_and_ineligibility(conn) -> None:
    store(conn, compute(conn, DIRECTIONS))
    # a: gpqa (80-40)/40 = 1, aime (60-60)/30 = 0, swe (50-50)/20 = 0 → 100 × 1/3 = 33.33
    assert index_of(conn, "a") == (33.33, 3)
    # b: gpqa 0, aime 1, swe 1, hle (20-20)/10 = 0 → 100 × 2/4 = 50.00
    assert index_of(conn, "b") == (50.0, 4)
    # c holds gpqa and hle only: no mathematics or coding → no index at all, not a low one
    assert index_of(conn, "c") == (None, 2)


def test_a_new_model_moves_the_others_and_history_explains_it(conn) -> None:
    first = compute(conn, DIRECTIONS)
    store(conn, first)
    store(conn, compute(conn, DIRECTIONS))  # same inputs: the same computation, not a new one
    assert conn.execute("SELECT count(*) FROM index_computations").fetchone() == (1,)
    add_scores(
        conn,
        "epoch-2",
        [("d", "gpqa_diamond", 100.0), ("d", "math_aime", 30.0), ("d", "swe_bench_verified", 30.0)],
    )
    second = compute(conn, DIRECTIONS)
    store(conn, second)
    assert second.computation_id != first.computation_id
    assert second.source_run_ids == ("epoch-1", "epoch-2")
    # a: gpqa (80-40)/60 = 0.6667, aime (60-30)/60 = 0.5, swe (50-30)/40 = 0.5 → 55.56
    assert index_of(conn, "a") == (55.56, 3)
    past = conn.execute(
        "SELECT known_good_index FROM known_good_index_history "
        "WHERE computation_id = ? AND model_id = 'a'",
        [first.computation_id],
    ).fetchone()
    assert past == (33.33,)
    runs = conn.execute(
        "SELECT source_run_ids FROM index_computations WHERE computation_id = ?",
        [second.computation_id],
    ).fetchone()[0]
    assert "epoch-2" in runs


@pytest.mark.parametrize(
    ("check", "corruption"),
    [
        ("index_values_within_0_100", "UPDATE known_good_index SET known_good_index = 140"),
        (
            "no_index_for_ineligible_models",
            "UPDATE known_good_index SET known_good_index = 10 WHERE model_id = 'c'",
        ),
        ("index_components_between_0_and_6", "UPDATE known_good_index SET index_components = 7"),
        ("indexed_models_exist_in_registry", "DELETE FROM models WHERE model_id = 'a'"),
    ],
)
def test_each_index_check_fails_on_its_violation(conn, check: str, corruption: str) -> None:
    store(conn, compute(conn, DIRECTIONS))
    sql = INDEX_CHECKS[check][0]
    assert conn.execute(sql).fetchone() == (0,)
    conn.execute(corruption)
    assert conn.execute(sql).fetchone()[0] > 0
