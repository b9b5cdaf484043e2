"""The registry's remembered and fast-path lookups give exactly what the plain rules gave.

Each oracle below is the rule as it was written before it was remembered or given a fast
path; the test draws random and hostile names (look-alike letters, invisibles, full-width
forms, dotted capitals whose lower case is longer, empty parts) and compares.
"""

from __future__ import annotations

import unicodedata

import pytest
from earlier_registry import old_unwrap_host_id
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.core.text import normalise
from bench_pipeline.registry.candidates import one_date
from bench_pipeline.registry.forms import (
    DASH_FOR_DOT,
    TRAILING_DATE,
    IdForms,
    id_forms,
    unwrap_host_id,
)
from bench_pipeline.registry.labs import Labs, lab_key
from bench_pipeline.registry.matching import (
    AliasFile,
    Candidate,
    build_registry,
    host_matches,
)
from bench_pipeline.registry.text import (
    TRAILING_PARENTHETICAL,
    clean,
    letters_and_digits,
    normalise_name,
    split_name,
)

pytestmark = pytest.mark.unit

HOSTILE = [*"aAzZ09-_./:@, İıſK()\n\t", "\u200b", "\u0430", "\uff21", "\u2460", "\u00a0", "ß"]
PIECES = ["anthropic", "Anthropic", "amazon", "eu", "openai", "x-ai", "xAI", "v1", "latest"]
PIECES += [
    "@default",
    "-v2",
    ":0",
    "-v1:3",
    "@latest\n",
]  # host suffixes, for the no-suffix fast path
PIECES += [" (high)", "(EU) ", " ( x )", "\uff09"]  # parentheticals, for `split_name`'s fast path
text = st.lists(st.sampled_from(HOSTILE + PIECES) | st.text(max_size=3), max_size=8).map("".join)


def old_lab_key(name: str) -> str:
    return "".join(c for c in clean(name).casefold() if unicodedata.category(c)[0] in "LN")


def old_lab(labs: Labs, name: str | None) -> str | None:
    if not name:
        return None
    keys = [
        labs.names.get(old_lab_key(p), old_lab_key(p)) for p in name.split(",") if old_lab_key(p)
    ]
    for key in keys:
        if key in labs.known:
            return key
    return keys[0] if keys else None


@settings(max_examples=400, deadline=None)
@given(text)
def test_lab_key_is_the_plain_rule(name: str) -> None:
    assert lab_key(name) == old_lab_key(name)


@settings(max_examples=300, deadline=None)
@given(st.lists(text, max_size=6), st.lists(st.tuples(text, text), max_size=6))
def test_remembered_lab_is_the_plain_rule(names: list[str], table: list[tuple[str, str]]) -> None:
    labs = Labs.from_table({lab: [other] for lab, other in table}).with_catalogue(
        [n for n in names[::2] if n], []
    )
    for name in [*names, *names, ",".join(names), None, ""]:  # asked twice: from memory
        assert labs.lab(name) == old_lab(labs, name)


@settings(max_examples=400, deadline=None)
@given(text, st.lists(st.sampled_from(PIECES) | text, max_size=3).map(tuple))
def test_unwrap_host_id_is_the_plain_rule(identifier: str, prefixes: tuple[str, ...]) -> None:
    assert unwrap_host_id(identifier, prefixes) == old_unwrap_host_id(identifier, prefixes)
    assert unwrap_host_id(identifier, prefixes) == old_unwrap_host_id(identifier, prefixes)


@settings(max_examples=400, deadline=None)
@given(text | st.text(st.characters(max_codepoint=127)))
def test_letters_and_digits_is_the_plain_rule(name: str) -> None:
    plain = "".join(c for c in name.casefold() if unicodedata.category(c)[0] in "LN")
    assert letters_and_digits(name) == plain


@settings(max_examples=400, deadline=None)
@given(text | st.text(st.characters(max_codepoint=127)))
def test_clean_is_the_plain_rule(name: str) -> None:
    """Printable ASCII skips the memo and the passes: the answer is the passes' answer."""
    normalised = normalise(name)
    plain = "".join("-" if unicodedata.category(c) == "Pd" else c for c in normalised)
    assert clean(name) == plain
    assert clean(name) == plain  # asked twice: from memory, where remembered


def old_id_forms(identifier: str) -> IdForms:
    text = clean(identifier).strip().lower()
    match = TRAILING_DATE.search(text)
    if match is None or match.start() == 0:
        return IdForms(exact=DASH_FOR_DOT.sub(r"\1.\2", text))
    date = next(g for g in match.groups() if g).replace("-", "")
    undated = DASH_FOR_DOT.sub(r"\1.\2", text[: match.start()])
    if match["full"]:  # a full date is one date however written
        return IdForms(exact=f"{undated}-{date}", undated=undated, date=date)
    return IdForms(exact=DASH_FOR_DOT.sub(r"\1.\2", text), undated=undated, date=date)


