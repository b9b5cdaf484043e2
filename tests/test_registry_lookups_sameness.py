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
from bench_pipeline.registry import matching
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
    registry_placing,
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
    return IdForms(exact=DASH_FOR_DOT.sub(r"\1.\2", text), undated=undated, date=date)


DATED = ["-2025-08-07", "-20251101", "@20251101", "-09-2025", "-0709", "-latest", "4-5", "-1-2"]


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


def _old_by_exact_id(self: matching._Index, candidate: Candidate) -> matching._Found:
    found = set().union(*(self.by_id.get(i, set()) for i in candidate.provider_ids))
    if len(found) == 1:
        return matching._Found(next(iter(found)), "provider_id")
    return matching._Found(None, reason="provider id names several models" if found else None)


def _old_by_api_id(self: matching._Index, candidate: Candidate) -> matching._Found:
    reasons, distinct = [], False
    for api_id in candidate.api_ids:
        forms = id_forms(api_id)
        if candidate.lab is None:
            found = self.forms_any_lab.get(forms.exact, set())
        else:
            found = self.by_form.get((candidate.lab, forms.exact), set())
        if len(found) == 1:
            return matching._Found(next(iter(found)), "provider_id")
        if found:
            reasons.append(f"API id {api_id!r} names several models")
            continue
        if forms.undated is None:
            continue
        if candidate.lab is None:
            found = self.forms_any_lab.get(forms.undated, set())
        else:
            found = self.by_form.get((candidate.lab, forms.undated), set())
        if len(found) != 1:
            continue
        model_id = next(iter(found))
        listed = self.dated_prices.get((candidate.lab, forms.undated, forms.date or ""), set())
        own = self.prices.get(model_id)
        if own is not None and any(price != own for price in listed):
            reasons.append(
                f"{api_id!r} is dated {forms.date} and a source lists that date at a "
                f"different price from {model_id}"
            )
            distinct = True
            continue
        return matching._Found(model_id, "provider_id")
    return matching._Found(None, reason="; ".join(reasons) or None, distinct=distinct)


def _old_by_lab_name(self: matching._Index, candidate: Candidate, strict: bool) -> matching._Found:
    if candidate.lab is None or not candidate.name or not normalise_name(candidate.name):
        return matching._Found(None)
    normalised, tail = normalise_name(candidate.name), split_name(candidate.name)[1]
    found = self.by_name.get((candidate.lab, normalised), set())
    if not found:
        return matching._Found(None)
    same_tail = [m for m in found if tail in self.tails[(candidate.lab, normalised, m)]]
    if len(same_tail) == 1:
        return matching._Found(same_tail[0], "normalised_name")
    if len(found) > 1:
        return matching._Found(None, reason="name matches more than one model of the lab")
    model_id = next(iter(found))
    known = self.tails[(candidate.lab, normalised, model_id)]
    if tail and (strict or any(known) or matching.DATED_TAIL.search(tail)):
        return matching._Found(None, reason=f"name differs from {model_id} in its parenthetical")
    return matching._Found(model_id, "normalised_name")


def _old_match(
    candidate: Candidate, aliases: AliasFile, index: matching._Index, strict: bool
) -> matching._Found:
    chosen = matching._chosen(candidate, aliases)
    if chosen:
        return matching._Found(chosen, "alias_file")
    reasons = []
    for step in (index.by_exact_id, index.by_api_id):
        found = step(candidate)
        if found.model_id or found.distinct:
            return found
        reasons.append(found.reason)
    found = index.by_lab_name(candidate, strict)
    if found.model_id:
        return found
    reasons.append(found.reason)
    if candidate.lab is None:
        reasons.append("no source names its lab, so its name is not compared")
    reason = "; ".join(r for r in reasons if r) or "no provider id or normalised name match"
    return matching._Found(None, reason=reason)


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
        st.sampled_from(["gpt-4o", "gpt-4o-2024-05-13", "claude-opus-4-5"]) | text, max_size=2
    ).map(tuple),
    host=st.none() | st.just("bedrock"),
    price=st.none() | st.sampled_from([("1", "2"), ("3", "4")]),
)


probes = st.builds(
    Candidate,
    source=st.just("probe"),
    key=text,
    name=st.none() | st.sampled_from(["GPT-4o", "GPT-4o (EU)", "Claude Opus 4.5"]) | text,
    provider_ids=st.lists(st.sampled_from(IDS) | text, max_size=2).map(tuple),
    lab=st.none() | st.sampled_from(["openai", "anthropic", "x"]),
    role=st.just("host"),
    api_ids=st.lists(st.sampled_from(["gpt-4o", "gpt-4o-2024-05-13"]) | text, max_size=2).map(
        tuple
    ),
    host=st.just("probe"),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(candidates, max_size=25, unique_by=lambda c: (c.source, c.key)),
    st.lists(probes, max_size=8, unique_by=lambda c: c.key),
)
def test_registry_with_fast_lookups_is_the_plain_one(
    listing: list[Candidate], listings: list[Candidate]
) -> None:
    """Lookups that miss answer with the one shared nothing, a name's tail is split only
    when the name is found, and `_match` runs its steps unrolled: the same answers, reasons
    included, for every role (hosts strictly) and for placed listings."""
    aliases = AliasFile(entries={}, setting_suffixes={})
    fast = registry_placing(listing, aliases, listings)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matching._Index, "by_exact_id", _old_by_exact_id)
        patch.setattr(matching._Index, "by_api_id", _old_by_api_id)
        patch.setattr(matching._Index, "by_lab_name", _old_by_lab_name)
        patch.setattr(matching, "_match", _old_match)
        plain = registry_placing(listing, aliases, listings)
    assert fast == plain


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
