"""The one way assets reach the DuckDB warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import duckdb
from pydantic import Field

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate


class WarehouseResource(dg.ConfigurableResource):
    """Short-lived connections to `$BENCH_HOME/warehouse/bench.duckdb`, migrated on open."""

    path: str | None = Field(default=None, description="Database file; default under BENCH_HOME.")
    lock_wait_seconds: float = Field(
        default=120.0, description="How long a writer waits for another process's lock."
    )

    def db_path(self) -> Path:
        return Path(self.path) if self.path else settings.warehouse_path()

    def locks_dir(self) -> Path:
        """The folder of the named locks that guard work on this warehouse (`core/locks`)."""
        return self.db_path().parent / "locks"

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection, closed when the block ends (even on error)."""
        with connect(self.db_path(), wait_seconds=self.lock_wait_seconds) as conn:
            migrate(conn, settings.migrations_dir())
            yield conn
