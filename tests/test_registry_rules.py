"""The registry's plain rules, without a warehouse: API id forms, labs, impostor skeletons
and the matching phases on small hand-made candidates."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from bench_pipeline.core import settings
from bench_pipeline.registry.forms import DASH_FOR_DOT, _dot, _dots, id_forms, unwrap_host_id
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.matching import AliasFile, Candidate, build_registry
from bench_pipeline.registry.text import impostor_reason, skeleton
from bench_pipeline.site.markup import model_slugs

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
        role="catalogue", api_ids=(slug,), listed_at=listed_at,
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
    accepted = AliasFile.load_text(
        '[accept]\n"openrouter_models:aaa/gemini-x" = { model_id = "aaa/gemini-x", '
        'reviewed_by = "A. Reviewer", reviewed_on = "2026-12-06", why = "a model of its own" }\n'
    )
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


def epoch_row(key: str, name: str | None = None, lab: str = "openai", **more) -> Candidate:
    return Candidate("epoch", key, name or key, lab=lab, api_ids=(key,), **more)


def test_a_dated_id_is_its_own_model_unless_a_publisher_names_it() -> None:
    """`gpt-4-0314` and `gpt-4-0613` never fall back to `openai/gpt-4`; OpenRouter's
    canonical slug naming one date joins that one date, and only it."""
    plain = catalogue("openai/gpt-9", "GPT-9")
    old, new = epoch_row("gpt-9-0314"), epoch_row("gpt-9-0613")
    registry = build_registry([plain, old, new], NO_ALIASES)
    placed = {a.key: a.model_id for a in registry.aliases}
    assert placed["gpt-9-0314"] == "openai:gpt-9-0314"
    assert placed["gpt-9-0613"] == "openai:gpt-9-0613"
    assert {(r.key, r.would_join, r.kind) for r in registry.refused} == {
        ("gpt-9-0314", "openai/gpt-9", "dated_snapshot"),
        ("gpt-9-0613", "openai/gpt-9", "dated_snapshot"),
    }
    named = Candidate(**{**vars(plain), "api_ids": ("gpt-9", "gpt-9-0613")})  # canonical slug
    placed = {a.key: a.model_id for a in build_registry([named, old, new], NO_ALIASES).aliases}
    assert placed["gpt-9-0613"] == "openai/gpt-9"
    assert placed["gpt-9-0314"] == "openai:gpt-9-0314"


def test_two_dates_never_reach_one_model_even_by_name() -> None:
    """Two dated ids with one exact name ("Mistral Large") stay two models: the second date
    is refused whatever rule would place it."""
    first = epoch_row("mistral-large-2402", "Mistral Large", lab="mistralai")
    second = Candidate("arena", "mistral-large-2411", "Mistral Large", lab="mistralai",
                       api_ids=("mistral-large-2411",))  # fmt: skip
    registry = build_registry([first, second], NO_ALIASES)
    assert len({a.model_id for a in registry.aliases}) == 2
    assert registry.refused[0].kind == "dated_snapshot"
    assert "two dates of one id" in registry.refused[0].reason


def test_one_date_written_two_ways_is_one_id() -> None:
    assert id_forms("gpt-5.4-2026-03-05").exact == id_forms("gpt-5.4-20260305").exact
    assert id_forms("claude-opus-4-5@20251101").exact == id_forms("claude-opus-4-5-20251101").exact
    # Google's version stamps are dates too: -001 and -002 are two releases of one id.
    assert id_forms("gemini-1.5-pro-002")[1:] == ("gemini-1.5-pro", "002")
    assert id_forms("llama-3.1-405b").undated is None


def test_a_family_level_name_is_never_a_matching_key() -> None:
    """Epoch's "Model name" is kept as the family and never compared; a name one source gives
    several ids of a lab ("Gemini 1.5 Pro" for `-001` and `-002`) is a family too."""
    google = catalogue("google/gemini-2.0-flash", "Gemini 2.0 Flash")
    exp = epoch_row("gemini-exp-1206", lab="google", family="Gemini 2.0 Flash")
    registry = build_registry([google, exp], NO_ALIASES)
    assert registry.aliases[-1].model_id == "google:gemini-exp-1206"
    assert [(r.would_join, r.kind) for r in registry.refused] == [
        ("google/gemini-2.0-flash", "family_name")
    ]
    pro = catalogue("google/gemini-1.5-pro", "Gemini 1.5 Pro")
    arena = [
        Candidate("arena", f"gemini-1.5-pro-00{n}", "Gemini 1.5 Pro", lab="google",
                  api_ids=(f"gemini-1.5-pro-00{n}",))
        for n in (1, 2)
    ]  # fmt: skip
    placed = {a.key: a.model_id for a in build_registry([pro, *arena], NO_ALIASES).aliases}
    assert placed["gemini-1.5-pro-001"] == "google:gemini-1.5-pro-001"
    assert placed["gemini-1.5-pro-002"] == "google:gemini-1.5-pro-002"
    # A name that leaves out the "preview" of its own id names the family.
    preview = Candidate("arena", "qwen3-max-preview", "Qwen3-Max", lab="qwen",
                        api_ids=("qwen3-max-preview",))  # fmt: skip
    registry = build_registry([catalogue("qwen/qwen3-max", "Qwen3 Max"), preview], NO_ALIASES)
    assert registry.aliases[-1].model_id == "qwen:qwen3-max-preview"


def test_a_parenthetical_the_model_lacks_is_another_model_for_every_source() -> None:
    plus = catalogue("cohere/command-r-plus-08-2024", "Command R+ (08-2024)")
    bare = Candidate("arena", "command-r-plus", "command-r-plus", lab="cohere",
                     api_ids=("command-r-plus",))  # fmt: skip
    named = Candidate("epoch", "c4ai", "Command R+", lab="cohere", api_ids=("c4ai",))
    placed = {a.key: a.model_id for a in build_registry([plus, bare, named], NO_ALIASES).aliases}
    assert placed["c4ai"] == "cohere:c4ai"
    # "(latest)", "(free)" and the listing's own settings name no model.
    latest = Candidate("models_dev", "cohere/x", "Command R+ (08-2024) (latest)", lab="cohere",
                       role="lab", api_ids=("x",))  # fmt: skip
    effort = Candidate("arena", "command-r-plus-08-2024-high", "Command R+ (08-2024) (high)",
                       lab="cohere", settings={"effort": "high"}, api_ids=("y",))  # fmt: skip
    placed = {a.key: a.model_id for a in build_registry([plus, latest, effort], NO_ALIASES).aliases}
    assert placed["cohere/x"] == placed["command-r-plus-08-2024-high"] == plus.key


def test_effort_and_thinking_variants_follow_one_rule_in_every_source() -> None:
    """Reasoning effort, thinking budget and thinking switched off are settings of one model
    in every source; a bare "-thinking" is an id of its own."""
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    assert aliases.split_settings("arena", "gpt-5.1-high") == ("gpt-5.1", {"effort": "high"})
    assert aliases.split_settings("arena", "gpt-5.2-high") == ("gpt-5.2", {"effort": "high"})
    assert aliases.split_settings("epoch", "gpt-5.2-2025-12-11_high") == (
        "gpt-5.2-2025-12-11", {"effort": "high"},
    )  # fmt: skip
    assert aliases.split_settings("arena", "claude-opus-4-5-20251101-thinking-32k") == (
        "claude-opus-4-5-20251101", {"thinking_budget": "thinking-32k"},
    )  # fmt: skip
    assert aliases.split_settings("epoch", "claude-opus-4-6_32K")[1] == {"thinking_budget": "32K"}
    assert aliases.split_settings("arena", "qwen3-235b-a22b-no-thinking") == (
        "qwen3-235b-a22b", {"thinking": "no-thinking"},
    )  # fmt: skip
    assert aliases.split_settings("openrouter_models", "openai/o3-mini-high") == (
        "openai/o3-mini", {"effort": "high"},
    )  # fmt: skip
    assert aliases.split_settings("arena", "kimi-k2-thinking") == ("kimi-k2-thinking", {})
    assert aliases.split_settings("arena", "mistral-medium") == ("mistral-medium", {})


def test_an_alias_row_without_who_when_and_why_is_refused() -> None:
    row = '[[alias]]\nsource = "arena"\nkey = "k"\nmodel_id = "x/y"\nnote = "same model"\n'
    with pytest.raises(ValueError, match="lacks field 'reviewed_by'"):
        AliasFile.load_text(row)
    with pytest.raises(ValueError, match="reviewed_on must be a date"):
        AliasFile.load_text(row + 'reviewed_by = "A. Reviewer"\nreviewed_on = "soon"\n')
    with pytest.raises(ValueError, match="must read"):
        AliasFile.load_text('[accept]\n"arena:k" = "x/y"\n')
    entry = AliasFile.load_text(
        row + 'reviewed_by = "A. Reviewer"\nreviewed_on = "2026-12-06"\n'
    ).entries[("arena", "k")]
    assert entry.evidence == "reviewed alias table: A. Reviewer, 2026-12-06: same model"
    # Every row of the project's own table passes, and says who, when and why.
    project = AliasFile.load(settings.sources_dir() / "aliases.toml")
    assert project.entries and all(e.reviewed_by and e.note for e in project.entries.values())


def test_an_id_differing_only_by_punctuation_is_held_as_a_variant() -> None:
    """`openai-/gpt-4o` would take the page `openai-gpt-4o` from the real GPT-4o: held,
    whichever is listed first."""
    real = catalogue("openai/gpt-4o", "GPT-4o", listed_at="2024-05-13")
    fake = catalogue("openai-/gpt-4o", "GPT-4o", listed_at="2020-01-01")
    for order in ([real, fake], [fake, real]):
        registry = build_registry(order, NO_ALIASES)
        assert list(registry.models) == ["openai/gpt-4o"]
        assert [(q.key, q.resembles) for q in registry.quarantined] == [
            ("openai-/gpt-4o", "openai/gpt-4o")
        ]
        assert "only by punctuation" in registry.quarantined[0].reason


def test_model_pages_are_unique_and_an_openrouter_id_keeps_its_page() -> None:
    slugs = model_slugs(["mistralai:mistral-large", "mistralai/mistral-large", "google:x"])
    assert slugs["mistralai/mistral-large"] == "mistralai-mistral-large"
    assert slugs["mistralai:mistral-large"].startswith("mistralai-mistral-large-")
    assert len(set(slugs.values())) == 3
    # A newcomer sorting first never takes the page.
    assert model_slugs(["a:b", "a/b"])["a/b"] == model_slugs(["a/b"])["a/b"] == "a-b"
