"""A source run's working frames (staged, validated, pending quarantine) as files of its own.

Each stage of a run is its own Dagster step, maybe its own process, so what one stage hands
the next must be stored. As DuckDB tables, every frame was compressed into the warehouse,
read back out and dropped after publish: at 1M records, about 0.4 s to write the staged frame
and 0.3 s the validated one, for rows only the next stage reads. An Arrow IPC file in polars'
own layout (lz4: a sixth of the bytes, for less than writing the rest would cost) is written
in about 0.1 s and read back without parsing. The files of one run sit in one folder beside
the warehouse (so every process that reaches the warehouse reaches them), are written whole
or not at all (`core.files.replacing`), and are removed with their folder when the run ends,
or by the next run of the source when the run's process died.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import duckdb
import polars as pl

from bench_pipeline.core.files import path_segment, replacing
from bench_pipeline.core.warehouse import database_file

Kind = Literal["staged", "validated", "quarantine"]
FOLDER = "work"
"""The folder beside the warehouse file that holds every run's working files."""
STATED_DATES = "_stated_dates"
"""The staged "table" holding the dates the payload states, each with its record
(`ingest.dating`): validation dates the run from those of the records it accepts."""


def run_folder(conn: duckdb.DuckDBPyConnection, source: str, run_id: str) -> Path:
    """The folder of one run's working files (named after its source and run: two runs never
    share one)."""
    return database_file(conn).parent / FOLDER / path_segment(source) / path_segment(run_id)


def work_file(
    conn: duckdb.DuckDBPyConnection, kind: Kind, source: str, run_id: str, table: str = ""
) -> Path:
    """The file of one working frame of a run (`table` names the live table it is for)."""
    return file_in(run_folder(conn, source, run_id), kind, table)


def file_in(folder: Path, kind: Kind, table: str = "") -> Path:
    """`work_file` in a run's `folder` (`run_folder`)."""
    name = f"{kind}-{path_segment(table)}" if table else kind
    return folder / f"{name}.arrow"


def staged_file(folder: Path, table: str) -> Path:
    """The staged frame of `table` in a run's `folder`."""
    return file_in(folder, "staged", table)


def write_work(path: Path, frame: pl.DataFrame) -> None:
    """Store a working frame whole (a reader never sees half of one)."""
    with replacing(path) as partial:
        frame.write_ipc(partial, compression="lz4", compat_level=pl.CompatLevel.newest())


def write_work_freeing(frames: Mapping[Path, pl.DataFrame], garbage: list[Any]) -> None:
    """`write_work` each frame on another thread while this one empties `garbage`.

    Staging hands the frames it parsed to this together with the raw files they came from:
    polars writes without Python's lock, so the parsed documents (at 1M records, a third of a
    second of freeing) are freed on the other core meanwhile. A write that fails raises here
    after `garbage` is empty."""

    def write_all() -> None:
        for path, frame in frames.items():
            write_work(path, frame)

    with ThreadPoolExecutor(max_workers=1) as pool:
        written = pool.submit(write_all)
        garbage.clear()
        written.result()


def read_work(path: Path) -> pl.DataFrame:
    """A working frame as `write_work` stored it (FileNotFoundError when it never was)."""
    return pl.read_ipc(path)


def remove_run(conn: duckdb.DuckDBPyConnection, source: str, run_id: str) -> None:
    """Remove a run's working files. The source's folder stays: a concurrent run of the same
    source may be creating its own folder inside it."""
    shutil.rmtree(run_folder(conn, source, run_id), ignore_errors=True)
