"""`item_board_pairs` carries no index (migration 0023): its key is enforced where its rows are
published, and the migration keeps the rows of a warehouse made before it."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.release.build import build_release
from bench_pipeline.release.published import METHODOLOGY_VERSIONS

pytestmark = pytest.mark.assets

UNINDEXED = 23


def _copy(recorded_warehouse: duckdb.DuckDBPyConnection, tmp_path: Path) -> Path:
    ((source,),) = recorded_warehouse.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    target = tmp_path / "bench.duckdb"
    shutil.copy(source, target)
    return target


def test_a_repeated_pair_key_stops_the_release_before_anything_is_written(
    recorded_warehouse: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    database, releases = _copy(recorded_warehouse, tmp_path), tmp_path / "releases"
    with connect(database) as conn:
        indexed = conn.execute(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'item_board_pairs' "
            "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
        ).fetchall()
        assert indexed == [(0,)]
        ((pairs,),) = conn.execute("SELECT count(*) FROM item_board_pairs").fetchall()
        assert pairs > 0
        conn.execute("INSERT INTO item_board_pairs SELECT * FROM item_board_pairs LIMIT 1")
        with pytest.raises(ValueError, match=r"item_board_pairs: key .* is not unique"):
            build_release(conn, releases, METHODOLOGY_VERSIONS)
    assert not releases.exists() or not any(
        p.name != "latest" and (p / "manifest.json").exists() for p in releases.iterdir()
    )
    assert not (releases / "latest").exists()


def test_the_migration_keeps_every_pair_of_an_earlier_warehouse(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier-migrations"
    earlier.mkdir()
    for path in settings.migrations_dir().glob("*.sql"):
        if int(path.name[:4]) < UNINDEXED:
            shutil.copy(path, earlier / path.name)
    row = ("SWE-bench", "A <b>", "B", 10, 3, 0.25, False, None, None, 2, 1, "a", "b")
    with connect(tmp_path / "bench.duckdb") as conn:
        migrate(conn, earlier)
        conn.executemany(
            "INSERT INTO item_board_pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [row, (*row[:-1], "c")],
        )
        before = conn.execute("SELECT * FROM item_board_pairs ORDER BY entry_key_b").fetchall()
        assert migrate(conn, settings.migrations_dir())[0] == UNINDEXED
        # Later migrations append columns (0047: the card's per-pair figures), left null.
        after = [
            r[:13]
            for r in conn.execute("SELECT * FROM item_board_pairs ORDER BY entry_key_b").fetchall()
        ]
        assert {r[13:] for r in conn.execute("SELECT * FROM item_board_pairs").fetchall()} == {
            (None,) * 4
        }
        columns = conn.execute(
            "SELECT column_name, is_nullable FROM information_schema.columns "
            "WHERE table_name = 'item_board_pairs' ORDER BY ordinal_position"
        ).fetchall()
    assert after == before and len(after) == 2
    assert [name for name, _ in columns][11:13] == ["entry_key_a", "entry_key_b"]
    assert dict(columns)["board"] == "NO" and dict(columns)["better"] == "YES"
