"""The registry's plain rules, without a warehouse: API id forms, labs, impostor skeletons
and the matching phases on small hand-made candidates."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from bench_pipeline.registry.forms import DASH_FOR_DOT, _dot, _dots, id_forms, unwrap_host_id
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.matching import AliasFile, Candidate, build_registry
from bench_pipeline.registry.text import impostor_reason, skeleton

pytestmark = pytest.mark.unit


def test_dated_and_dash_for_dot_ids_share_an_undated_form() -> None:
    assert id_forms("claude-opus-4-5-20251101").undated == "claude-opus-4.5"
    assert id_forms("claude-opus-4.5").exact == "claude-opus-4.5"
    assert id_forms("gpt-5-2025-08-07") == id_forms("gpt-5-2025-08-07")
    assert (id_forms("gpt-5-2025-08-07").undated, id_forms("gpt-5-2025-08-07").date) == (
        "gpt-5",
        "20250807",
    )
    assert id_forms("grok-4-0709").undated == "grok-4"
    assert id_forms("gemini-2.5-flash-preview-09-2025").undated == "gemini-2.5-flash-preview"
    # sizes and versions are not dates
    assert id_forms("llama-3-8b").undated is None
    assert id_forms("gpt-oss-120b").undated is None
    assert id_forms("claude-3-5-haiku").exact == "claude-3.5-haiku"


@example("claude-3-5-haiku")
@example("a\u0663-\u0665")
@example("x-1-2-3")
@given(st.lists(st.sampled_from(["a", "-", "1", "9", "\u0663", "\u0665", "."])).map("".join))
def test_dashes_for_dots_read_only_where_a_digit_dash_digit_stands(text: str) -> None:
    """`_dots` skips the substitution for an id with no digit, dash, digit in a row (any
    script's digits): it answers as the substitution does."""
    assert _dots(text) == DASH_FOR_DOT.sub(_dot, text)


def test_host_ids_unwrap_to_the_vendors_id_but_keep_regions() -> None:
    assert "claude-opus-4-6" in unwrap_host_id("anthropic.claude-opus-4-6-v1", ("anthropic",))
    assert "nova-lite-v1" in unwrap_host_id("amazon.nova-lite-v1:0", ("amazon",))
    assert "gpt-5" in unwrap_host_id("databricks-gpt-5", ("databricks", "openai"))
    assert all(
        f.startswith("eu.")
        for f in unwrap_host_id("eu.anthropic.claude-opus-4-6-v1", ("amazon-bedrock", "anthropic"))
    )


def test_labs_from_names_the_catalogue_and_models_dev_families() -> None:
    labs = Labs.from_table({"google": ["Google DeepMind"], "qwen": ["Alibaba"]}).with_catalogue(
        ["x-ai", "google", "qwen", "anthropic"],
        [("claude-opus", "anthropic"), ("claude-opus", "anthropic"), ("qwen", "qwen")],
    )
    assert labs.lab("xAI") == labs.lab("x-ai") == labs.lab("xai")
    assert labs.lab("Google DeepMind,Google") == "google"
    assert labs.lab("Alibaba") == "qwen"
    # Bedrock's copy of Claude is a host's; Anthropic's own listing is the lab's.
    assert labs.listing_lab("amazon-bedrock", "anthropic.claude-opus-4-6-v1", "claude-opus") == (
        "anthropic",
        False,
    )
    assert labs.listing_lab("anthropic", "claude-opus-4-6", "claude-opus") == ("anthropic", True)
    assert labs.listing_lab("abacus", "Qwen/QwQ-32B", None) == ("qwen", False)


NAMES = ["anthropic", "Anthropic", "amazon-bedrock", "qwen", "Alibaba", "x-ai", "abacus", ""]


@given(
    st.sampled_from(NAMES),
    st.sampled_from(["claude-opus-4-6", "anthropic.claude-opus-4-6-v1", "Qwen/QwQ-32B", "x.y"]),
    st.none() | st.sampled_from(["claude-opus", "qwen", "grok"]),
    st.lists(st.sampled_from(NAMES), max_size=3),
    st.lists(st.tuples(st.sampled_from(["claude-opus", "qwen", "grok"]), st.sampled_from(NAMES))),
)
def test_a_lab_owns_a_listing_only_under_a_provider_that_may_own(
    provider: str, model: str, family: str | None, authors: list[str], mirror: list
) -> None:
    """`models_dev` reads a provider's name and rates only where `may_own` says it can."""
    labs = Labs.from_table({"qwen": ["Alibaba"]}).with_catalogue(authors, mirror)
    if labs.listing_lab(provider, model, family)[1]:
        assert labs.may_own(provider)


def test_impostor_skeletons_and_reasons() -> None:
    real = "openai/gpt-4o"
    for fake, reason in [
        ("OpenAI/GPT-4o", "letter case"),
        ("openai/gpt-4\u043e", "look-alike letters"),
        ("openai/gpt-\u200b4o", "invisible characters"),
        ("openai/gpt-4o\x00", "control characters"),
        ("openai/gpt\u20114o", "Unicode compatibility forms"),  # non-breaking hyphen
    ]:
        assert skeleton(fake) == skeleton(real) == real
        assert reason in impostor_reason(fake, real)


def catalogue(model_id: str, name: str, listed_at: str = "2025-01-01") -> Candidate:
    author, slug = model_id.split("/", 1)
    return Candidate(
        "openrouter_models", model_id, name, (model_id,), author, lab=author.lower(),
        role="catalogue", api_ids=(slug,), price=("1", "2"), listed_at=listed_at,
    )  # fmt: skip


NO_ALIASES = AliasFile(entries={}, setting_suffixes={})


def test_an_id_differing_only_in_case_is_held_whichever_comes_first() -> None:
    real, fake = catalogue("openai/gpt-4o", "GPT-4o"), catalogue("OpenAI/GPT-4o", "Cheap")
    for order in ([real, fake], [fake, real]):
        registry = build_registry(order, NO_ALIASES)
        assert list(registry.models) == ["openai/gpt-4o"]
        assert registry.models["openai/gpt-4o"].name == "GPT-4o"
        assert [(q.key, q.resembles) for q in registry.quarantined] == [
            ("OpenAI/GPT-4o", "openai/gpt-4o")
        ]


def test_a_reused_slug_goes_to_the_lab_other_sources_name() -> None:
    real = catalogue("google/gemini-x", "Gemini X", listed_at="2026-02-01")
    fake = catalogue("aaa/gemini-x", "Unrelated", listed_at="2020-01-01")  # listed earlier
    epoch = Candidate("epoch", "gemini-x", "Gemini X", lab="google", api_ids=("gemini-x",))
    registry = build_registry([fake, epoch, real], NO_ALIASES)
    assert set(registry.models) == {"google/gemini-x"}
    assert registry.aliases[-1].model_id == "google/gemini-x"
    assert "reuses the slug" in registry.quarantined[0].reason
    # A person can accept the listing as a model of its own: one alias-file entry.
    accepted = AliasFile.load_text('[accept]\n"openrouter_models:aaa/gemini-x" = "aaa/gemini-x"\n')
    assert "aaa/gemini-x" in build_registry([fake, epoch, real], accepted).models


def test_a_hosts_unmatched_listing_never_becomes_a_model() -> None:
    real = catalogue("anthropic/claude-opus-4.6", "Claude Opus 4.6")
    eu = Candidate(
        "models_dev", "amazon-bedrock/eu.anthropic.claude-opus-4-6-v1", "Claude Opus 4.6 (EU)",
        lab="anthropic", role="host", host="amazon-bedrock",
        api_ids=("eu.anthropic.claude-opus-4-6",),
    )  # fmt: skip
    registry = build_registry([real, eu], NO_ALIASES)
    assert set(registry.models) == {"anthropic/claude-opus-4.6"}
    assert registry.unmatched[0].model_id is None
    assert "parenthetical" in registry.unmatched[0].reason


def test_a_date_listed_at_another_price_is_another_model() -> None:
    plain = catalogue("openai/gpt-9", "GPT-9")
    dated = Candidate(
        "models_dev", "openai/gpt-9-2030-01-01", "GPT-9 (old)", lab="openai", role="lab",
        api_ids=("gpt-9-2030-01-01",), price=("9", "9"),
    )  # fmt: skip
    epoch = Candidate(
        "epoch", "gpt-9-2030-01-01", None, lab="openai", api_ids=("gpt-9-2030-01-01",)
    )
    registry = build_registry([plain, dated, epoch], NO_ALIASES)
    by_key = {a.key: a.model_id for a in registry.aliases}
    assert by_key["gpt-9-2030-01-01"] == by_key["openai/gpt-9-2030-01-01"] != "openai/gpt-9"
    same_price = Candidate(**{**vars(dated), "price": ("1", "2")})
    again = {
        a.key: a.model_id for a in build_registry([plain, same_price, epoch], NO_ALIASES).aliases
    }
    assert again["gpt-9-2030-01-01"] == "openai/gpt-9"
