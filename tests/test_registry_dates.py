"""Which model, as of when (issue 37): the registry on the recorded snapshots, with the
hand-labelled cases of the issue.

Different models that the old rules merged (a trailing date dropped to reach the undated
model, Epoch AI's family-level "Model name" used as a key) stay apart; one model the old
rules split across sources is joined by a publisher's alias, an exact normalised name or a
reviewed alias table row; and over the whole recorded data no model ever holds two dates of
one lab's id. Each case was read off the snapshots in `sources/snapshots/`.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest
from stages import materialize_recorded

from bench_pipeline.core import settings
from bench_pipeline.registry.candidates import all_candidates
from bench_pipeline.registry.forms import LATEST, id_forms
from bench_pipeline.registry.matching import AliasFile
from bench_pipeline.site.build import build_site, latest_release

pytestmark = pytest.mark.assets

MERGED_BEFORE = [
    # Dated snapshots that fell back to the undated model.
    [("epoch", "mistral-large-2402"), ("epoch", "mistral-large-2411"),
     ("openrouter_models", "mistralai/mistral-large"),
     ("openrouter_models", "mistralai/mistral-large-2407")],
    [("epoch", "gpt-4-0314"), ("epoch", "gpt-4-0613"), ("openrouter_models", "openai/gpt-4")],
    [("epoch", "gemini-1.5-pro-001"), ("epoch", "gemini-1.5-pro-002")],
    [("epoch", "gemini-1.5-flash-001"), ("epoch", "gemini-1.5-flash-002")],
    [("epoch", "gpt-3.5-turbo-0125"), ("epoch", "gpt-3.5-turbo-1106"),
     ("openrouter_models", "openai/gpt-3.5-turbo")],
    [("arena", "qwen3-max-preview"), ("arena", "qwen3-max-2025-09-23")],
    [("arena", "qwen-vl-max-1119"), ("arena", "qwen-vl-max-2025-08-13"),
     ("models_dev", "alibaba/qwen-vl-max")],
    [("arena", "deepseek-v2.5"), ("arena", "deepseek-v2.5-1210")],
    # Epoch AI's family-level "Model name" used as a key.
    [("epoch", "gemini-exp-1206"), ("models_dev", "google/gemini-2.0-flash")],
    [("epoch", "QwQ-32B-Preview"), ("epoch", "QwQ-32B")],
    [("epoch", "gemini-2.5-flash-preview-05-20"), ("epoch", "gemini-2.5-flash-preview-09-2025"),
     ("epoch", "gemini-2.5-flash")],
]  # fmt: skip

SPLIT_BEFORE = {
    # Gemini 3 Pro: #1 on Arena, #4 on the index, "No Arena rating" on its page.
    "google:gemini-3-pro-preview": [("arena", "gemini-3-pro"), ("epoch", "gemini-3-pro-preview")],
    # Kimi K2 (0711): three rows.
    "moonshotai/kimi-k2": [
        ("openrouter_models", "moonshotai/kimi-k2"), ("epoch", "Kimi-K2-Instruct"),
        ("arena", "kimi-k2-0711-preview"), ("models_dev", "moonshotai/kimi-k2-0711-preview"),
    ],
    # A priced OpenRouter row and a scored row, joined by OpenRouter's hugging_face_id.
    "qwen/qwen3-coder": [
        ("epoch", "Qwen3-Coder-480B-A35B-Instruct"), ("arena", "qwen3-coder-480b-a35b-instruct"),
    ],
    "qwen/qwen-2.5-72b-instruct": [
        ("epoch", "qwen2.5-72b-instruct"), ("arena", "qwen2.5-72b-instruct"),
    ],
    "qwen/qwen-2.5-coder-32b-instruct": [
        ("epoch", "Qwen2.5-Coder-32B-Instruct"), ("arena", "qwen2.5-coder-32b-instruct"),
    ],
    "mistralai/mixtral-8x22b-instruct": [
        ("epoch", "open-mixtral-8x22b"), ("arena", "mixtral-8x22b-instruct-v0.1"),
    ],
    # Effort variants: one rule for GPT-5.1 and GPT-5.2 alike.
    "openai/gpt-5.1": [("arena", "gpt-5.1-high"), ("epoch", "gpt-5.1-2025-11-13_high")],
    "openai/gpt-5.2": [("arena", "gpt-5.2-high"), ("epoch", "gpt-5.2-2025-12-11_high")],
    "openai/o3-mini": [
        ("openrouter_models", "openai/o3-mini-high"), ("arena", "o3-mini-high"),
        ("openrouter_models", "openai/o3-mini-high:batch"), ("epoch", "o3-mini-2025-01-31_high"),
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with the recorded sources ingested, everything derived, and a release."""
    home = tmp_path_factory.mktemp("dates")
    materialize_recorded(home)
    return home


@pytest.fixture(scope="module")
def warehouse(recorded: Path):
    conn = duckdb.connect(str(recorded / "warehouse" / "bench.duckdb"), read_only=True)
    yield conn
    conn.close()


