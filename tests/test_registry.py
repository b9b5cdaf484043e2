"""Matching on real names from the recorded snapshots, and the best-score rule."""

from pathlib import Path

import duckdb
import pytest

from bench_pipeline.registry.matching import (
    AliasFile,
    Candidate,
    build_registry,
    normalise_name,
)

pytestmark = pytest.mark.assets


@pytest.fixture
def warehouse(recorded_warehouse: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    return recorded_warehouse


def alias(conn: duckdb.DuckDBPyConnection, source: str, key: str) -> tuple[str, str, str | None]:
    row = conn.execute(
        "SELECT model_id, method, settings FROM model_aliases WHERE source = ? AND source_key = ?",
        [source, key],
    ).fetchone()
    assert row is not None, f"{source} {key} has no alias"
    return row


def test_normalised_name_rule() -> None:
    assert normalise_name("Claude Opus 4.6") == "claudeopus46"
    assert normalise_name("GPT-4o (2024-05-13)") == "gpt4o"
    assert normalise_name("Nemotron 3 Ultra (free) (beta)") == "nemotron3ultra"
    assert normalise_name("Command R+") == "commandrplus"


def test_provider_id_match_for_variants_and_models_dev(warehouse) -> None:
    # OpenRouter's batch variant and models.dev's own OpenRouter entry share the provider id.
    assert alias(warehouse, "openrouter_models", "anthropic/claude-opus-4.6:batch")[:2] == (
        "anthropic/claude-opus-4.6",
        "provider_id",
    )
    assert alias(warehouse, "models_dev", "openrouter/anthropic/claude-opus-4.6")[:2] == (
        "anthropic/claude-opus-4.6",
        "provider_id",
    )
    # Anthropic's own API id, seen through models.dev, lets Epoch's run match by id too.
    assert alias(warehouse, "epoch", "claude-opus-4-6_32K") == (
        "anthropic/claude-opus-4.6",
        "provider_id",
        '{"thinking_budget": "32K"}',
    )


def test_normalised_name_match(warehouse) -> None:
    # Poe spells Claude 3 Haiku "Claude-Haiku-3" under an id of its own; Anthropic's own
    # listing ("Claude Haiku 3") gives the name, within the lab.
    assert alias(warehouse, "models_dev", "poe/anthropic/claude-haiku-3")[:2] == (
        "anthropic/claude-3-haiku",
        "normalised_name",
    )


def test_names_that_must_not_merge(warehouse) -> None:
    plus = alias(warehouse, "openrouter_models", "cohere/command-r-plus-08-2024")[0]
    plain = alias(warehouse, "openrouter_models", "cohere/command-r-08-2024")[0]
    assert plus != plain
    # "(Fast)" is a different, dearer offering: OpenRouter's own ids are never merged by name.
    assert (
        alias(warehouse, "openrouter_models", "anthropic/claude-opus-4.8-fast")[0]
        != (alias(warehouse, "openrouter_models", "anthropic/claude-opus-4.8")[0])
    )
    # "(4k)" and "(128k)" differ only in the parenthetical the rule drops: kept apart.
    small = alias(warehouse, "models_dev", "azure/phi-3-mini-4k-instruct")[0]
    large = alias(warehouse, "models_dev", "azure/phi-3-mini-128k-instruct")[0]
    assert small != large
    assert alias(warehouse, "epoch", "gpt-5.4-mini-2026-03-17_high")[0] != "openai/gpt-5.4"


def test_alias_file_match_keeps_effort_as_a_setting(warehouse) -> None:
    assert alias(warehouse, "epoch", "claude-opus-4-6_max") == (
        "anthropic/claude-opus-4.6",
        "alias_file",
        '{"effort": "max"}',
    )
    high = alias(warehouse, "epoch", "gpt-5.4-2026-03-05_high")
    xhigh = alias(warehouse, "epoch", "gpt-5.4-2026-03-05_xhigh")
    assert high[0] == xhigh[0] == "openai/gpt-5.4"
    assert (high[2], xhigh[2]) == ('{"effort": "high"}', '{"effort": "xhigh"}')


def test_unmatched_names_become_new_models_listed_for_review(warehouse) -> None:
    rows = warehouse.execute(
        "SELECT u.model_id, m.origin_source FROM unmatched_models u JOIN models m USING (model_id) "
        "WHERE u.source = 'arena'"
    ).fetchall()
    assert rows, "some Arena keys match nothing in the snapshots"
    assert all(source == "arena" for _, source in rows)
    orphans = warehouse.execute(
        "SELECT count(*) FROM model_aliases WHERE model_id NOT IN (SELECT model_id FROM models)"
    ).fetchone()[0]
    assert orphans == 0


def test_best_score_is_taken_across_effort_variants(warehouse) -> None:
    best = warehouse.execute(
        "SELECT score, model_version, rows_considered FROM evaluation_scores "
        "WHERE model_id = 'anthropic/claude-opus-4.6' AND evaluation_id = 'gpqa_diamond'"
    ).fetchone()
    rows = warehouse.execute(
        "SELECT max(score), count(*) FROM evaluation_rows r JOIN model_aliases a "
        "ON a.source = 'epoch' AND a.source_key = r.model_version "
        "WHERE a.model_id = 'anthropic/claude-opus-4.6' AND evaluation_id = 'gpqa_diamond'"
    ).fetchone()
    assert best is not None and rows[1] >= 2
    assert best[0] == rows[0] and best[2] == rows[1]


def test_lower_is_better_takes_the_minimum(warehouse) -> None:
    worst_kept = warehouse.execute(
        "SELECT count(*) FROM evaluation_scores s WHERE evaluation_id = 'hle_calibration_error' "
        "AND score > (SELECT min(r.score) FROM evaluation_rows r JOIN model_aliases a "
        "ON a.source = 'epoch' AND a.source_key = r.model_version "
        "WHERE a.model_id = s.model_id AND r.evaluation_id = s.evaluation_id)"
    ).fetchone()[0]
    assert worst_kept == 0


def test_ambiguous_name_is_not_merged() -> None:
    aliases = AliasFile(entries={}, setting_suffixes={})
    registry = build_registry(
        [
            Candidate(
                "openrouter_models",
                "x/model-a",
                "Model (Alpha)",
                ("x/model-a",),
                lab="x",
                role="catalogue",
                api_ids=("model-a",),
            ),
            Candidate(
                "openrouter_models",
                "x/model-b",
                "Model (Beta)",
                ("x/model-b",),
                lab="x",
                role="catalogue",
                api_ids=("model-b",),
            ),
            Candidate("arena", "model", "Model", lab="x", api_ids=("model",)),
        ],
        aliases,
    )
    assert registry.aliases[-1].method == "new"
    assert registry.unmatched[0].reason.startswith("name matches more than one model")
    assert registry.unmatched[0].model_id == "x:model"  # a new, lab-scoped model


REVIEWED = 'reviewed_by = "A. Reviewer"\nreviewed_on = "2026-12-06"\nnote = "same model"\n'


def test_alias_file_rejects_repeated_entries(tmp_path: Path) -> None:
    path = tmp_path / "aliases.toml"
    path.write_text(
        '[[alias]]\nsource = "epoch"\nkey = "a"\nmodel_id = "x/a"\n'
        + REVIEWED
        + '[[alias]]\nsource = "epoch"\nkey = "a"\nmodel_id = "x/b"\n'
        + REVIEWED
    )
    with pytest.raises(ValueError, match="repeats epoch 'a'"):
        AliasFile.load(path)
