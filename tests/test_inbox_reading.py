"""Both inboxes read every file with no warehouse connection open: while each inbox file is
being opened, another process opens the warehouse read-write, which DuckDB refuses while any
process holds it. Real DuckDB file, real intake functions, a real second process."""

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest
from signing import SUBMITTERS, signed_json
from stages import simulated_runs
from test_submissions import for_bank, valid

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.grading.review_store import ingest_review_files
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
PROBE = "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"


def _other_process_opens(database: Path) -> tuple[int, str]:
    """Open the warehouse read-write from a fresh process: (exit code, last error line)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(database)], capture_output=True, text=True, timeout=120
    )
    return done.returncode, (done.stderr.strip().splitlines() or [""])[-1]


@pytest.mark.timeout(300)
def test_inbox_files_are_read_while_another_process_can_open_the_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = tmp_path / "warehouse" / "bench.duckdb"
    assert simulated_runs(database, suites=("pm",)) > 0
    with connect(database) as conn:
        migrate(conn, settings.migrations_dir())
        run_id = conn.execute("SELECT min(run_id) FROM model_runs").fetchall()[0][0]
        # The probe can fail: with a connection open here, the other process is refused.
        code, error = _other_process_opens(database)
        assert code != 0 and "lock" in error.lower(), (code, error)
    bank = load_bank()
    submissions, reviews = tmp_path / "inbox" / "submissions", tmp_path / "inbox" / "reviews"
    submissions.mkdir(parents=True)
    reviews.mkdir(parents=True)
    (submissions / "good.json").write_text(signed_json(for_bank(bank, valid())))
    (submissions / "bad.json").write_text("{not json")
    review = {"schema_version": 1, "run_id": run_id, "reviewer": "Ada", "score": 4,
              "understood": "u", "missed": "m", "decisive_reason": "d"}  # fmt: skip
    (reviews / "good.json").write_text(json.dumps(review))
    (reviews / "bad.json").write_text(json.dumps(review | {"score": 9}))

    probes: dict[str, tuple[int, str]] = {}
    real_open = os.open

    def probing_open(path, flags, *args, **kwargs):  # the intakes open inbox files with os.open
        opened = Path(os.fsdecode(path))
        if opened.parent in (submissions, reviews):
            probes[f"{opened.parent.name}/{opened.name}"] = _other_process_opens(database)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", probing_open)
    warehouse = partial(connect, database)
    taken = ingest_inbox(warehouse, submissions, bank, {}, now=NOW, submitters=SUBMITTERS)
    read = ingest_review_files(warehouse, reviews, bank, NOW)
    monkeypatch.undo()

    every_file = {
        f"{d.name}/{n}" for d in (submissions, reviews) for n in ("good.json", "bad.json")
    }
    assert set(probes) == every_file
    refused = {name: error for name, (code, error) in probes.items() if code != 0}
    assert refused == {}, f"the warehouse was held while reading: {refused}"
    # ... and the results were still stored, one row per file.
    assert len(taken.accepted) == 1 and len(taken.rejected) == 1
    assert len(read.accepted) == 1 and [f for _, f, _ in read.rejected] == ["score"]
    with connect(database, read_only=True) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM submission_files), (SELECT count(*) FROM submitted_runs),"
            " (SELECT count(*) FROM review_files),"
            " (SELECT count(*) FROM practice_reviews WHERE reviewer = 'Ada')"  # simulated run
        ).fetchall()
    assert counts == [(2, 1, 2, 1)]
