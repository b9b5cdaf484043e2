"""Faults around who writes and what is read: two runs of one source at once, a source run
whose process is killed, FIFOs, links and oversized files in the inboxes, and names that a
spreadsheet would run as formulas. Each goes through the real code the pipeline runs, on
copies of the recorded snapshots."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from functools import partial
from pathlib import Path

import pytest
from faults_pipeline import (
    Built,
    Pipeline,
    build_recorded,
    count_faults,
    listing,
    working_runs,
)
from signing import SUBMITTERS

from bench_pipeline.core import settings
from bench_pipeline.core.files import path_segment
from bench_pipeline.core.inbox import MAX_INBOX_BYTES
from bench_pipeline.core.warehouse import connect, migrate, table_checksum
from bench_pipeline.grading.review_store import ingest_review_files
from bench_pipeline.ingest import engine
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.release.build import read_latest
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.sensors.inbox import new_files
from bench_pipeline.taskbank import load_bank

pytestmark = [pytest.mark.assets, pytest.mark.faults]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_recorded(tmp_path_factory.mktemp("writer-faults"))


@pytest.fixture
def pipeline(built: Built, tmp_path: Path) -> Pipeline:
    return Pipeline.copy_of(built, tmp_path)


def _models(pipeline: Pipeline) -> list[dict]:
    return json.loads(pipeline.payload("openrouter_models")["models.json"])["data"]


# --- two writers of one source -----------------------------------------------------------------


@pytest.mark.integration
def test_two_interleaved_runs_of_one_source_each_publish_only_their_own_rows(
    pipeline: Pipeline,
) -> None:
    """Run A and run B of one source go stage by stage side by side (each on its own
    connection, as two processes would): neither reads the other's working tables, the same
    payload never gets one run id twice, and each publish carries exactly its own rows."""
    definition = source_definitions()["openrouter_models"]
    models = _models(pipeline)
    payload_a, payload_b = models[:300], models[100:]
    clients = [
        pipeline.client("openrouter_models", {"models.json": listing({"data": payload_a})}),
        pipeline.client("openrouter_models", {"models.json": listing({"data": payload_b})}),
        pipeline.client("openrouter_models", {"models.json": listing({"data": payload_b})}),
    ]
    raw = pipeline.root / "raw"
    with connect(pipeline.database) as one, connect(pipeline.database) as two:
        conns = [one, two, two]
        runs = [
            engine.fetch_and_store(c, definition, lambda k=k: k.fetch(definition), raw, "recorded")
            for c, k in zip(conns, clients, strict=True)
        ]
        assert len({r.run_id for r in runs}) == 3  # B twice: two ids, claimed
        runs = [
            engine.stage(c, r, definition, PARSERS[r.source])
            for c, r in zip(conns, runs, strict=True)
        ]
        runs = [engine.validate(c, r, definition) for c, r in zip(conns, runs, strict=True)]
        assert [sum(r.rows_valid.values()) for r in runs] == [300, 314, 314]

        a = engine.publish(one, runs[0], definition)
        live_a = one.execute("SELECT model_id, source_run_id FROM openrouter_models").fetchall()
        b = engine.publish(two, runs[1], definition)
        live_b = two.execute("SELECT model_id, source_run_id FROM openrouter_models").fetchall()
        b_again = engine.publish(two, runs[2], definition)
        leftovers = len(working_runs(pipeline.database))

    assert (a.status, b.status, b_again.status) == ("accepted", "accepted", "accepted")
    assert sorted(m for m, _ in live_a) == sorted(m["id"] for m in payload_a)
    assert {r for _, r in live_a} == {a.run_id}
    assert sorted(m for m, _ in live_b) == sorted(m["id"] for m in payload_b)
    assert {r for _, r in live_b} == {b.run_id}
    assert leftovers == 0  # every run removed its own working files
    count_faults(2)


KILLED_SOURCE_RUN = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from bench_pipeline.core.warehouse import connect
    from bench_pipeline.ingest import engine
    from bench_pipeline.ingest.catalog import source_definitions
    from bench_pipeline.ingest.sources import PARSERS
    from bench_pipeline.resources.sources import RecordedSnapshotClient

    database, raw_root, snapshots = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    definition = source_definitions()["openrouter_models"]
    client = RecordedSnapshotClient(snapshots_dir=snapshots)
    with connect(database) as conn:
        run = engine.fetch_and_store(
            conn, definition, lambda: client.fetch(definition), raw_root, "recorded"
        )
        run = engine.stage(conn, run, definition, PARSERS["openrouter_models"])
    print("STAGED", run.run_id, flush=True)
    time.sleep(60)
    """
)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_killed_source_run_is_recorded_by_the_next_run(pipeline: Pipeline) -> None:
    before = pipeline.state(with_price_history=False)
    script = pipeline.root / "killed_source_run.py"
    script.write_text(KILLED_SOURCE_RUN)
    client = pipeline.client(
        "openrouter_models", {"models.json": listing({"data": _models(pipeline)[:300]})}
    )
    child = subprocess.Popen(
        [sys.executable, str(script), str(pipeline.database), str(pipeline.root / "raw"),
         str(client.snapshots_dir)],
        stdout=subprocess.PIPE, text=True, cwd=settings.REPO_ROOT,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("STAGED"), line
        killed = line.split()[1]
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    assert pipeline.query("SELECT count(*) FROM source_runs WHERE run_id = ?", [killed]) == [(0,)]
    [left] = working_runs(pipeline.database)  # the staged frame the dead run wrote
    assert left == f"{path_segment('openrouter_models')}/{path_segment(killed)}"
    assert list((pipeline.database.parent / "work" / left).iterdir())

    # The next run (of the payload already live, so recorded as unchanged) closes the dead one.
    run = pipeline.ingest("openrouter_models", pipeline.payload("openrouter_models"))
    assert run.status == "unchanged", run.reason
    [(status, reason)] = pipeline.query(
        "SELECT status, reason FROM source_runs WHERE run_id = ?", [killed]
    )
    assert status == "rejected"
    assert reason.startswith(f"abandoned: the process that ran it (pid {child.pid}")
    pipeline.publish()
    assert pipeline.state(with_price_history=False) == before
    # the dead run's working files went with it
    assert working_runs(pipeline.database) == []


# --- inboxes -------------------------------------------------------------------------------------


def _hostile_inbox(folder: Path) -> dict[str, str]:
    """A FIFO, a link to /dev/zero, a link to a good file, and an oversized file, each named
    `*.json`; returns name → the refusal each must get."""
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    (folder / "good-target.txt").write_text("{}")
    (folder / "link.json").symlink_to(folder / "good-target.txt")
    with open(folder / "huge.json", "wb") as handle:
        handle.truncate(MAX_INBOX_BYTES + 1)  # sparse: big to stat, nothing to write
    return {
        "fifo.json": "a FIFO, not a regular file; never opened",
        "zero.json": "a symbolic link, not a regular file; never opened",
        "link.json": "a symbolic link, not a regular file; never opened",
        "huge.json": f"{MAX_INBOX_BYTES + 1} bytes, over the inbox limit of {MAX_INBOX_BYTES}",
    }


def _within(seconds: float, action):
    """Run `action` in a thread; fail (instead of hanging) if it takes longer."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(action()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading after {seconds}s: it opened what it must not"
    return result[0]


@pytest.mark.timeout(120)
def test_inboxes_record_fifos_links_and_oversized_files_as_rejected_unopened(
    tmp_path: Path,
) -> None:
    database = tmp_path / "warehouse" / "bench.duckdb"
    with connect(database) as conn:
        migrate(conn, settings.migrations_dir())
        before = {t: table_checksum(conn, t) for t in ("submitted_runs", "reviews")}
    submissions, reviews = tmp_path / "inbox" / "submissions", tmp_path / "inbox" / "reviews"
    expected = _hostile_inbox(submissions)
    _hostile_inbox(reviews)
    bank = load_bank()

    for folder in (submissions, reviews):  # the sensors look without opening either
        found, _cursor = _within(10, lambda f=folder: new_files(f, None))
        assert {p.name for p, _ in found} == set(expected)

    warehouse = partial(connect, database)
    report = _within(
        30, lambda: ingest_inbox(warehouse, submissions, bank, {}, submitters=SUBMITTERS)
    )
    review_report = _within(30, lambda: ingest_review_files(warehouse, reviews, bank))
    with connect(database) as conn:
        files = conn.execute("SELECT file_name, status, reason FROM submission_files").fetchall()
        review_files = conn.execute("SELECT file_name, status, reason FROM review_files").fetchall()
        after = {t: table_checksum(conn, t) for t in ("submitted_runs", "reviews")}
    again = ingest_inbox(warehouse, submissions, bank, {}, submitters=SUBMITTERS)

    assert report.accepted == [] and review_report.accepted == []
    for recorded in (files, review_files):
        assert {name for name, _, _ in recorded} == set(expected)
        for name, status, reason in recorded:
            assert status == "rejected"
            assert expected[name] in reason, (name, reason)
    assert after == before
    assert again.seen_before == len(expected) and again.rejected == []  # recorded once
    count_faults(2 * len(expected))


# --- formula-leading names in downloads --------------------------------------------------------

FORMULAS = ('=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tTab", "\rReturn")


@pytest.mark.integration
def test_formula_leading_names_are_neutralised_in_csv_and_exact_in_json(
    pipeline: Pipeline,
) -> None:
    models = _models(pipeline)
    added = []
    for number, formula in enumerate(FORMULAS):
        model_id = f"faults/formula-{number}"
        added.append(
            dict(
                models[0], id=model_id, name=formula, canonical_slug=model_id, hugging_face_id=None
            )
        )
    run = pipeline.ingest("openrouter_models", {"models.json": listing({"data": models + added})})
    assert run.status == "accepted", run.reason
    assert run.rows_valid == {"openrouter_models": len(models) + len(FORMULAS)}
    outcome = pipeline.publish()
    folder = pipeline.releases / str(read_latest(pipeline.releases))
    assert outcome.path == folder

    with (folder / "data" / "models.csv").open(newline="", encoding="utf-8") as handle:
        csv_names = {row["model_id"]: row["name"] for row in csv.DictReader(handle)}
    json_names = {
        row["model_id"]: row["name"]
        for row in json.loads((folder / "data" / "models.json").read_text())
    }
    # JSON holds each name exactly as published; the registry may tidy a name's edges (the
    # carriage return), so the CSV rule is checked on whatever it published.
    published = set(json_names.values())
    assert {f for f in FORMULAS if f in published} >= set(FORMULAS[:5])
    leads = ("=", "+", "-", "@", "\t", "\r")
    formulas = {m for m, n in json_names.items() if n and n.startswith(leads)}
    assert len(formulas) >= 5
    for model_id, name in json_names.items():
        expected = "'" + name if model_id in formulas else (name or "")
        assert csv_names[model_id] == expected, (model_id, name, csv_names[model_id])
    count_faults(len(FORMULAS))
