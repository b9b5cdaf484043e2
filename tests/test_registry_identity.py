"""Model identity on the recorded snapshots: the gold pairs, where the Known Good Index
models sit, hosts folded into their model, unique display names, and impostors.

The gold file (`tests/fixtures/registry_gold.csv`) was labelled by hand from the recorded
snapshots in `sources/snapshots/`: each row says whether a source's listing is, or is not,
the named canonical model, and why.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from pathlib import Path

import duckdb
import pytest
from stages import materialize_recorded

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.registry.candidates import all_candidates, arena
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.matching import AliasFile, build_registry
from bench_pipeline.registry.review import (
    index_placement,
    load_gold,
    review_queue,
    score_gold,
)
from bench_pipeline.registry.text import normalise_name, skeleton
from bench_pipeline.site.build import build_site, latest_release

pytestmark = pytest.mark.assets

GOLD = Path(__file__).parent / "fixtures" / "registry_gold.csv"
SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"


def test_gold_file_is_big_enough_and_every_listing_is_real(recorded_warehouse) -> None:
    pairs = load_gold(GOLD)
    assert sum(p.expect == "match" for p in pairs) >= 80
    assert sum(p.expect == "not" for p in pairs) >= 40
    score = score_gold(recorded_warehouse, pairs)
    assert score.unknown == (), "gold rows must name listings the snapshots hold"
    models = {r[0] for r in recorded_warehouse.execute("SELECT model_id FROM models").fetchall()}
    named = {p.model_id for p in pairs if p.expect == "match"}
    assert named <= models, f"gold names models the registry lacks: {named - models}"


def test_no_must_not_pair_is_merged(recorded_warehouse) -> None:
    score = score_gold(recorded_warehouse, load_gold(GOLD))
    assert score.must_not_merged == (), [f"{p.key} -> {p.model_id}" for p in score.must_not_merged]
    assert score.precision == 1.0, score.wrong


def test_recall_on_must_match_pairs(recorded_warehouse) -> None:
    score = score_gold(recorded_warehouse, load_gold(GOLD))
    assert score.recall >= 0.95, [(p.key, found) for p, found in score.wrong]


def test_ranked_index_models_sit_on_their_openrouter_id_with_a_price(recorded_warehouse) -> None:
    placement = index_placement(recorded_warehouse)
    assert placement.ranked >= 40
    assert placement.openrouter_listed_elsewhere == ()
    unpriced = recorded_warehouse.execute(
        "SELECT k.model_id FROM known_good_index k LEFT JOIN market m USING (model_id) "
        "WHERE k.known_good_index IS NOT NULL "
        "AND k.model_id IN (SELECT model_id FROM openrouter_models) "
        "AND m.blended_price_usd_per_1m IS NULL"
    ).fetchall()
    assert unpriced == []
    # The examples: Epoch's dated ids land on the vendor's OpenRouter model.
    for key, model_id in [
        ("claude-opus-4-5-20251101", "anthropic/claude-opus-4.5"),
        ("gpt-5-2025-08-07_high", "openai/gpt-5"),
        ("gpt-5.2-2025-12-11_high", "openai/gpt-5.2"),
        ("o3-2025-04-16_high", "openai/o3"),
    ]:
        row = recorded_warehouse.execute(
            "SELECT model_id FROM model_aliases WHERE source = 'epoch' AND source_key = ?", [key]
        ).fetchone()
        assert row == (model_id,), key


def test_no_model_is_a_hosts_listing(recorded_warehouse) -> None:
    hosted = recorded_warehouse.execute(
        "SELECT m.model_id FROM models m JOIN model_aliases a "
        "ON a.source = m.origin_source AND a.source_key = m.origin_key "
        "WHERE a.host IS NOT NULL"
    ).fetchall()
    assert hosted == []
    ranked_from_hosts = recorded_warehouse.execute(
        "SELECT model_id FROM known_good_index WHERE known_good_index IS NOT NULL "
        "AND (model_id LIKE 'models_dev:%' OR model_id LIKE 'epoch:%')"
    ).fetchall()
    assert ranked_from_hosts == []


def test_hosts_fold_into_provider_prices_with_their_own_price(recorded_warehouse) -> None:
    rows = recorded_warehouse.execute(
        "SELECT provider_name, input_usd_per_1m, output_usd_per_1m FROM provider_prices "
        "WHERE model_id = 'anthropic/claude-opus-4.6' AND tag LIKE 'models.dev:%'"
    ).fetchall()
    hosts = {r[0] for r in rows}
    assert {"Amazon Bedrock", "Azure", "302.AI"} <= hosts, hosts
    market = recorded_warehouse.execute(
        "SELECT count(*), max(providers_tracked) FROM market "
        "WHERE model_id = 'anthropic/claude-opus-4.6'"
    ).fetchone()
    assert market[0] == 1 and market[1] >= len(hosts)


def test_market_has_one_row_per_canonical_model_with_a_figure(recorded_warehouse) -> None:
    rows, distinct, outside = recorded_warehouse.execute(
        "SELECT count(*), count(DISTINCT model_id), "
        "count(*) FILTER (WHERE model_id NOT IN (SELECT model_id FROM models)) FROM market"
    ).fetchone()
    assert rows == distinct and outside == 0
    names = recorded_warehouse.execute(
        "SELECT count(*) - count(DISTINCT model_name) FROM market"
    ).fetchone()[0]
    assert names == 0


def test_display_names_are_unique_among_published_models(recorded_warehouse) -> None:
    names = [r[0] for r in recorded_warehouse.execute("SELECT name FROM models").fetchall()]
    shapes = [skeleton(n) for n in names]
    assert len(set(shapes)) == len(shapes)


def test_names_keep_every_script() -> None:
    assert normalise_name("通义千问 Max") != normalise_name("文心一言 Max")
    assert normalise_name("ＧＰＴ－４ｏ") == normalise_name("GPT-4o")  # NFKC
    assert normalise_name("GPT\u200b-4o") == normalise_name("GPT-4o")
    assert skeleton("OpenAI/GPT-4о") == skeleton("openai/gpt-4o")  # Cyrillic о


def test_ownership_does_not_depend_on_candidate_order(recorded_warehouse) -> None:
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    candidates = all_candidates(recorded_warehouse, aliases)
    first = build_registry(candidates, aliases)
    shuffled = list(candidates)
    random.Random(14).shuffle(shuffled)
    second = build_registry(shuffled, aliases)
    assert first.models == second.models
    assert sorted(map(repr, first.aliases)) == sorted(map(repr, second.aliases))


def test_review_queue_lists_unmatched_with_nearest_candidates(recorded_warehouse) -> None:
    queue = review_queue(recorded_warehouse, "models_dev")
    eu = next(i for i in queue if i.key == "amazon-bedrock/eu.anthropic.claude-opus-4-6-v1")
    assert eu.became is None and "anthropic/claude-opus-4.6" in eu.nearest
    assert eu.accept_line().startswith('"models_dev:amazon-bedrock/eu.anthropic')


def test_an_accept_line_is_enough_to_accept_a_match(recorded_warehouse, tmp_path: Path) -> None:
    """The queue's line, once a person fills in who, when and why, is a reviewed row; left
    as printed it is refused."""
    item = next(i for i in review_queue(recorded_warehouse, "models_dev") if i.kind == "unmatched")
    source = (settings.sources_dir() / "aliases.toml").read_text()
    path = tmp_path / "aliases.toml"
    path.write_text(source.replace("[accept]\n", f"[accept]\n{item.accept_line()}\n", 1))
    with pytest.raises(ValueError, match="lacks field 'reviewed_by'"):
        AliasFile.load(path)
    filled = (
        item.accept_line()
        .replace('reviewed_by = ""', 'reviewed_by = "A. Reviewer"')
        .replace("YYYY-MM-DD", "2026-12-06")
        .replace('why = ""', 'why = "the lab lists both ids for one model"')
    )
    path.write_text(source.replace("[accept]\n", f"[accept]\n{filled}\n", 1))
    entry = AliasFile.load(path).entries[(item.source, item.key)]
    assert entry.model_id == (item.nearest[0] if item.nearest else "MODEL_ID")
    assert entry.evidence.startswith("reviewed alias table: A. Reviewer, 2026-12-06")


# --- impostors, through ingestion, the registry, the indices and market data ---------------

REAL = ("google/gemini-3.1-pro-preview", "openai/gpt-4o")
IMPOSTORS = {
    "aaa/gemini-3.1-pro-preview": ("google/gemini-3.1-pro-preview", "reuses the slug"),
    "OpenAI/GPT-4o": ("openai/gpt-4o", "letter case"),
    "openai/gpt-4\u043e": ("openai/gpt-4o", "look-alike letters"),  # Cyrillic о
    "openai/gpt-\u200b4o": ("openai/gpt-4o", "invisible characters"),
    # Issue 38: these would take the page `models/openai-gpt-4o.html` from the real GPT-4o.
    "openai-/gpt-4o": ("openai/gpt-4o", "only by punctuation"),
    "openai/gpt_4o": ("openai/gpt-4o", "only by punctuation"),
}


def _impostor(real: dict, model_id: str) -> dict:
    """A copy of a real listing under another id, cheaper, older, and named otherwise."""
    fake = copy.deepcopy(real)
    fake.update(id=model_id, canonical_slug=model_id, name="Totally Unrelated Model")
    fake["created"] = real["created"] - 10_000_000
    fake["pricing"] = {"prompt": "0.00000001", "completion": "0.00000001"}
    return fake


@pytest.fixture(scope="module")
def with_impostors(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("impostors")
    snapshots = root / "snapshots"
    shutil.copytree(SNAPSHOTS, snapshots)
    listing_path = snapshots / "openrouter_models" / "models.json"
    listing = json.loads(listing_path.read_bytes())
    by_id = {m["id"]: m for m in listing["data"]}
    fakes = [_impostor(by_id[real], fake) for fake, (real, _) in IMPOSTORS.items()]
    listing["data"] = fakes + listing["data"]  # first in the payload, and listed earlier
    listing_path.write_text(json.dumps(listing))
    database = materialize_recorded(root / "home", snapshots)
    reader = duckdb.connect(str(database), read_only=True)
    yield reader
    reader.close()


def test_no_impostor_takes_the_real_models_page(with_impostors, tmp_path: Path) -> None:
    """The site built from the release with the impostors: each real model keeps its page,
    and no two models share one."""
    database = Path(with_impostors.execute("SELECT path FROM duckdb_databases()").fetchone()[0])
    releases = database.parent.parent / "build" / "releases"
    site = tmp_path / "site"
    build_site(latest_release(releases), site, releases)
    page = (site / "models" / "openai-gpt-4o.html").read_text("utf-8")
    assert "<code>openai/gpt-4o</code>" in page and "Totally Unrelated Model" not in page
    models = [r[0] for r in with_impostors.execute("SELECT model_id FROM models").fetchall()]
    pages = list((site / "models").glob("*.html"))
    assert len(pages) >= len(models) and len({p.name for p in pages}) == len(pages)


def _facts(conn: duckdb.DuckDBPyConnection, model_id: str) -> dict:
    def rows(sql: str) -> list[tuple]:
        return conn.execute(sql, [model_id]).fetchall()

    return {
        "model": rows("SELECT model_id, name, lab FROM models WHERE model_id = ?"),
        "market": rows(
            "SELECT model_name, input_usd_per_1m, output_usd_per_1m, blended_price_usd_per_1m "
            "FROM market WHERE model_id = ?"
        ),
        "scores": rows(
            "SELECT evaluation_id, score, model_version FROM evaluation_scores "
            "WHERE model_id = ? ORDER BY evaluation_id"
        ),
        "index": rows(
            "SELECT model_name, known_good_index FROM known_good_index WHERE model_id = ?"
        ),
    }


@pytest.mark.parametrize("real", REAL)
def test_impostors_leave_the_real_model_exactly_as_it_was(
    recorded_warehouse, with_impostors, real
) -> None:
    before, after = _facts(recorded_warehouse, real), _facts(with_impostors, real)
    assert before["model"] and before["market"]
    assert after == before


@pytest.mark.parametrize("fake", IMPOSTORS)
def test_each_impostor_is_quarantined_with_its_reason(with_impostors, fake) -> None:
    real, reason = IMPOSTORS[fake]
    row = with_impostors.execute(
        "SELECT resembles, reason FROM quarantined_models "
        "WHERE source = 'openrouter_models' AND source_key = ?",
        [fake],
    ).fetchone()
    assert row is not None, f"{fake!r} was not quarantined"
    assert row[0] == real and reason in row[1], row
    for table in ("models", "market", "known_good_index", "provider_prices"):
        count = with_impostors.execute(
            f"SELECT count(*) FROM {table} WHERE model_id = ?", [fake]
        ).fetchone()[0]
        assert count == 0, f"{fake!r} published in {table}"
    names = with_impostors.execute(
        "SELECT count(*) FROM models WHERE name = 'Totally Unrelated Model'"
    ).fetchone()[0]
    assert names == 0
    queue = {(i.source, i.key): i for i in review_queue(with_impostors, "openrouter_models")}
    assert queue[("openrouter_models", fake)].kind == "quarantined"


def test_bench_registry_commands(tmp_path: Path, monkeypatch, capsys) -> None:
    from bench_pipeline.cli.main import main

    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    assert materialize_recorded(tmp_path) == settings.warehouse_path()
    assert main(["registry", "report"]) == 0
    report = capsys.readouterr().out
    assert "precision 100.0%" in report and "ranked Known Good Index models:" in report
    assert main(["registry", "unmatched", "--source", "models_dev", "--limit", "2"]) == 0
    queue = capsys.readouterr().out
    assert queue.count("[unmatched] models_dev") == 2 and "accept (sources/aliases.toml" in queue
    # A must-not pair merged by a person's mistaken alias makes the report fail.
    gold = tmp_path / "gold.csv"
    gold.write_text(
        "source,key,model_id,expect,why\n"
        "epoch,gpt-5-mini-2025-08-07_high,openai/gpt-5-mini,not,deliberately wrong label\n"
    )
    assert main(["registry", "report", "--gold", str(gold)]) == 1
    assert "MERGED must-not" in capsys.readouterr().out


def test_an_arena_model_named_by_several_organisations_gets_the_same_one_every_time(
    tmp_path: Path,
) -> None:
    # One rating row per board: "x" is named Zeta on two boards and Alpha on one; "y" once
    # each by B and A; "z" by no rating row, only by its model listing.
    with connect(tmp_path / "bench.duckdb") as conn:
        migrate(conn, settings.migrations_dir())
        rows = [("x", "Zeta"), ("x", "Alpha"), ("x", "Zeta"), ("y", "B"), ("y", "A"), ("z", None)]
        for board, (key, org) in enumerate(rows):
            conn.execute(
                "INSERT INTO arena_ratings (leaderboard, category, model_key, rating, "
                "organization, source_file, source_run_id) VALUES (?, 'overall', ?, 1200, ?, "
                "'f.json', 'run')",
                [f"board-{board}", key, org],
            )
        conn.execute(
            "INSERT INTO arena_models (model_key, name, organization, source_run_id) "
            "VALUES ('z', 'Zed', 'M', 'run')"
        )
        aliases = AliasFile.load_text("")
        for _ in range(3):  # the same answer whatever order the engine meets the rows in
            found = {c.key: (c.name, c.organization) for c in arena(conn, aliases, Labs())}
            assert found == {"x": ("x", "Zeta"), "y": ("y", "A"), "z": ("Zed", "M")}
