"""The local Dagster instance under `$BENCH_HOME/build/dagster`, for `bench run` and the UI."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from bench_pipeline.core import settings

INSTANCE_CONFIG = """\
# Written by bench-pipeline. Local storage under BENCH_HOME; no telemetry.
telemetry:
  enabled: false
"""


def default_dagster_home() -> Path:
    """The instance folder `bench run` and `bench ui` use unless DAGSTER_HOME names another."""
    return settings.bench_home() / "build" / "dagster"


def prepare_dagster_home() -> Path:
    """Create the instance folder (with its dagster.yaml) and point DAGSTER_HOME at it,
    unless the operator already chose an instance of their own."""
    configured = os.environ.get("DAGSTER_HOME")
    if configured:
        return Path(configured)
    home = default_dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_CONFIG)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


_UNSYNCED_ROOTS: set[str] = set()
"""Instance folders (each with a trailing separator) whose SQLite files this process writes
without an fsync per commit."""


def skip_bookkeeping_fsync(home: Path) -> None:
    """Let this process write the SQLite files of the instance at `home` without an fsync
    per commit (`PRAGMA synchronous=OFF`).

    Dagster's SQLite storage opens, commits and closes a connection for every event, and each
    commit and close waits for the disk: about 1,600 of them in a fresh `bench run`, some
    10 s of its wall time here. A killed process loses nothing (committed pages are in the
    OS's cache); only a power cut or kernel crash may lose or damage the run history, never
    the warehouse, releases or site, which keep their own durable writes. Only files under
    `home` are affected, so an operator's own instance keeps Dagster's defaults.
    """
    import sqlalchemy as sa

    _UNSYNCED_ROOTS.update({os.path.join(home, ""), os.path.join(home.resolve(), "")})
    if not sa.event.contains(sa.engine.Engine, "connect", _without_fsync):
        sa.event.listen(sa.engine.Engine, "connect", _without_fsync)


def _without_fsync(dbapi_connection: object, _record: object) -> None:
    """SQLAlchemy's `connect` hook: relax a new SQLite connection to a file under a root."""
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    files = dbapi_connection.execute("PRAGMA database_list").fetchall()
    if any(str(path).startswith(root) for _, _, path in files for root in _UNSYNCED_ROOTS):
        dbapi_connection.execute("PRAGMA synchronous=OFF")