DATED = ["-2025-08-07", "-20251101", "@20251101", "-09-2025", "-0709", "-latest", "4-5", "-1-2"]
DATED += ["-001", "-002"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(DATED + HOSTILE + PIECES) | st.text(max_size=3), max_size=8))
def test_id_forms_is_the_plain_rule(pieces: list[str]) -> None:
    identifier = "".join(pieces)
    assert id_forms(identifier) == old_id_forms(identifier)


def old_split_name(name: str) -> tuple[str, str]:
    name = clean(name)
    previous: str | None = None
    tails: list[str] = []
    while previous != name:
        previous = name
        match = TRAILING_PARENTHETICAL.search(name)
        if match:
            tails.insert(0, match.group(0))
            name = name[: match.start()]
    return name, letters_and_digits(" ".join(tails))


@settings(max_examples=400, deadline=None)
@given(text)
def test_split_name_is_the_plain_rule(name: str) -> None:
    assert split_name(name) == old_split_name(name)
    base, _ = old_split_name(name)
    assert normalise_name(name) == letters_and_digits(base.replace("+", "plus"))


IDS = ["openai/gpt-4o", "openai/gpt-4о", "OpenAI/GPT-4o", "anthropic/claude-opus-4.5", "x/y"]
candidates = st.builds(
    Candidate,
    source=st.sampled_from(["openrouter_models", "models_dev", "epoch", "arena"]),
    key=st.sampled_from(IDS) | text,
    name=st.none() | st.sampled_from(["GPT-4o", "GPT-4o (high)", "Claude Opus 4.5"]) | text,
    provider_ids=st.lists(st.sampled_from(IDS) | text, max_size=3).map(tuple),
    lab=st.none() | st.sampled_from(["openai", "anthropic", "x"]),
    role=st.sampled_from(["catalogue", "variant", "lab", "host", "score"]),
    api_ids=st.lists(
        st.sampled_from(
            [
                "gpt-4o",
                "gpt-4o-2024-05-13",
                "gpt-4o-2024-08-06",
                "gpt-4-0314",
                "gpt-4-0613",
                "gemini-1.5-pro-001",
                "gemini-1.5-pro-002",
                "claude-opus-4-5",
            ]
        )
        | text,
        max_size=2,
    ).map(tuple),
    host=st.none() | st.just("bedrock"),
).filter(lambda c: one_date_each(c.api_ids))


def one_date_each(api_ids: tuple[str, ...]) -> bool:
    """Whether a listing's own ids hold at most one date of each id (`candidates` keeps
    only such ids: `one_date`)."""
    return one_date(api_ids) == api_ids


probes = st.builds(
    Candidate,
    source=st.just("probe"),
    key=text,
    name=st.none() | st.sampled_from(["GPT-4o", "GPT-4o (EU)", "Claude Opus 4.5"]) | text,
    provider_ids=st.lists(st.sampled_from(IDS) | text, max_size=2).map(tuple),
    lab=st.none() | st.sampled_from(["openai", "anthropic", "x"]),
    role=st.just("host"),
    api_ids=st.lists(
        st.sampled_from(["gpt-4o", "gpt-4o-2024-05-13", "gpt-4-0613"]) | text, max_size=2
    ).map(tuple),
    host=st.just("probe"),
).filter(lambda c: one_date_each(c.api_ids))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(candidates, max_size=25, unique_by=lambda c: (c.source, c.key)),
    st.lists(probes, max_size=8, unique_by=lambda c: c.key),
)
def test_no_two_dates_of_one_id_ever_share_a_model(
    listing: list[Candidate], listings: list[Candidate]
) -> None:
    """Whatever the listings, roles and order: a model never holds two dates of one id
    (`gpt-4-0314` and `gpt-4-0613`), whichever rule placed them."""
    registry = build_registry([*listing, *listings], AliasFile(entries={}, setting_suffixes={}))
    ids = {(c.source, c.key): c.api_ids for c in [*listing, *listings]}
    dates: dict[tuple[str, str], set[str]] = {}
    for alias in registry.aliases:
        held = ids[(alias.source, alias.key)]
        if alias.method == "new" and alias.model_id == alias.key.lstrip("~").split(":", 1)[0]:
            held = (alias.model_id.split("/", 1)[-1],)  # a variant founding its base's model
        for forms in map(id_forms, held):
            if forms.undated is not None and forms.date != "latest":
                dates.setdefault((alias.model_id, forms.undated), set()).add(forms.date or "")
    assert {k: v for k, v in dates.items() if len(v) > 1} == {}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(candidates, max_size=25, unique_by=lambda c: (c.source, c.key)),
    st.lists(probes, max_size=8, unique_by=lambda c: c.key),
)
def test_host_matches_is_what_the_whole_registry_gives_them(
    listing: list[Candidate], listings: list[Candidate]
) -> None:
    aliases = AliasFile(entries={}, setting_suffixes={})
    whole = build_registry([*listing, *listings], aliases)
    expected = {c.key: None for c in listings} | {
        a.key: a.model_id for a in whole.aliases if a.source == "probe"
    }
    assert host_matches(listing, aliases, listings) == expected