def placed(conn: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], str]:
    rows = conn.execute("SELECT source, source_key, model_id FROM model_aliases").fetchall()
    return {(source, key): model_id for source, key, model_id in rows}


@pytest.mark.parametrize("listings", MERGED_BEFORE, ids=lambda g: g[0][1])
def test_models_the_old_rules_merged_stay_apart(warehouse, listings) -> None:
    models = placed(warehouse)
    found = [models[listing] for listing in listings]
    assert len(set(found)) == len(found), dict(zip(listings, found, strict=True))


@pytest.mark.parametrize("model_id", SPLIT_BEFORE)
def test_one_model_the_old_rules_split_is_one_row(warehouse, model_id) -> None:
    models = placed(warehouse)
    assert {listing: models[listing] for listing in SPLIT_BEFORE[model_id]} == dict.fromkeys(
        SPLIT_BEFORE[model_id], model_id
    )
    # The priced row and the scored row are one: the market row has both a price and scores.
    priced = warehouse.execute(
        "SELECT count(*) FROM market WHERE model_id = ? AND blended_price_usd_per_1m IS NOT NULL",
        [model_id],
    ).fetchone()[0]
    if "/" in model_id:  # an OpenRouter model
        assert priced == 1, model_id
    assert warehouse.execute(
        "SELECT count(*) FROM evaluation_scores WHERE model_id = ?", [model_id]
    ).fetchone()[0] or model_id.startswith("openai/gpt-5"), model_id


def test_each_join_states_its_evidence(warehouse) -> None:
    rows = {
        (source, key): (method, evidence)
        for source, key, method, evidence in warehouse.execute(
            "SELECT source, source_key, method, evidence FROM model_aliases"
        ).fetchall()
    }
    assert all(evidence for _, evidence in rows.values())
    assert rows[("epoch", "Kimi-K2-Instruct")] == (
        "provider_id",
        "same API id kimi-k2-instruct as openrouter_models moonshotai/kimi-k2",
    )
    method, evidence = rows[("arena", "gemini-3-pro")]
    assert method == "alias_file"
    assert evidence.startswith("reviewed alias table: registry session s20 (issue 37), 2026-12-06:")
    # The lab's (latest) pointer names one dated snapshot: Anthropic's own id joins.
    assert rows[("epoch", "claude-opus-4-5-20251101")][0] == "provider_id"
    assert "claude-opus-4.5-20251101" in rows[("epoch", "claude-opus-4-5-20251101")][1]


def test_no_two_dated_ids_of_one_lab_ever_reach_one_model(warehouse) -> None:
    """Over every listing of the recorded data (hosts included): each model holds at most one
    date of each id, `gpt-4-0314` and `gpt-4-0613` never together."""
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    ids = {(c.source, c.key): c.api_ids for c in all_candidates(warehouse, aliases)}
    models = placed(warehouse)
    assert len(models) > 4000
    dates: dict[tuple[str, str], set[str]] = {}
    for listing, model_id in models.items():
        for forms in map(id_forms, ids.get(listing, ())):
            if forms.undated is not None and forms.date != LATEST:
                dates.setdefault((model_id, forms.undated), set()).add(forms.exact)
    assert {key: held for key, held in dates.items() if len(held) > 1} == {}
    assert len(dates) > 300  # the check saw the dated ids


