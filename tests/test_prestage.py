"""Staging ahead in a worker process: the same frames as the step, and the step never
depends on the worker (not begun, unreadable job, killed worker, closed early)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest

from bench_pipeline.ingest import engine, prestage
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.payload import RawFile
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.ingest.work import run_folder, staged_file

pytestmark = pytest.mark.integration  # spawns a worker process

SOURCE = "openrouter_models"
TABLE = "openrouter_models"


def slow_parse(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    """The source's parser, a second and a half late (the worker is busy meanwhile)."""
    time.sleep(1.5)
    return PARSERS[SOURCE](files)


def stuck_parse(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    time.sleep(60)
    return PARSERS[SOURCE](files)


def _fetched(warehouse, listing: dict, count: int) -> engine.SourceRun:
    """A new pending run holding the first `count` models of the real listing."""
    payload = json.dumps({"data": listing["data"][:count]}).encode()
    with warehouse.connect() as conn:
        run = engine.fetch_and_store(
            conn,
            source_definitions()[SOURCE],
            lambda: [RawFile("models.json", payload)],
            warehouse.raw_root,
            "recorded",
        )
    assert run.status == "pending", run.reason
    return run


def _submit(warehouse, prestager: prestage.Prestager, run: engine.SourceRun, parse) -> Path:
    with warehouse.connect() as conn:
        paths = engine.raw_file_paths(conn, run.run_id)
        folder = run_folder(conn, run.source, run.run_id)
    prestager.submit(run.run_id, source_definitions()[SOURCE], parse, paths, folder)
    return folder


def _until(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_payload_staged_ahead_is_staged_as_the_step_stages_it(
    warehouse, openrouter_listing, tmp_path: Path
) -> None:
    run = _fetched(warehouse, openrouter_listing, 120)
    with prestage.ahead() as prestager:
        folder = _submit(warehouse, prestager, run, PARSERS[SOURCE])
        _until(lambda: prestager._runs[run.run_id].begun)  # not begun, it would be withdrawn
        ahead = prestager.take(run.run_id)
    assert ahead is not None and ahead.rejection is None
    assert ahead.rows_staged == {TABLE: 120}
    with warehouse.connect() as conn:
        files = engine.load_raw_files(conn, run.run_id)
    here = engine.stage_payload(
        source_definitions()[SOURCE], PARSERS[SOURCE], files, lambda t: tmp_path / f"{t}.arrow"
    )
    assert here == ahead
    assert pl.read_ipc(staged_file(folder, TABLE)).equals(pl.read_ipc(tmp_path / f"{TABLE}.arrow"))
    with warehouse.connect() as conn:  # the step takes it as it is, then validates it
        staged = engine.stage(conn, run, source_definitions()[SOURCE], PARSERS[SOURCE], ahead)
        checked = engine.validate(conn, staged, source_definitions()[SOURCE])
    assert staged.rows_staged == {TABLE: 120} and checked.rows_valid == {TABLE: 120}


def test_a_payload_not_begun_is_taken_back_for_the_step(warehouse, openrouter_listing) -> None:
    first = _fetched(warehouse, openrouter_listing, 10)
    second = _fetched(warehouse, openrouter_listing, 20)
    with prestage.ahead() as prestager:
        _submit(warehouse, prestager, first, slow_parse)
        _submit(warehouse, prestager, second, PARSERS[SOURCE])
        assert prestager.take(second.run_id) is None  # queued behind the slow one: withdrawn
        taken = prestager.take(first.run_id)
        assert taken is not None and taken.rows_staged == {TABLE: 10}
    with warehouse.connect() as conn:
        staged = engine.stage(conn, second, source_definitions()[SOURCE], PARSERS[SOURCE])
    assert staged.rows_staged == {TABLE: 20}


def test_a_job_the_worker_cannot_load_is_left_to_the_step(warehouse, openrouter_listing) -> None:
    """A parser the worker cannot import (here a lambda) costs that payload only."""
    first = _fetched(warehouse, openrouter_listing, 10)
    second = _fetched(warehouse, openrouter_listing, 20)
    with prestage.ahead() as prestager:
        _submit(warehouse, prestager, first, lambda files: PARSERS[SOURCE](files))
        _submit(warehouse, prestager, second, PARSERS[SOURCE])
        _until(lambda: prestager._runs[second.run_id].begun)
        assert prestager.take(first.run_id) is None
        taken = prestager.take(second.run_id)
    assert taken is not None and taken.rows_staged == {TABLE: 20}


def test_a_worker_killed_mid_payload_leaves_every_payload_to_the_steps(
    warehouse, openrouter_listing
) -> None:
    first = _fetched(warehouse, openrouter_listing, 10)
    second = _fetched(warehouse, openrouter_listing, 20)
    with prestage.ahead() as prestager:
        _submit(warehouse, prestager, first, stuck_parse)
        _submit(warehouse, prestager, second, PARSERS[SOURCE])
        _until(lambda: prestager._worker is not None and prestager._runs[first.run_id].begun)
        time.sleep(0.5)  # inside the parse
        os.kill(prestager._worker.pid, 9)
        assert prestager.take(first.run_id) is None
        assert prestager.take(second.run_id) is None
        third = _fetched(warehouse, openrouter_listing, 30)
        _submit(warehouse, prestager, third, PARSERS[SOURCE])  # nothing takes it any more
        assert prestager.take(third.run_id) is None
    definition = source_definitions()[SOURCE]
    with warehouse.connect() as conn:
        for run, count in ((first, 10), (second, 20), (third, 30)):
            staged = engine.stage(conn, run, definition, PARSERS[SOURCE], prestage.take(run.run_id))
            assert staged.rows_staged == {TABLE: count}


def test_closing_stops_a_worker_in_the_middle_of_a_payload(warehouse, openrouter_listing) -> None:
    run = _fetched(warehouse, openrouter_listing, 10)
    prestager = prestage.Prestager()
    _submit(warehouse, prestager, run, stuck_parse)
    _until(lambda: prestager._worker is not None and prestager._runs[run.run_id].begun)
    worker = prestager._worker
    started = time.monotonic()
    prestager.close()
    assert time.monotonic() - started < 10  # not the minute the parse would take
    assert not worker.is_alive()
    assert prestager.take(run.run_id) is None


def test_nothing_is_staged_ahead_outside_bench_run(warehouse, openrouter_listing) -> None:
    run = _fetched(warehouse, openrouter_listing, 10)
    with warehouse.connect() as conn:
        assert not prestage.submit(conn, run, source_definitions()[SOURCE], PARSERS[SOURCE])
    assert prestage.take(run.run_id) is None
    with prestage.ahead() as prestager, warehouse.connect() as conn:
        assert prestage.submit(conn, run, source_definitions()[SOURCE], PARSERS[SOURCE])
        _until(lambda: prestager._runs[run.run_id].begun)
        assert prestage.take(run.run_id) is not None


WORKER_ORPHANED = """
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_prestage import stuck_parse
from bench_pipeline.ingest import prestage
from bench_pipeline.ingest.catalog import source_definitions
prestager = prestage.Prestager()
prestager.submit("run-1", source_definitions()["openrouter_models"], stuck_parse,
                 [("models.json", Path({raw!r}))], Path({folder!r}))
while prestager._worker is None or not prestager._runs["run-1"].begun:
    time.sleep(0.02)
time.sleep(1.0)  # sent, and inside the parse (not waiting on the pipe, which would end it)
print(prestager._worker.pid, flush=True)
os._exit(0)  # dies without closing anything
"""


def test_the_worker_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    raw = tmp_path / "models.json"
    raw.write_text(json.dumps({"data": []}))
    script = WORKER_ORPHANED.format(
        tests=str(Path(__file__).parent), raw=str(raw), folder=str(tmp_path / "run")
    )
    # the worker holds the output pipe too: it must die for the run to end (its parse sleeps 60 s)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    pid = int(done.stdout.split()[-1])
    _until(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 10)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True
