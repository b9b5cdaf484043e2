"""`bench review` driven through a real terminal (pexpect): the identity stays hidden until
the review is submitted, is shown after, and the stored review can never be changed (here a
practice review of a simulated run, stored apart from people's reviews of real runs)."""

import sys
from pathlib import Path

import duckdb
import pexpect
import pytest
from stages import bench_env, simulated_runs

from bench_pipeline.core.warehouse import connect
from bench_pipeline.grading.review_model import Review
from bench_pipeline.grading.review_store import ReviewRefused, submit_review
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.integration
BENCH = str(Path(sys.executable).with_name("bench"))


def _spawn(home: Path) -> pexpect.spawn:
    return pexpect.spawn(
        BENCH,
        ["review", "--reviewer", "Ada Reviewer", "--include-simulated"],
        env=bench_env(home),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )


def test_a_blind_review_through_the_terminal(tmp_path: Path) -> None:
    database = tmp_path / "warehouse" / "bench.duckdb"
    assert simulated_runs(database, suites=("pm",)) > 0
    with duckdb.connect(str(database), read_only=True) as conn:
        setups = conn.execute("SELECT label, api_id, harness FROM setups").fetchall()
        waiting = conn.execute("SELECT count(*) FROM model_runs WHERE suite = 'pm'").fetchall()

    child = _spawn(tmp_path)
    child.expect(f"{waiting[0][0]} outputs wait for a blind review by Ada Reviewer")
    child.expect("Score 1-5")
    blind = child.before
    assert "THE TASK" in blind and "THE OUTPUT" in blind
    for label, api_id, harness in setups:  # nothing before the submit names the setup
        for name in (label, api_id, api_id.split("/")[-1], harness):
            assert name not in blind, name
    assert "[redacted]" in blind  # the simulated output names its model: blanked out
    child.sendline("7")
    child.expect("whole number from 1 to 5")
    child.sendline("4")
    child.expect("What did it understand")
    child.sendline("The launch slipped and customers need a date.\n.")
    child.expect("What did it miss")
    child.sendline(".")  # free text ends at a line holding only "."
    child.expect("An answer is needed")
    child.sendline("The workaround for the three named customers.\n.")
    child.expect("decisive reason")
    child.sendline("Clear first sentence, but no workaround.\n.")
    index = child.expect(["Critical failure committed", "Submit\\?"])
    if index == 0:
        child.sendline("")
        child.expect("Submit\\?")
    child.sendline("y")
    child.expect("Stored practice review (rv[0-9a-f]{16})")
    review_id = child.match.group(1)
    child.expect("Next output")
    revealed = child.before
    assert "Revealed now that your review is stored" in revealed
    assert any(label in revealed and api_id in revealed for label, api_id, _ in setups)
    child.sendline("n")
    child.expect("Done: 1 reviews stored")
    child.expect(pexpect.EOF)

    with duckdb.connect(str(database), read_only=True) as conn:
        stored = conn.execute(
            "SELECT run_id, reviewer, score, missed, origin FROM practice_reviews "
            "WHERE review_id = ?",
            [review_id],
        ).fetchall()
    assert len(stored) == 1
    run_id, reviewer, score, missed, origin = stored[0]
    assert (reviewer, score, origin) == ("Ada Reviewer", 4, "cli")
    assert missed == "The workaround for the three named customers."

    # The same person cannot review the run again, from the terminal or otherwise.
    child = _spawn(tmp_path)
    child.expect(f"{waiting[0][0] - 1} outputs wait")
    child.expect("Score 1-5")  # input typed before a question is discarded: wait for it
    child.sendeof()
    child.expect(pexpect.EOF)
    again = Review(run_id=run_id, reviewer="Ada Reviewer", score=1, understood="x",
                   missed="x", decisive_reason="changed my mind")  # fmt: skip
    with connect(database) as conn:
        with pytest.raises(ReviewRefused, match=r"already reviewed .* never changed"):
            submit_review(conn, again, load_bank())
        after = conn.execute(
            "SELECT score, decisive_reason FROM practice_reviews WHERE review_id = ?", [review_id]
        ).fetchall()
    assert after == [(4, "Clear first sentence, but no workaround.")]
