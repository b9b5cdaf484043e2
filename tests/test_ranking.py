"""The one rank rule (competition ranking: a tie shares the best rank, the next skips: 1, 1, 3)
as the release publishes it, the boards' own modules compute it, the leaderboard and the model
page show it and the release diff reads it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest
from synthetic import synthetic_tables, write_release

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate, replace_tables
from bench_pipeline.release.diff import diff_releases
from bench_pipeline.release.published import PUBLISHED_BY_NAME
from bench_pipeline.scores.ranking import competition_ranks, rank_rows
from bench_pipeline.site import build_site

TIED = {"a": 90.0, "b": 90.0, "c": 80.0, "d": 70.0}


def test_a_tie_shares_the_best_rank_and_the_next_skips() -> None:
    assert competition_ranks(TIED) == {"a": 1, "b": 1, "c": 3, "d": 4}
    rows = [{"v": 80.0, "g": "x"}, {"v": 90.0, "g": "x"}, {"v": None, "g": "x"},
            {"v": 90.0, "g": "x"}, {"v": 5.0, "g": "y"}]  # fmt: skip
    assert rank_rows(rows, "v") == [3, 1, None, 1, 4]
    assert rank_rows(rows, "v", within=("g",)) == [3, 1, None, 1, 1]
    assert rank_rows(rows, "v", eligible=lambda r: r["v"] != 80.0) == [None, 1, None, 1, 3]
    # exact decimals published as text compare by value
    assert competition_ranks({"a": "10.50", "b": "10.5", "c": "9"}) == {"a": 1, "b": 1, "c": 3}


@pytest.fixture
def warehouse(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(conn, settings.migrations_dir())
    yield conn
    conn.close()


def _kgi(conn: duckdb.DuckDBPyConnection, values: dict[str, float | None]) -> pl.DataFrame:
    conn.execute("DELETE FROM known_good_index")
    for model, value in values.items():
        conn.execute(
            "INSERT INTO known_good_index (model_id, model_name, known_good_index, "
            "index_components, eligible, gpqa_diamond, computation_id) VALUES (?, ?, ?, 3, ?, "
            "0.5, 'c1')",
            [model, model.upper(), value, value is not None],
        )
    return PUBLISHED_BY_NAME["known_good_index"].frame(conn)


def test_the_release_publishes_the_rank_column(warehouse: duckdb.DuckDBPyConnection) -> None:
    frame = _kgi(warehouse, TIED | {"e": None})
    assert dict(zip(frame["model_id"], frame["rank"], strict=True)) == {
        "a": 1, "b": 1, "c": 3, "d": 4, "e": None,
    }  # fmt: skip


def test_the_release_refuses_a_board_rank_that_breaks_the_rule(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    table = PUBLISHED_BY_NAME["pm_setups"]
    rows = [("s1", 50.0, "ranked", 1), ("s2", 50.0, "ranked", 1), ("s3", 40.0, "ranked", 3),
            ("s4", 60.0, "provisional", None)]  # fmt: skip
    frame = pl.DataFrame(rows, schema=["setup_id", "overall", "status", "rank"], orient="row")
    replace_tables(warehouse, {"pm_setups": frame})
    assert table.frame(warehouse)["rank"].to_list() == [1, 1, 3, None]
    # positions 1, 2, 3 (what the diff used to compute) are refused, naming table and row
    replace_tables(warehouse, {"pm_setups": frame.with_columns(pl.Series("rank", [1, 2, 3, None]))})
    with pytest.raises(ValueError, match=r"pm_setups, row 2: rank is 2 but the rank rule"):
        table.frame(warehouse)


def _release(root: Path, release_id: str, kgi: list[dict], previous: str | None) -> Path:
    tables = synthetic_tables(6)
    tables["known_good_index"] = kgi
    return write_release(root, release_id, tables, created_at="2025-06-01T06:00:00Z",
                         previous=previous)  # fmt: skip


def _kgi_rows(warehouse: duckdb.DuckDBPyConnection, values: dict[str, float]) -> list[dict]:
    """The rows as the release publishes them (JSON), for models the synthetic registry has."""
    frame = _kgi(warehouse, values)
    return json.loads(frame.write_json())


def test_board_model_page_and_diff_agree_on_a_tie(
    warehouse: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    models = [r["model_id"] for r in synthetic_tables(6)["models"]][:4]
    before = dict(zip(models, (90.0, 80.0, 70.0, 60.0), strict=True))
    after = dict(zip(models, (90.0, 90.0, 70.0, 60.0), strict=True))  # the second ties the first
    root = tmp_path / "releases"
    old = _release(root, "r-old", _kgi_rows(warehouse, before), None)
    new = _release(root, "r-new", _kgi_rows(warehouse, after), "r-old")
    ranks = {r["model_id"]: r["rank"] for r in json.loads((new / "data/known_good_index.json")
                                                           .read_text())}  # fmt: skip
    assert [ranks[m] for m in models] == [1, 1, 3, 4]

    # the diff reads the published ranks: the tied model moved 2 -> 1, nobody else moved
    diff = diff_releases(old, new)
    moves = diff["tables"]["known_good_index"]["rank_moves"]
    assert moves == [{"key": {"model_id": models[1]}, "old_rank": 2, "new_rank": 1}]
    assert {c["column"] for c in diff["tables"]["known_good_index"]["changed"]} == {
        "known_good_index"
    }

    # the leaderboard and the model pages show the same ranks
    site = tmp_path / "site"
    build_site(new, site, root)
    board = (site / "known-good-index.html").read_text("utf-8")
    shown = re.findall(r'<tr><td>(\d+)</td><td><a href="models/([^"]+)\.html"', board)
    assert [int(rank) for rank, _slug in shown] == [1, 1, 3, 4]
    for rank, slug in shown:
        page = (site / "models" / f"{slug}.html").read_text("utf-8")
        assert f"rank {rank} on" in page, slug
