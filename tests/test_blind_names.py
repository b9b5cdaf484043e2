"""The blind copies of the real paths know every name: the judges' copy (`runs_to_grade`) and
the reviewer's (`review_queue`) redact how a model names itself or its maker, from the
setups, the registry and the reviewed names, whoever the candidate is; and a scripted check
grades the stored output, so a correct answer that names its own company passes."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest
from stages import simulated_runs

from bench_pipeline.core.warehouse import connect
from bench_pipeline.grading.browser_offline import RecordedInspector
from bench_pipeline.grading.cycle import grade_runs
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.review_store import review_queue
from bench_pipeline.grading.sandbox import OfflineSandbox
from bench_pipeline.grading.scripted import run_check
from bench_pipeline.grading.store import runs_to_grade
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.models import ExactFieldsCheck

pytestmark = pytest.mark.store
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)

SELF_NAMING = (
    "As Claude, I would ship. I'm ChatGPT. Claude Opus 4.6 agrees; GPT 5.4 too; so does "
    "gpt\u20115.4. Signed, hermes\u00a03 405b instruct."
)
BLIND = (
    "As [redacted], I would ship. I'm [redacted]. [redacted] agrees; [redacted] too; so does "
    "[redacted]. Signed, [redacted]."
)
REGISTRY_ROW = (
    "nousresearch/hermes-3-llama-3.1-405b", "Nous: Hermes 3 405B Instruct", "nousresearch",
    "openrouter_models", "nousresearch/hermes-3-llama-3.1-405b", "nousresearch",
)  # fmt: skip
"""A registry model that no setup and no reviewed name spells: only the registry knows it."""


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    database = tmp_path_factory.mktemp("blind") / "warehouse" / "bench.duckdb"
    assert simulated_runs(database) > 0
    return database


def _run_of(conn, suite: str, api_id: str) -> str:
    return conn.execute(
        "SELECT min(r.run_id) FROM model_runs r JOIN setups s USING (setup_id) "
        "WHERE r.suite = ? AND s.api_id = ?",
        [suite, api_id],
    ).fetchall()[0][0]


def test_the_judges_and_the_reviewers_copies_know_every_name(database: Path) -> None:
    bank = load_bank()
    with connect(database) as conn:
        run_id = _run_of(conn, "pm", "z-ai/glm-5")  # the candidate is none of those named
        conn.execute("UPDATE model_runs SET output = ? WHERE run_id = ?", [SELF_NAMING, run_id])
        before = next(r for r in runs_to_grade(conn, bank) if r.run_id == run_id)
        assert "hermes" in before.blind_output  # not a name yet: the registry does not list it
        conn.execute("INSERT INTO models VALUES (?, ?, ?, ?, ?, ?)", list(REGISTRY_ROW))
        judged = next(r for r in runs_to_grade(conn, bank) if r.run_id == run_id)
        queue = review_queue(conn, bank, "Ada Reviewer", include_simulated=True, public_receipts=())
        stored = conn.execute("SELECT output FROM model_runs WHERE run_id = ?", [run_id]).fetchall()
    assert judged.blind_output == BLIND
    assert next(i for i in queue if i.run_id == run_id).output == BLIND
    assert judged.stored_output == SELF_NAMING == stored[0][0]  # the stored output is untouched


def test_a_scripted_check_grades_the_stored_output_not_the_blind_copy(database: Path) -> None:
    """A correct answer naming its own company ("Google LLC") passes; graded on the blind
    copy ("[redacted] LLC") it would fail."""
    bank = load_bank()
    answer = '{"vendor": "Google LLC", "region": "North"}'
    with connect(database) as conn:
        run_id = conn.execute(
            "SELECT min(r.run_id) FROM model_runs r JOIN setups s USING (setup_id) WHERE "
            "r.suite = 'navigator' AND s.api_id = 'google/gemini-3.1-pro-preview' "
            "AND r.case_id = 'nav-data-top-group' AND r.input_id = 'regions'"
        ).fetchall()[0][0]
        assert run_id is not None
        conn.execute("UPDATE model_runs SET output = ? WHERE run_id = ?", [answer, run_id])
        item = next(r for r in runs_to_grade(conn, bank) if r.run_id == run_id)
    check = ExactFieldsCheck.model_validate(
        {"kind": "exact_fields", "expected": {"vendor": "Google LLC"}}
    )
    inputs = tuple(
        i.model_copy(update={"check": check}) if i.id == item.input_id else i
        for i in item.case.inputs
    )
    item = dataclasses.replace(item, case=item.case.model_copy(update={"inputs": inputs}))
    assert item.company == "Google" and "[redacted] LLC" in item.blind_output
    assert run_check(check, item.blind_output).outcome == "fail"  # what main graded

    result = asyncio.run(grade_runs(
        [item], SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL, ["Google"], "c-blind",
        rates={}, now=NOW, screenshots=database.parent / "shots",
        inspector=RecordedInspector(database.parent / "none"), sandbox=OfflineSandbox({}),
    ))  # fmt: skip
    (grade,) = result.grades
    assert (grade["grader_kind"], grade["outcome"]) == ("script", "pass"), grade["reason"]
