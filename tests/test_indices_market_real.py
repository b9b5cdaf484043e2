"""Openness and $0 rates on the recorded snapshots, hand-labelled (issue 37).

Each case is keyed on the source's own id (an LMArena model key, an OpenRouter id, a
models.dev listing), not on the registry's model id, so the cases hold whatever the
registry's matching makes of the models.

Openness, hand-labelled from the snapshots: DeepSeek V3.1 / V3.2 thinking, Mixtral 8x22B
v0.1, QwQ-32B-Preview and Step-3 carry an MIT or Apache 2.0 licence in LMArena's licence
column, and their only models.dev listings are resellers' (nano-gpt, 302ai, vercel,
zenmux) saying `open_weights: false`; they used to be published as 5 (proprietary). Kimi
K2.5 and K2 Thinking are listed by Moonshot itself as open weights, OpenRouter names their
repositories, and those publish the Modified MIT licence; Epoch AI's "Open weights
(restricted use)" used to make them 60.

$0 rates: models.dev lists NVIDIA's API catalogue at $0 (a free trial), and OpenRouter
lists Google's Lyria 3 previews at $0 per token (each clip or song is billed per unit).
"""

import re
from html import unescape
from pathlib import Path

import pytest

from bench_pipeline.core.warehouse import database_file
from bench_pipeline.site import build_site, latest_release

pytestmark = pytest.mark.assets

ARENA_OPEN = {  # LMArena model key: the licence its column names
    "deepseek-v3.1-thinking": "MIT",
    "deepseek-v3.2-thinking": "MIT",
    "deepseek-v3.2-exp-thinking": "MIT",
    "mixtral-8x22b-instruct-v0.1": "Apache 2.0",
    "qwq-32b-preview": "Apache 2.0",
    "step-3": "Apache 2.0",
}
KIMI = {  # OpenRouter id: the weights repository OpenRouter names
    "moonshotai/kimi-k2.5": "moonshotai/Kimi-K2.5",
    "moonshotai/kimi-k2-thinking": "moonshotai/Kimi-K2-Thinking",
}
NIM_TRIALS = (  # models.dev listings at $0 in NVIDIA's API catalogue
    "nvidia/nvidia/nemotron-mini-4b-instruct",
    "nvidia/nvidia/nvidia-nemotron-nano-9b-v2",
    "nvidia/baai/bge-m3",
    "nvidia/nvidia/nemotron-3-nano-omni-30b-a3b-reasoning",
)
LYRIA = ("google/lyria-3-clip-preview", "google/lyria-3-pro-preview")


def model_of(conn, source: str, key: str) -> str:
    rows = conn.execute(
        "SELECT model_id FROM model_aliases WHERE source = ? AND source_key = ?", [source, key]
    ).fetchall()
    assert len(rows) == 1, f"{source} {key}: {rows}"
    return rows[0][0]


def market_row(conn, model_id: str) -> dict:
    cursor = conn.execute("SELECT * FROM market WHERE model_id = ?", [model_id])
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    assert len(rows) == 1, model_id
    return dict(zip(names, rows[0], strict=True))


