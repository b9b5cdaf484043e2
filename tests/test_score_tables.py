"""The score tables (`pm_*`, `usecase_*`, `navigator_*`) come from migration 0008, in the
published column order, and the boards' writer only replaces their content."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest
from synthetic import BOARD_DAY, blended_usecase_runs

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.release.published import PUBLISHED_BY_NAME, SETUP_MODEL
from bench_pipeline.scores.load import store_frames
from bench_pipeline.scores.usecase import usecase_board

pytestmark = pytest.mark.store

SCORE_TABLES = [
    name
    for name in PUBLISHED_BY_NAME
    if name.startswith(("pm_", "usecase_", "navigator_"))
]  # fmt: skip


def _stored(name: str) -> list[str]:
    """The published columns a score table stores: `model_id` is joined in at publication
    (from the warehouse view `setup_models`), so it follows the registry."""
    return [c.name for c in PUBLISHED_BY_NAME[name].columns if c != SETUP_MODEL]


def _columns(conn: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [d[0] for d in conn.execute(f'SELECT * FROM "{table}" LIMIT 0').description]


@pytest.fixture
def conn(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(connection, settings.migrations_dir())
    yield connection
    connection.close()


def test_the_migration_makes_every_score_table_as_published(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    assert len(SCORE_TABLES) == 15  # with navigator_resolution (card 2)
    for name in SCORE_TABLES:
        assert _columns(conn, name) == _stored(name), name


def test_a_board_is_written_into_the_migrated_tables(conn: duckdb.DuckDBPyConnection) -> None:
    board = usecase_board(blended_usecase_runs(), as_of=BOARD_DAY)
    frames = {"usecase_runs": board.usecase_runs, "usecase_groups": board.usecase_groups}
    store_frames(conn, frames)
    store_frames(conn, frames)  # a rerun replaces, never appends
    for name, frame in frames.items():
        assert conn.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0] == frame.height
        published = PUBLISHED_BY_NAME[name].frame(conn)  # types and ranks as declared
        assert published.height == frame.height
    types = dict(conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'usecase_runs'"
    ).fetchall())  # fmt: skip
    assert types["published_at"] == "TIMESTAMP WITH TIME ZONE"
    assert types["cost_usd"] == "VARCHAR"  # exact decimal as text


def test_a_frame_with_an_unknown_column_changes_nothing(conn: duckdb.DuckDBPyConnection) -> None:
    board = usecase_board(blended_usecase_runs(), as_of=BOARD_DAY)
    store_frames(conn, {"usecase_groups": board.usecase_groups})
    before = conn.execute("SELECT count(*) FROM usecase_groups").fetchall()[0][0]
    runs = board.usecase_runs.with_columns(pl.lit(1).alias("surprise"))
    with pytest.raises(duckdb.BinderException, match="surprise"):
        store_frames(conn, {"usecase_groups": board.usecase_groups.head(1), "usecase_runs": runs})
    assert conn.execute("SELECT count(*) FROM usecase_groups").fetchall()[0][0] == before
    assert conn.execute("SELECT count(*) FROM usecase_runs").fetchall()[0][0] == 0


def test_a_table_made_the_old_way_is_replaced_by_the_migration(tmp_path: Path) -> None:
    older = tmp_path / "migrations"
    older.mkdir()
    for path in sorted(settings.migrations_dir().glob("*.sql")):
        if int(path.name[:4]) < 8:
            shutil.copy(path, older / path.name)
    connection = duckdb.connect(str(tmp_path / "old.duckdb"))
    try:
        migrate(connection, older)
        frame = pl.DataFrame({"rank": [1], "setup_id": ["s"], "at": [datetime.now(UTC)]})
        connection.register("_old", frame.to_arrow())
        connection.execute("CREATE TABLE pm_setups AS SELECT * FROM _old")  # the old way
        assert migrate(connection, settings.migrations_dir())[:1] == [8]  # and any later ones
        assert _columns(connection, "pm_setups") == _stored("pm_setups")
    finally:
        connection.close()
