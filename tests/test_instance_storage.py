"""The local Dagster instance's SQLite bookkeeping skips its per-commit fsync, and only it."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from bench_pipeline.cli.instance import skip_bookkeeping_fsync

pytestmark = pytest.mark.unit

FULL, OFF = 2, 0


def _synchronous(path: Path) -> int:
    engine = sa.create_engine(f"sqlite:///{path}", poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("PRAGMA synchronous")).scalar_one()
    finally:
        engine.dispose()


def test_only_files_under_the_instance_skip_fsync(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "dagster", tmp_path / "other"
    (home / "history").mkdir(parents=True)
    elsewhere.mkdir()
    assert _synchronous(home / "history" / "runs.db") == FULL  # Dagster's default, before

    skip_bookkeeping_fsync(home)
    skip_bookkeeping_fsync(home)  # a second run in the same process adds no second hook

    assert _synchronous(home / "history" / "runs.db") == OFF
    assert _synchronous(home / "index.db") == OFF
    assert _synchronous(elsewhere / "runs.db") == FULL
    assert _synchronous(tmp_path / "dagster-look-alike.db") == FULL