def test_the_report_lists_the_refused_merges(
    recorded: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    from bench_pipeline.cli.main import main

    shutil.copytree(recorded / "warehouse", tmp_path / "warehouse")  # the module reads its own
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    assert main(["registry", "report"]) == 0
    report = capsys.readouterr().out
    dated = report[report.index("dated-snapshot merges refused") :]
    family = report[report.index("family-name merges refused") :]
    for line in (
        "epoch gpt-4-0314: not openai/gpt-4",
        "epoch gpt-4-0613: not openai/gpt-4",
        "epoch mistral-large-2402: not mistralai/mistral-large",
        "epoch gpt-3.5-turbo-1106: not openai/gpt-3.5-turbo",
        "arena deepseek-v2.5-1210: not deepseek:deepseek-v2.5",
        "arena qwen-vl-max-1119: not qwen:qwen-vl-max",
    ):
        assert line in dated[: dated.index("family-name merges refused")], line
    for line in (
        "epoch gemini-exp-1206: not google:gemini-2.0-flash",
        "epoch QwQ-32B-Preview: not qwen:qwq-32b",
        "epoch gemini-2.5-flash-preview-05-20: not google/gemini-2.5-flash",
        "epoch gemini-1.5-flash-002: not google:gemini-1.5-flash-001",
        "arena qwen3-max-preview: not qwen/qwen3-max",
    ):
        assert line in family, line
    # The review queue proposes a join for a person to accept.
    assert main(["registry", "unmatched", "--source", "arena"]) == 0
    queue = capsys.readouterr().out
    assert re.search(r"\[unmatched\] arena 'deepseek-v2.5-1210'.*\n.*\n  nearest: [^\n(]", queue)


def test_the_model_page_shows_who_reviewed_a_join(recorded: Path, tmp_path: Path) -> None:
    releases = recorded / "build" / "releases"
    build_site(latest_release(releases), tmp_path / "site", releases)
    pages = {p.read_text("utf-8") for p in (tmp_path / "site" / "models").glob("*.html")}
    page = next(p for p in pages if "<code>google:gemini-3-pro-preview</code>" in p)
    assert "<code>gemini-3-pro</code>" in page
    assert "alias_file: reviewed alias table: registry session s20 (issue 37), 2026-12-06" in page
    assert "Google serves Gemini 3 Pro only as gemini-3-pro-preview" in page


METHODOLOGY = settings.REPO_ROOT / "site" / "methodology" / "model-matching.md"
EXAMPLES = [
    # (what the page says, the listing, the model the code gives it; None: its own model;
    # "unmatched": a host's listing on no model)
    ("LMArena's `gemini-3-pro` is Google's `gemini-3-pro-preview`",
     ("arena", "gemini-3-pro"), "google:gemini-3-pro-preview"),
    ("`anthropic/claude-opus-4.6:batch` is OpenRouter's `anthropic/claude-opus-4.6`",
     ("openrouter_models", "anthropic/claude-opus-4.6:batch"), "anthropic/claude-opus-4.6"),
    ("Epoch AI's `gpt-5-2025-08-07_high` is GPT-5",
     ("epoch", "gpt-5-2025-08-07_high"), "openai/gpt-5"),
    ("Epoch AI's `qwen2.5-72b-instruct` is that model",
     ("epoch", "qwen2.5-72b-instruct"), "qwen/qwen-2.5-72b-instruct"),
    ("points at `claude-opus-4-5-20251101`",
     ("models_dev", "anthropic/claude-opus-4-5-20251101"), "anthropic/claude-opus-4.5"),
    ("`anthropic.claude-opus-4-6-v1` on Bedrock is `claude-opus-4-6`",
     ("models_dev", "amazon-bedrock/anthropic.claude-opus-4-6-v1"), "anthropic/claude-opus-4.6"),
    ("so LMArena's `mistral-medium-2505` is too",
     ("arena", "mistral-medium-2505"), "mistralai/mistral-medium-3"),
    ("Poe's \"Claude-Haiku-3\" is Anthropic's \"Claude Haiku 3\"",
     ("models_dev", "poe/anthropic/claude-haiku-3"), "anthropic/claude-3-haiku"),
    ("Epoch AI's `gpt-4-0314` and `gpt-4-0613` are two models",
     ("epoch", "gpt-4-0314"), None),
    ("`gpt-4-0613` are two models", ("epoch", "gpt-4-0613"), None),
    ("`mistral-large-2402` and `mistral-large-2411` are two models",
     ("epoch", "mistral-large-2402"), None),
    ("`gemini-exp-1206` is filed under \"Gemini 2.0 Flash\"", ("epoch", "gemini-exp-1206"), None),
    ("`QwQ-32B-Preview` under \"QwQ-32B\"", ("epoch", "QwQ-32B-Preview"), None),
    ("LMArena's \"Qwen3-Max\" for `qwen3-max-preview`", ("arena", "qwen3-max-preview"), None),
    ("LMArena's `gpt-5.1-high` is GPT-5.1", ("arena", "gpt-5.1-high"), "openai/gpt-5.1"),
    ("`gpt-5.2-high` is GPT-5.2", ("arena", "gpt-5.2-high"), "openai/gpt-5.2"),
    ("io.net's `deepseek-ai/DeepSeek-R1-0528` is not DeepSeek R1",
     ("models_dev", "io-net/deepseek-ai/DeepSeek-R1-0528"), "unmatched"),
    ("OpenRouter's `openai/o3-mini-high` is `openai/o3-mini` at high effort",
     ("openrouter_models", "openai/o3-mini-high"), "openai/o3-mini"),
]  # fmt: skip


@pytest.mark.parametrize(("phrase", "listing", "model_id"), EXAMPLES, ids=lambda v: str(v)[:30])
def test_the_methodology_examples_are_what_the_code_does(
    warehouse, phrase: str, listing: tuple[str, str], model_id: str | None
) -> None:
    assert phrase in METHODOLOGY.read_text("utf-8")
    if model_id == "unmatched":  # a host's listing left for review, on no model
        assert warehouse.execute(
            "SELECT model_id FROM unmatched_models WHERE source = ? AND source_key = ?",
            list(listing),
        ).fetchall() == [(None,)]
        return
    row = warehouse.execute(
        "SELECT model_id, method FROM model_aliases WHERE source = ? AND source_key = ?",
        list(listing),
    ).fetchone()
    assert row is not None, listing
    if model_id is None:  # a model of its own, founded by this listing
        assert row[1] == "new", row
    else:
        assert row[0] == model_id, row
