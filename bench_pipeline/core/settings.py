"""Where the pipeline keeps its files, read from the environment when asked (never at import)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def bench_home() -> Path:
    """`BENCH_HOME`, default the repository root: holds the warehouse, build/ and inbox/."""
    return Path(os.environ.get("BENCH_HOME") or REPO_ROOT).resolve()


def snapshots_dir() -> Path:
    """`BENCH_SNAPSHOTS`, default `sources/snapshots`: recorded inputs, a folder per source."""
    return _configured("BENCH_SNAPSHOTS", REPO_ROOT / "sources" / "snapshots")


def _configured(variable: str, default: Path) -> Path:
    configured = os.environ.get(variable)
    return Path(configured).resolve() if configured else default


def tasks_dir() -> Path:
    """`BENCH_TASKS`, default `tasks/`: the task bank (a real, private bank lives elsewhere)."""
    return _configured("BENCH_TASKS", REPO_ROOT / "tasks")


def v1_library_path() -> Path:
    """`BENCH_V1_LIBRARY`, default `tasks/navigator_v1.toml`: the Navigator classic v1 library
    (public: the methodology lists its tasks)."""
    return _configured("BENCH_V1_LIBRARY", REPO_ROOT / "tasks" / "navigator_v1.toml")


def setups_dir() -> Path:
    """`BENCH_SETUPS`, default `setups/`: model records, harnesses and the pricing file."""
    return _configured("BENCH_SETUPS", REPO_ROOT / "setups")


def sources_dir() -> Path:
    """Source definitions, the alias file and other hand-edited tables."""
    return REPO_ROOT / "sources"


def warehouse_path() -> Path:
    """The warehouse file, `$BENCH_HOME/warehouse/bench.duckdb`."""
    return bench_home() / "warehouse" / "bench.duckdb"


def raw_dir() -> Path:
    """Raw payloads as received, stored by content hash."""
    return bench_home() / "build" / "raw"


def migrations_dir() -> Path:
    """The numbered SQL migrations shipped with the code."""
    return REPO_ROOT / "warehouse" / "migrations"


def analyst_copy_path() -> Path:
    """The read-only copy analysts open while the pipeline writes the warehouse."""
    return bench_home() / "build" / "warehouse" / "bench.duckdb"


def downloads_dir() -> Path:
    """CSV and JSON downloads of every published table."""
    return bench_home() / "build" / "site" / "data"


def releases_dir() -> Path:
    """Dataset releases: one immutable folder per release id, and the `latest` pointer."""
    return bench_home() / "build" / "releases"


def submissions_inbox() -> Path:
    """Where submitted use-case runs are dropped as JSON files (a sensor picks them up)."""
    return bench_home() / "inbox" / "submissions"


def reviews_inbox() -> Path:
    """Where blind human reviews arrive as JSON files (a sensor picks them up)."""
    return bench_home() / "inbox" / "reviews"


def submitters_path() -> Path:
    """`BENCH_SUBMITTERS`, default `$BENCH_HOME/submitters.toml`: the registered submitters
    and their secrets (keep it outside the repository; `runs/submitters.py`)."""
    return _configured("BENCH_SUBMITTERS", bench_home() / "submitters.toml")


def demo_submitters_path() -> Path:
    """The offline demo's own submitters file, made at demo time (never the real one)."""
    return bench_home() / "build" / "demo" / "submitters.toml"
