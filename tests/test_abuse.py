"""Reliability and abuse: a thousand malformed submission and review files from hypothesis
through the real intake (none crashes it, each is rejected with its reason, the valid ones
beside them are kept), and the same asset materialised twice at once (one waits, nothing is
corrupted). Counts are printed at the end of the test session (`abuse_tally`)."""

import json
import multiprocessing
import random
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest
from abuse_tally import TALLY
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from signing import SUBMITTERS, sign
from stages import simulated_runs
from test_submissions import for_bank, valid

from bench_pipeline.core import settings as bench_settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.grading.review_store import ingest_review_files
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.taskbank import load_bank

pytestmark = [pytest.mark.assets, pytest.mark.abuse]
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
FILES = 1_000
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


def _mutate(document: dict, rng: random.Random, value) -> bytes:
    """One malformed variant of a valid document: a field dropped, retyped or added, or the
    bytes cut, depending on the draw."""
    kind = rng.randrange(4)
    changed = dict(document)
    field = rng.choice(sorted(changed))
    if kind == 0:
        del changed[field]
    elif kind == 1:
        changed[field] = value
    elif kind == 2:
        changed[f"x_{rng.randrange(10**6)}"] = value
    else:
        text = json.dumps(changed)
        return text[: rng.randrange(1, len(text))].encode()
    return json.dumps(changed).encode()


@settings(max_examples=1, deadline=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(values=st.lists(JSON_VALUES, min_size=FILES, max_size=FILES), seed=st.integers(0, 2**32))
def test_a_thousand_malformed_files_never_crash_the_intake(values, seed, tmp_path_factory):
    home = tmp_path_factory.mktemp("abuse")
    bank = load_bank()
    rng = random.Random(seed)
    submissions, reviews = home / "submissions", home / "reviews"
    submissions.mkdir()
    reviews.mkdir()
    database = home / "bench.duckdb"
    simulated_runs(database, suites=("pm",))
    with connect(database) as conn:
        run_id = conn.execute("SELECT min(run_id) FROM model_runs").fetchall()[0][0]
    good_submission = sign(for_bank(bank, valid()))
    good_review = {"schema_version": 1, "run_id": run_id, "reviewer": "Ada", "score": 3,
                   "understood": "u", "missed": "m", "decisive_reason": "d"}  # fmt: skip
    written = 0
    for number, value in enumerate(values):
        folder, base = (submissions, good_submission) if number % 2 else (reviews, good_review)
        data = _mutate(base, rng, value)
        (folder / f"bad-{number:04d}.json").write_bytes(data)
        written += 1
    (submissions / "good.json").write_text(json.dumps(good_submission))
    # Another reviewer: a mutant that stayed valid may already hold Ada's one review of the run.
    (reviews / "good.json").write_text(json.dumps(good_review | {"reviewer": "Grace"}))

    with connect(database) as conn:
        migrate(conn, bench_settings.migrations_dir())
    taken = ingest_inbox(
        partial(connect, database), submissions, bank, {}, now=NOW, submitters=SUBMITTERS
    )
    read = ingest_review_files(partial(connect, database), reviews, bank, NOW)
    with connect(database) as conn:
        files = conn.execute(
            "SELECT status, count(*), count(*) FILTER (WHERE reason IS NULL OR reason = '') "
            "FROM (SELECT status, reason FROM submission_files "
            "      UNION ALL SELECT status, reason FROM review_files) GROUP BY 1"
        ).fetchall()
        kept = conn.execute(
            "SELECT (SELECT count(*) FROM submitted_runs), "
            "(SELECT count(*) FROM practice_reviews)"  # reviews of a simulated run: practice
        ).fetchall()[0]
    by_status = {status: (n, no_reason) for status, n, no_reason in files}
    accepted = len(taken.accepted) + len(read.accepted)
    rejected = len(taken.rejected) + len(read.rejected)
    # A mutation can leave a document valid (e.g. an optional field removed): it is kept. Two
    # files with the same bytes are one file (known by content): the second is "seen before".
    assert accepted + rejected + taken.seen_before + read.seen_before == written + 2
    assert by_status["rejected"][0] == rejected and by_status["rejected"][1] == 0
    assert by_status["accepted"][0] == accepted
    assert not any(str(r.source).endswith("/good.json") for r in taken.rejected)
    assert "good.json" not in {name for name, _field, _reason in read.rejected}
    assert kept == (len(taken.accepted), len(read.accepted))
    assert len(taken.accepted) >= 1 and len(read.accepted) >= 1
    TALLY.add(inputs=written + 2, survived=written + 2, lost=0)
    TALLY.add(distinct=accepted + rejected)


def _materialise_task_bank(home: str, results) -> None:
    import os

    os.environ["BENCH_HOME"] = home
    import dagster as dg

    from bench_pipeline.assets.runs import task_bank
    from bench_pipeline.resources.warehouse import WarehouseResource

    with dg.instance_for_test() as instance:
        outcome = dg.materialize(
            [task_bank], instance=instance, resources={"warehouse": WarehouseResource()},
            raise_on_error=False,
        )  # fmt: skip
    results.put(outcome.success)


def test_the_same_asset_materialised_twice_at_once(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [
        context.Process(target=_materialise_task_bank, args=(str(tmp_path), results))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    outcomes = [results.get(timeout=5) for _ in workers]
    # The second writer waits for the first's lock (the warehouse retries), so both succeed.
    assert outcomes == [True, True]
    with connect(tmp_path / "warehouse" / "bench.duckdb") as conn:
        cases = conn.execute(
            "SELECT count(*), count(DISTINCT (suite, case_id, version)) FROM task_cases"
        ).fetchall()[0]
        setups = conn.execute("SELECT count(*), count(DISTINCT setup_id) FROM setups").fetchall()
    assert cases[0] == cases[1] == len(load_bank())
    assert setups[0][0] == setups[0][1]
    TALLY.add(faults=1, lost=0)
