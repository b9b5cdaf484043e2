"""A run's working frames as files: stored whole, read back equal, confined to their folder."""

from __future__ import annotations

import gc
import json
import weakref
from datetime import date
from pathlib import Path

import duckdb
import polars as pl
import pytest

from bench_pipeline.core.warehouse import connect, database_file
from bench_pipeline.ingest import work

pytestmark = pytest.mark.store


@pytest.fixture
def conn(tmp_path: Path):
    with connect(tmp_path / "warehouse" / "bench.duckdb") as opened:
        yield opened


def test_a_frame_is_read_back_as_it_was_written(conn, tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "text": ["a", None, "", "é" * 40],
            "number": [1.5, None, float("nan"), -0.0],
            "count": [1, 2, None, 2**62],
            "day": [date(2026, 1, 1), None, date(1970, 1, 1), date(9999, 12, 31)],
            "flag": [True, False, None, True],
        }
    )
    path = work.work_file(conn, "staged", "openrouter_models", "run-1", "openrouter_models")
    work.write_work(path, frame)
    back = work.read_work(path)
    assert back.schema == frame.schema
    assert back.equals(frame, null_equal=True)
    assert path.parent.parent.parent == tmp_path / "warehouse" / work.FOLDER


def test_a_failed_write_leaves_no_file(conn, monkeypatch) -> None:
    path = work.work_file(conn, "validated", "arena", "run-2", "arena_ratings")

    def broken(self, target, **_options):
        Path(target).write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_ipc", broken)
    with pytest.raises(OSError, match="disk full"):
        work.write_work(path, pl.DataFrame({"a": [1]}))
    assert not path.exists()
    assert [p.name for p in path.parent.iterdir()] == []  # nor its partial
    with pytest.raises(FileNotFoundError):
        work.read_work(path)


@pytest.mark.parametrize("hostile", ["../../escape", "/etc/passwd", "..", ".hidden", "a/b\\c"])
def test_odd_names_stay_inside_the_run_folder(conn, hostile: str) -> None:
    root = database_file(conn).parent / work.FOLDER
    path = work.work_file(conn, "quarantine", hostile, hostile, hostile)
    assert path.resolve().is_relative_to(root)
    assert len(path.relative_to(root).parts) == 3  # source / run / file, nothing deeper


def test_names_that_read_alike_get_their_own_folders(conn) -> None:
    folders = {work.run_folder(conn, "epoch", run) for run in ("a/b", "a_b", "a:b", "a b")}
    assert len(folders) == 4


def test_removing_a_run_keeps_the_other_runs_of_its_source(conn) -> None:
    kept = work.work_file(conn, "staged", "epoch", "run-a", "evaluation_rows")
    gone = work.work_file(conn, "staged", "epoch", "run-b", "evaluation_rows")
    for path in (kept, gone):
        work.write_work(path, pl.DataFrame({"a": [1]}))
    work.remove_run(conn, "epoch", "run-b")
    work.remove_run(conn, "epoch", "never-ran")  # nothing there: no error
    assert kept.is_file() and not gone.parent.exists()


def test_an_in_memory_database_has_no_file() -> None:
    with duckdb.connect() as memory, pytest.raises(ValueError, match="in memory"):
        database_file(memory)


class _Payload:
    """Stands for a parsed raw file."""


def test_frames_are_stored_while_the_garbage_is_freed(conn) -> None:
    frames = {
        work.work_file(conn, "staged", "epoch", "run-c", name): pl.DataFrame({"a": [n, None]})
        for n, name in enumerate(("evaluation_rows", "epoch_models"))
    }
    garbage = [_Payload(), _Payload()]
    held = weakref.ref(garbage[0])
    work.write_work_freeing(frames, garbage)
    assert garbage == [] and held() is None
    for path, frame in frames.items():
        assert work.read_work(path).equals(frame, null_equal=True)


def test_a_failed_store_still_frees_the_garbage_and_raises(conn, monkeypatch) -> None:
    path = work.work_file(conn, "staged", "arena", "run-d", "arena_ratings")

    def broken(self, target, **_options):
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_ipc", broken)
    garbage = [_Payload()]
    with pytest.raises(OSError, match="disk full"):
        work.write_work_freeing({path: pl.DataFrame({"a": [1]})}, garbage)
    assert garbage == [] and not path.exists()


@pytest.mark.parametrize("outcome", ["staged", "parser fails", "undeclared table"])
def test_staging_frees_the_raw_files_before_the_collector_is_back_on(
    warehouse, openrouter_listing, monkeypatch, outcome: str
) -> None:
    """Alive when the collector comes back, a parsed payload would be walked object by object
    by its first pass; staging drops every raw file, whatever its outcome, before that."""
    from bench_pipeline.ingest import engine
    from bench_pipeline.ingest.catalog import source_definitions
    from bench_pipeline.ingest.payload import RawFile
    from bench_pipeline.ingest.sources import PARSERS

    freed_with_collector: list[bool] = []
    loaded: list[weakref.ref] = []
    load = engine.load_raw_files

    def tracked(*args):
        files = load(*args)
        for raw in files:
            weakref.finalize(raw, lambda: freed_with_collector.append(gc.isenabled()))
            loaded.append(weakref.ref(raw))
        return files

    def parser(files):
        if outcome == "parser fails":
            raise ValueError("a parser bug")
        frames = PARSERS["openrouter_models"](files)
        return frames | ({"not_a_table": pl.DataFrame()} if outcome == "undeclared table" else {})

    monkeypatch.setattr(engine, "load_raw_files", tracked)
    definition = source_definitions()["openrouter_models"]
    payload = json.dumps({"data": openrouter_listing["data"][:5]}).encode()
    with warehouse.connect() as conn:
        run = engine.fetch_and_store(
            conn,
            definition,
            lambda: [RawFile("models.json", payload)],
            warehouse.raw_root,
            "recorded",
        )
        run = engine.stage(conn, run, definition, parser)
    assert run.status == ("pending" if outcome == "staged" else "rejected"), run.reason
    assert loaded and all(ref() is None for ref in loaded)
    assert freed_with_collector == [False] * len(loaded)
    assert gc.isenabled()