def evidence(conn, model_id: str) -> list[dict]:
    cursor = conn.execute(
        "SELECT * FROM openness_evidence WHERE model_id = ? ORDER BY position", [model_id]
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.mark.parametrize("key", sorted(ARENA_OPEN))
def test_an_open_licence_on_lmarena_beats_resellers_closed_listings(recorded_warehouse, key):
    model_id = model_of(recorded_warehouse, "arena", key)
    row = market_row(recorded_warehouse, model_id)
    inputs = evidence(recorded_warehouse, model_id)
    decided = [i for i in inputs if i["role"] == "decided"]
    assert len(decided) == 1
    arena = [i for i in inputs if i["input"] == "arena_licence" and i["source_key"] == key]
    assert [i["licence"] for i in arena] == [ARENA_OPEN[key]]
    # the deciding input is LMArena's licence, unless the lab's own record or the weights
    # repository (earlier in precedence) says the same thing
    assert decided[0] == arena[0] or (
        decided[0]["precedence"] < arena[0]["precedence"] and arena[0]["role"] == "agrees"
    )
    assert (row["openness_input"], row["openness_source_key"]) == (
        decided[0]["input"],
        decided[0]["source_key"],
    )
    assert row["open_weights"] is True and row["licence_class"] == "permissive"
    assert row["openness"] in (90, 100)  # 100 only with a weights repository named
    closed_hosts = [i for i in inputs if i["input"] == "host_listings" and not i["open_weights"]]
    assert closed_hosts, "a reseller's closed listing is among the inputs"
    assert all(i["role"] == "overruled" for i in closed_hosts)


def test_the_resellers_that_said_closed_are_named(recorded_warehouse):
    model_id = model_of(recorded_warehouse, "arena", "deepseek-v3.1-thinking")
    hosts = [i for i in evidence(recorded_warehouse, model_id) if i["input"] == "host_listings"]
    assert "nano-gpt/deepseek-ai/DeepSeek-V3.1:thinking" in hosts[0]["source_key"]
    assert hosts[0]["open_weights"] is False


@pytest.mark.parametrize("openrouter_id", sorted(KIMI))
def test_kimi_weights_repository_licence_beats_epochs_label(recorded_warehouse, openrouter_id):
    model_id = model_of(recorded_warehouse, "openrouter_models", openrouter_id)
    row = market_row(recorded_warehouse, model_id)
    assert (row["openness"], row["licence"], row["licence_class"]) == (
        100,
        "Modified MIT",
        "permissive",
    )
    assert (row["openness_input"], row["openness_source_key"]) == (
        "weights_repository",
        KIMI[openrouter_id],
    )
    inputs = {i["input"]: i for i in evidence(recorded_warehouse, model_id)}
    assert inputs["lab_listing"]["role"] == "agrees"  # Moonshot's own listing: open weights
    assert inputs["lab_listing"]["source_key"].startswith("moonshotai/")
    epoch = inputs["epoch_accessibility"]
    assert (epoch["licence"], epoch["role"]) == ("Open weights (restricted use)", "overruled")


def test_no_open_licence_from_lmarena_or_a_repository_is_overruled_by_a_host(recorded_warehouse):
    overruled = recorded_warehouse.execute(
        "SELECT e.model_id, e.input, e.source_key FROM openness_evidence e "
        "JOIN openness_evidence h ON h.model_id = e.model_id AND h.input = 'host_listings' "
        "AND h.role = 'decided' "
        "WHERE e.role = 'overruled' AND e.licence_class IN "
        "('permissive', 'commercial_restricted', 'non_commercial')"
    ).fetchall()
    assert overruled == []


@pytest.mark.parametrize("listing", NIM_TRIALS)
def test_nvidia_free_trial_listings_are_flagged_trial(recorded_warehouse, listing):
    row = market_row(recorded_warehouse, model_of(recorded_warehouse, "models_dev", listing))
    assert row["rate_flag"] == "trial"
    assert row["blended_price_usd_per_1m"] is None
    assert row["input_usd_per_1m"] is None and row["output_usd_per_1m"] is None


@pytest.mark.parametrize("openrouter_id", LYRIA)
def test_per_clip_lyria_listings_are_flagged_per_unit(recorded_warehouse, openrouter_id):
    model_id = model_of(recorded_warehouse, "openrouter_models", openrouter_id)
    listed = recorded_warehouse.execute(
        "SELECT prompt_usd_per_m, completion_usd_per_m, output_modalities "
        "FROM openrouter_models WHERE model_id = ?",
        [openrouter_id],
    ).fetchone()
    assert listed[:2] == (0, 0) and "audio" in listed[2]  # the recorded listing says $0
    row = market_row(recorded_warehouse, model_id)
    assert row["rate_flag"] == "per_unit" and row["blended_price_usd_per_1m"] is None
    hosts = recorded_warehouse.execute(
        "SELECT rate_flag, blended_price_usd_per_1m FROM provider_prices WHERE model_id = ? "
        "AND input_usd_per_1m = 0 AND output_usd_per_1m = 0",
        [model_id],
    ).fetchall()
    assert all(h == ("per_unit", None) for h in hosts)


def test_flagged_zero_rates_are_never_ranked_cheapest(recorded_warehouse):
    flagged = {
        r[0]
        for r in recorded_warehouse.execute(
            "SELECT model_id FROM market WHERE rate_flag IN ('trial', 'per_unit')"
        ).fetchall()
    }
    assert len(flagged) >= 36  # 34 NVIDIA trial listings, 2 Lyria previews
    cheapest = [
        r[0]
        for r in recorded_warehouse.execute(
            "SELECT model_id FROM market WHERE blended_price_usd_per_1m IS NOT NULL "
            "ORDER BY blended_price_usd_per_1m, model_id"
        ).fetchall()
    ]
    assert cheapest and not flagged & set(cheapest)
    cheapest_hosts = recorded_warehouse.execute(
        "SELECT count(*) FROM provider_prices WHERE rate_flag IS NOT NULL "
        "AND blended_price_usd_per_1m IS NOT NULL"
    ).fetchone()[0]
    assert cheapest_hosts == 0
    zero = recorded_warehouse.execute(
        "SELECT count(*) FROM market WHERE blended_price_usd_per_1m = 0 AND model_id IN "
        "(SELECT a.model_id FROM model_aliases a WHERE a.source = 'models_dev' "
        "AND a.source_key LIKE 'nvidia/%' AND a.host IS NULL)"
    ).fetchone()[0]
    assert zero == 0  # no NVIDIA trial left at $0


@pytest.fixture(scope="module")
def recorded_site(recorded_warehouse, tmp_path_factory) -> Path:
    """The site built from the release the recorded warehouse made."""
    releases = database_file(recorded_warehouse).parents[1] / "build" / "releases"
    out = tmp_path_factory.mktemp("site")
    build_site(latest_release(releases), out, releases, workers=1)
    return out


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_the_model_page_shows_every_input_and_the_one_that_decided(
    recorded_warehouse, recorded_site
):
    model_id = model_of(recorded_warehouse, "openrouter_models", "moonshotai/kimi-k2.5")
    pages = [p for p in (recorded_site / "models").glob("*.html") if model_id in p.read_text()]
    assert len(pages) == 1
    page = pages[0].read_text()
    assert "decided by" in text_of(page) and "moonshotai/Kimi-K2.5" in page
    table = text_of(page[page.index('id="openness"') : page.index('id="hosts"')])
    assert "weights_repository moonshotai/Kimi-K2.5 yes Modified MIT permissive decided" in table
    assert "Open weights (restricted use) commercial_restricted overruled" in table


def test_the_market_page_shows_the_flag_and_no_price(recorded_warehouse, recorded_site):
    page = (recorded_site / "market.html").read_text()
    model_id = model_of(recorded_warehouse, "openrouter_models", LYRIA[0])
    rows = [r for r in page.split("<tr>") if f"{model_id}" in r or "Lyria 3 Clip" in r]
    assert rows and all('data-rate-flag="per_unit"' in r for r in rows)
    assert all("$0.00" not in r for r in rows)
