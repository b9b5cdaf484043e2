"""Navigator classic v1: its own library, the pinned judge recorded on every tier-2 score, the
stored overall kept, and the display rule (a stored 5 with a weak dimension shown as 4,
`mixed`) triggering in the demo and in the fit ranking."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migrate
from bench_pipeline.grading.blind_names import ALIAS_FILE, reviewed_names
from bench_pipeline.grading.blinding import BlindNames
from bench_pipeline.grading.decision import quoted_output
from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider, Usage
from bench_pipeline.runs.rates import load_pricing_file
from bench_pipeline.runs.v1_comparison import (
    V1Candidate,
    comparison_id,
    run_comparison,
    run_library_demo,
    store_comparison,
)
from bench_pipeline.scores.navigator_v1_tables import v1_frames
from bench_pipeline.taskbank.v1_library import (
    V1LibraryError,
    library_task,
    load_config,
    load_library,
)

pytestmark = pytest.mark.store

# The active v1 library as methodology v1 lists it (title, category, tier; every one at v1).
SEED_LIBRARY = [
    ("Invoice field extraction", "extraction", 1),
    ("Receipt total extraction", "extraction", 1),
    ("Support intent classification", "support", 1),
    ("Repair broken JSON", "coding", 1),
    ("Meeting action items", "summarization", 1),
    ("Five-bullet brief", "writing", 1),
    ("Earnings call summary", "summarization", 2),
    ("Customer changelog draft", "writing", 2),
    ("Explain a bug in plain language", "coding", 2),
    ("Tone-matched support reply", "support", 2),
    ("Ambiguous ticket reply", "support", 2),
    ("Conflicting status update", "writing", 2),
    ("Schema-bound extraction", "extraction", 1),
    ("Explain a subtle loop bug", "coding", 2),
    ("Bat and ball", "reasoning", 1),
    ("Long support-thread summary", "summarization", 2),
]
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(tmp_path / "bench.duckdb"))
    migrate(connection, settings.migrations_dir())
    yield connection
    connection.close()


def _rates():
    rates = defaultdict(list)
    for row in load_pricing_file():
        rates[row.api_id].append(row.rates)
    return rates


class Scripted(Provider):
    """The outside edge: candidates answer `answers[model]` (finish `finishes[model]`), and the
    judge replies `verdicts[answer]` for the answer it is quoted."""

    name = "scripted"

    def __init__(self, answers: dict, verdicts: dict, finishes: dict | None = None) -> None:
        self.answers, self.verdicts, self.finishes = answers, verdicts, finishes or {}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if request.model in self.answers:
            content = self.answers[request.model]
            finish = self.finishes.get(request.model, "stop")
        else:
            content = json.dumps(self.verdicts[quoted_output(request.messages[-1].content)])
            finish = "stop"
        return ChatResponse(
            request_hash=request.request_hash(), model=request.model, content=content,
            finish_reason=finish, wall_seconds=0.1, provider=self.name,
            usage=Usage(prompt_tokens=100, completion_tokens=50, per_request=True),
        )  # fmt: skip


def test_the_library_is_the_seeds_sixteen_tasks_with_tier_and_version() -> None:
    library = load_library()
    assert [(t.title, t.category, t.tier) for t in library] == SEED_LIBRARY
    assert {t.version for t in library} == {"v1"}
    assert all((t.check is None) == (t.tier == 2) for t in library)


def test_the_judge_and_rubric_are_pinned_configuration() -> None:
    config = load_config()
    assert (config.judge_model, config.rubric_version) == (
        "google/gemini-2.5-flash-lite",
        "rubric-v1",
    )


def test_a_person_extends_the_library_and_a_bad_entry_names_file_task_and_field(
    tmp_path: Path,
) -> None:
    good = settings.v1_library_path().read_text(encoding="utf-8")
    extra = '\n[[task]]\nid = "v1-haiku"\ntitle = "Haiku"\ncategory = "writing"\ntier = 2\n'
    extra += 'version = "v1"\nprompt = "Write a haiku about rain."\nguidance = "5-7-5."\n'
    path = tmp_path / "library.toml"
    path.write_text(good + extra, encoding="utf-8")
    assert library_task(load_library(path), "v1-haiku").tier == 2
    path.write_text(good + extra.replace("tier = 2", "tier = 3"), encoding="utf-8")
    with pytest.raises(V1LibraryError, match=r"library\.toml: task 'v1-haiku': tier:"):
        load_library(path)
    path.write_text(good + extra.replace('guidance = "5-7-5."\n', ""), encoding="utf-8")
    with pytest.raises(V1LibraryError, match=r"task 'v1-haiku'.*tier-2 task has `guidance`"):
        load_library(path)
    path.write_text(good + extra + extra, encoding="utf-8")
    with pytest.raises(V1LibraryError, match="id: a second task with this id"):
        load_library(path)


def _compare(conn, provider, models, task_id, calls_per_task=1):
    config = load_config().model_copy(update={"calls_per_task": calls_per_task})
    task = library_task(load_library(), task_id)
    candidates = [V1Candidate(m, m) for m in models]
    cid = comparison_id("compare", [task], candidates, config, salt="t")
    result = asyncio.run(
        run_comparison(provider, provider, candidates, [task], config, _rates(), comparison=cid)
    )
    store_comparison(conn, result, config, origin="compare", key_source="none", endpoint=None)
    return v1_frames(conn, load_library(), NOW.replace(year=2027))


def test_a_stored_5_with_a_weak_dimension_shows_4_mixed_and_ranks_below_a_clean_4_5(conn) -> None:
    strong = {"accuracy": 5, "completeness": 5, "instructions": 5, "clarity": 5}
    provider = Scripted(
        answers={"openai/gpt-5.4": "answer A", "z-ai/glm-5": "answer B"},
        verdicts={
            "answer A": {"overall": 5, "dimensions": strong | {"clarity": 3}, "reason": "a"},
            "answer B": {"overall": 4.5, "dimensions": strong | {"clarity": 4}, "reason": "b"},
        },
    )
    frames = _compare(conn, provider, ["openai/gpt-5.4", "z-ai/glm-5"], "v1-loop-bug")
    results = {r["model"]: r for r in frames["navigator_v1_results"].to_dicts()}
    capped = results["openai/gpt-5.4"]
    assert (capped["stored_overall"], capped["displayed_overall"], capped["label"]) == (
        5.0, 4.0, "mixed",
    )  # fmt: skip
    assert json.loads(capped["dimensions"])["clarity"] == 3
    # The stored overall is never rewritten.
    assert conn.execute(
        "SELECT stored_overall FROM v1_scores JOIN v1_runs USING (run_id) WHERE api_id = ?",
        ["openai/gpt-5.4"],
    ).fetchall() == [(5.0,)]
    for row in results.values():  # every tier-2 score records the pinned judge and rubric
        assert (row["grader"], row["rubric_version"], row["methodology_version"]) == (
            "google/gemini-2.5-flash-lite", "rubric-v1", "v1",
        )  # fmt: skip
        assert row["total_cost_usd"] == str(
            Decimal(row["candidate_cost_usd"]) + Decimal(row["judge_cost_usd"])
        )
    fit = frames["navigator_v1_fit"].filter(
        (pl.col("task") == "v1-loop-bug") & (pl.col("monthly_volume") == 1_000)
    )
    assert fit["model"].to_list() == ["z-ai/glm-5", "openai/gpt-5.4"]  # 4.5 beats a capped 5


def test_a_5_shows_only_when_every_dimension_is_above_3_and_the_output_is_complete(conn) -> None:
    strong = {"accuracy": 5, "completeness": 4, "instructions": 5, "clarity": 4}
    provider = Scripted(
        answers={"openai/gpt-5.4": "answer A", "z-ai/glm-5": "answer B"},
        verdicts={"answer A": {"overall": 5, "dimensions": strong, "reason": "a"},
                  "answer B": {"overall": 5, "dimensions": strong, "reason": "b"}},
        finishes={"z-ai/glm-5": "length"},
    )  # fmt: skip
    frames = _compare(conn, provider, ["openai/gpt-5.4", "z-ai/glm-5"], "v1-tone-reply")
    results = {r["model"]: r for r in frames["navigator_v1_results"].to_dicts()}
    assert (results["openai/gpt-5.4"]["displayed_overall"], results["openai/gpt-5.4"]["label"]) == (
        5.0, "clean",
    )  # fmt: skip
    cut = results["z-ai/glm-5"]
    assert (cut["displayed_overall"], cut["label"], cut["needs_review"]) == (
        4.0,
        "incomplete",
        True,
    )
    assert cut["output_incomplete"] and "finish_reason=length" in cut["completeness_reason"]


def test_tier_1_is_scored_by_its_check_with_no_judge(conn) -> None:
    provider = Scripted(answers={"openai/gpt-5.4": "The pen costs 0.05\n0.05",
                                 "z-ai/glm-5": "It costs 0.10\n0.10"}, verdicts={})  # fmt: skip
    frames = _compare(conn, provider, ["openai/gpt-5.4", "z-ai/glm-5"], "v1-bat-and-ball")
    results = {r["model"]: r for r in frames["navigator_v1_results"].to_dicts()}
    assert results["openai/gpt-5.4"]["stored_overall"] == 5.0
    assert results["z-ai/glm-5"]["stored_overall"] == 0.0
    assert results["z-ai/glm-5"]["judge_cost_usd"] is None  # no judge ledger row
    assert results["z-ai/glm-5"]["total_cost_usd"] is None
    assert results["openai/gpt-5.4"]["grader"].startswith("script:numeric")


def test_the_demo_shows_the_cap_triggering(conn, tmp_path: Path) -> None:
    """The offline demo: every library task on the declared setups, simulated; some stored 5s
    carry a weak dimension and show as 4, mixed."""
    from contextlib import contextmanager

    from bench_pipeline.core.writer import insert_rows

    for label, api_id, effort in [("gpt-5.4-medium", "openai/gpt-5.4", "medium"),
                                  ("gpt-5.4-high", "openai/gpt-5.4", "high"),
                                  ("glm-5", "z-ai/glm-5", None)]:  # fmt: skip
        insert_rows(
            conn, "setups",
            ("setup_id", "label", "model_record", "api_id", "company", "reasoning_effort",
             "context_limit", "local", "harness", "environment", "executable", "current",
             "first_loaded"),
            [[label, label, label, api_id, "Lab", effort, 1000, False, "api-bare", "none",
              True, True, NOW.replace(tzinfo=None)]],
        )  # fmt: skip

    @contextmanager
    def connect():
        yield conn

    first = run_library_demo(connect, simulated=True)
    assert run_library_demo(connect, simulated=True) == first  # stored once, not run again
    assert run_library_demo(connect, simulated=False) is None  # the project pays for no v1 run
    frames = v1_frames(conn, load_library(), datetime.now(UTC))
    results = frames["navigator_v1_results"]
    assert results["simulated"].all()
    mixed = results.filter(pl.col("label") == "mixed")
    assert mixed.height > 0
    assert (mixed["stored_overall"] == 5.0).all() and (mixed["displayed_overall"] == 4.0).all()
    assert all(min(json.loads(d).values()) <= 3 for d in mixed["dimensions"])
    fives = results.filter(pl.col("displayed_overall") == 5.0)
    assert all(min(json.loads(d).values()) > 3 for d in fives["dimensions"])
    assert not fives["output_incomplete"].any()
    tier2 = results.filter(pl.col("tier") == 2)
    assert set(tier2["grader"]) == {"google/gemini-2.5-flash-lite"}
    assert frames["navigator_v1_tasks"].height == len(SEED_LIBRARY)


def test_the_tier_two_judge_reads_a_blind_copy_and_the_stored_answer_stays() -> None:
    answer = "As Claude Opus 4.6 by Anthropic: fix the loop bound. ChatGPT\u2011style, I'm sure."
    blind = "As [redacted] by [redacted]: fix the loop bound. [redacted]\u2010style, I'm sure."
    dimensions = {"accuracy": 4, "completeness": 4, "instructions": 4, "clarity": 4}
    provider = Scripted(
        answers={"z-ai/glm-5": answer},  # a candidate naming other makers' models
        verdicts={blind: {"overall": 4, "dimensions": dimensions, "reason": "r"}},
    )
    config = load_config().model_copy(update={"calls_per_task": 1})
    names = BlindNames.of(reviewed_names(settings.sources_dir() / ALIAS_FILE))
    result = asyncio.run(run_comparison(
        provider, provider, [V1Candidate("glm", "z-ai/glm-5")],
        [library_task(load_library(), "v1-loop-bug")], config, _rates(), comparison="c-blind",
        names=names,
    ))  # fmt: skip
    (run,) = result.results
    assert (run.output, run.score.stored_overall) == (answer, 4.0)
