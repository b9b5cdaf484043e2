"""Matching model listings across sources to canonical models, with no Dagster and no database.

A canonical model is the lab's model. OpenRouter's own listings are the backbone: each plain
OpenRouter id is one model, and distinct ids are never merged with each other. Every other
listing is matched, in this order and on nothing weaker:

1. a person's entry in the alias file;
2. an exact provider id: a full id another listing carries, or the vendor's API id within the
   same lab (`claude-opus-4-5-20251101` is Anthropic's id of `anthropic/claude-opus-4.5`: a
   trailing release date and dashes for dots are spellings of one id, unless a source lists
   that date at a different price);
3. the normalised name within the same lab.

A lab's own listing (models.dev's `anthropic` provider) or a publisher's (Epoch AI, LMArena)
that matches nothing becomes a new model with a lab-scoped id (`anthropic:claude-3-opus`); a
host's or reseller's listing that matches nothing is listed for review and never becomes a
model. An OpenRouter id that differs from another only by case, look-alike letters or
invisible characters, or that reuses another lab's slug, is quarantined, never published.

Nothing depends on the order candidates arrive in: phases go by role, and inside a phase by
the candidate's own content.
"""

from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Literal, NamedTuple

from bench_pipeline.core.allocation import without_collector
from bench_pipeline.registry.forms import LATEST, id_forms
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.text import (
    TRAILING_PARENTHETICAL,
    clean,
    impostor_reason,
    normalise_name,
    skeleton,
    split_name,
)

Method = Literal["alias_file", "provider_id", "normalised_name", "new"]
Role = Literal["catalogue", "variant", "lab", "host", "score"]
Price = tuple[str, str]

__all__ = [
    "AliasFile",
    "Candidate",
    "build_registry",
    "host_matches",
    "normalise_name",
    "registry_placing",
    "split_name",
]


# Candidates, models, aliases and review rows are made hundreds of thousands of times a
# build, so they are plain dataclasses: a frozen one sets each field through
# `object.__setattr__`, five times the cost of the plain one (a fifth of the registry step
# at 50x the recorded data). Nothing assigns to one after it is made; `dataclasses.replace`
# makes a changed copy.


@dataclass
class Candidate:
    """A model as one source lists it.

    Attributes:
        provider_ids: full ids that name a model exactly (OpenRouter ids, a variant's base).
        api_ids: the vendor's API ids for it, compared within the lab (see `forms`).
        lab: the lab that made it, as a lab key; None when no source says.
        role: catalogue, variant, lab (the lab's own listing), host or score.
        host: the host or reseller listing it (models.dev provider), if not the lab.
        price: (input, output) USD per 1M tokens as the listing states them; read only
            for catalogue and lab listings (others may leave it None).
        listed_at: when the catalogue first listed it (ISO), for slug clashes.
    """

    source: str
    key: str
    name: str | None
    provider_ids: tuple[str, ...] = ()
    organization: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    lab: str | None = None
    role: Role = "score"
    api_ids: tuple[str, ...] = ()
    host: str | None = None
    price: Price | None = None
    listed_at: str | None = None


@dataclass(frozen=True)
class AliasEntry:
    source: str
    key: str
    model_id: str
    settings: Mapping[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class AliasFile:
    """What people decided: explicit aliases, setting suffixes per source, and lab names."""

    entries: Mapping[tuple[str, str], AliasEntry]
    setting_suffixes: Mapping[str, Mapping[str, Sequence[str]]]
    labs: Labs = field(default_factory=Labs)

    @classmethod
    def load(cls, path: Path) -> AliasFile:
        return cls.load_text(path.read_text("utf-8"), path)

    @classmethod
    def load_text(cls, text: str, path: Path | str = "aliases.toml") -> AliasFile:
        """The alias file's content; `path` only names it in errors."""
        document = tomllib.loads(text)
        entries = {}
        for number, raw in enumerate(document.get("alias", []), start=1):
            try:
                entry = AliasEntry(
                    source=raw["source"],
                    key=raw["key"],
                    model_id=raw["model_id"],
                    settings=dict(raw.get("settings", {})),
                    note=raw.get("note", ""),
                )
            except KeyError as missing:
                raise ValueError(f"{path}: alias {number} lacks field {missing}") from None
            if (entry.source, entry.key) in entries:
                raise ValueError(f"{path}: alias {number} repeats {entry.source} {entry.key!r}")
            entries[(entry.source, entry.key)] = entry
        for number, (listing, model_id) in enumerate(document.get("accept", {}).items(), 1):
            source, _, key = listing.partition(":")
            if not key or not isinstance(model_id, str):
                raise ValueError(f'{path}: accept {number} must read "source:key" = "model_id"')
            if (source, key) in entries:
                raise ValueError(f"{path}: accept {number} repeats {source} {key!r}")
            entries[(source, key)] = AliasEntry(source, key, model_id, note="accepted in review")
        return cls(
            entries=entries,
            setting_suffixes=document.get("setting_suffixes", {}),
            labs=Labs.from_table(document.get("labs", {})),
        )

    def split_settings(self, source: str, key: str) -> tuple[str, dict[str, str]]:
        """`gpt-5_high` → (`gpt-5`, {"effort": "high"}) where `_high` is declared an effort."""
        for setting, suffixes in self.setting_suffixes.get(source, {}).items():
            for suffix in sorted(suffixes, key=len, reverse=True):
                if key.endswith(suffix) and len(key) > len(suffix):
                    return key[: -len(suffix)], {setting: suffix.lstrip("_-")}
        return key, {}


@dataclass
class Model:
    model_id: str
    name: str
    organization: str | None
    origin_source: str
    origin_key: str
    lab: str | None = None


@dataclass
class Alias:
    source: str
    key: str
    model_id: str
    method: Method
    name: str | None
    settings: Mapping[str, str]
    host: str | None = None


@dataclass
class Unmatched:
    """A listing for review: it became a new model (`model_id`) or, a host's, none."""

    source: str
    key: str
    name: str | None
    normalised_name: str
    model_id: str | None
    reason: str
    lab: str | None = None


@dataclass(frozen=True)
class Quarantined:
    """A catalogue listing held back as a possible impostor of `resembles`."""

    source: str
    key: str
    name: str | None
    resembles: str
    reason: str


@dataclass
class Registry:
    models: dict[str, Model] = field(default_factory=dict)
    aliases: list[Alias] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)


class _Found(NamedTuple):
    """A lookup's answer; `distinct` means the evidence says "another model": stop there.

    A named tuple: every lookup makes one, and a tuple is made fastest.
    """

    model_id: str | None
    method: Method | None = None
    reason: str | None = None
    distinct: bool = False


_NOTHING = _Found(None)
_NONE: frozenset[str] = frozenset()
_NO_PRICES: frozenset[Price] = frozenset()


class _Index:
    """Lookups by exact id, by API id form within a lab, and by name within a lab."""

    def __init__(self, dated_prices: Mapping[tuple[str | None, str, str], set[Price]]) -> None:
        self.by_id: dict[str, set[str]] = defaultdict(set)
        self.by_form: dict[tuple[str | None, str], set[str]] = defaultdict(set)
        self.forms_any_lab: dict[str, set[str]] = defaultdict(set)
        self.by_name: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.tails: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.prices: dict[str, Price] = {}
        self.dated_prices = dated_prices

    def add(self, model_id: str, candidate: Candidate, method: Method) -> None:
        """Index a listing's ids and name under its model. A listing matched only by name
        lends its model no ids: one weak match must not become the evidence for the next."""
        for identifier in candidate.provider_ids if method != "normalised_name" else ():
            self.by_id[identifier].add(model_id)
        for api_id in candidate.api_ids if method != "normalised_name" else ():
            form = id_forms(api_id).exact  # a `-latest` pointer moves: never its undated form
            self.by_form[(candidate.lab, form)].add(model_id)
            self.forms_any_lab[form].add(model_id)
        if candidate.price and candidate.role in ("catalogue", "lab"):
            self.prices.setdefault(model_id, candidate.price)
        if candidate.lab and candidate.name and normalise_name(candidate.name):
            normalised = normalise_name(candidate.name)
            self.by_name[(candidate.lab, normalised)].add(model_id)
            self.tails[(candidate.lab, normalised, model_id)].add(split_name(candidate.name)[1])

    def by_exact_id(self, candidate: Candidate) -> _Found:
        ids = candidate.provider_ids
        if not ids:
            return _NOTHING
        if len(ids) == 1:  # most listings carry one id: no union to build
            found = self.by_id.get(ids[0], _NONE)
        else:
            found = set().union(*(self.by_id.get(i, _NONE) for i in ids))
        if len(found) == 1:
            return _Found(next(iter(found)), "provider_id")
        return _Found(None, reason="provider id names several models") if found else _NOTHING

    def by_api_id(self, candidate: Candidate) -> _Found:
        """The exact form within the lab; then the undated form, unless a source lists the
        candidate's date at another price than the model's; with no lab, an exact form
        that exactly one model holds in any lab."""
        reasons, distinct = [], False
        for api_id in candidate.api_ids:
            forms = id_forms(api_id)
            if candidate.lab is None:
                found = self.forms_any_lab.get(forms.exact, _NONE)
            else:
                found = self.by_form.get((candidate.lab, forms.exact), _NONE)
            if len(found) == 1:
                return _Found(next(iter(found)), "provider_id")
            if found:
                reasons.append(f"API id {api_id!r} names several models")
                continue
            if forms.undated is None:
                continue
            if candidate.lab is None:
                found = self.forms_any_lab.get(forms.undated, _NONE)
            else:
                found = self.by_form.get((candidate.lab, forms.undated), _NONE)
            if len(found) != 1:
                continue
            model_id = next(iter(found))
            listed = self.dated_prices.get(
                (candidate.lab, forms.undated, forms.date or ""), _NO_PRICES
            )
            own = self.prices.get(model_id)
            if own is not None and any(price != own for price in listed):
                reasons.append(
                    f"{api_id!r} is dated {forms.date} and a source lists that date at a "
                    f"different price from {model_id}"
                )
                distinct = True
                continue
            return _Found(model_id, "provider_id")
        if not reasons:  # as `distinct` always comes with one
            return _NOTHING
        return _Found(None, reason="; ".join(reasons), distinct=distinct)

    def by_lab_name(self, candidate: Candidate, strict: bool) -> _Found:
        """The normalised name within the lab. Several models: the one with the same
        parenthetical decides. A parenthetical the model lacks ("(EU)", "(20% off)") rules
        a host's listing out (`strict`); for others, only a conflicting one does."""
        if candidate.lab is None or not candidate.name:
            return _NOTHING
        normalised = normalise_name(candidate.name)
        found = self.by_name.get((candidate.lab, normalised), _NONE) if normalised else _NONE
        if not found:  # most hosts' names: the tail is never read
            return _NOTHING
        tail = split_name(candidate.name)[1]
        same_tail = [m for m in found if tail in self.tails[(candidate.lab, normalised, m)]]
        if len(same_tail) == 1:
            return _Found(same_tail[0], "normalised_name")
        if len(found) > 1:
            return _Found(None, reason="name matches more than one model of the lab")
        model_id = next(iter(found))
        known = self.tails[(candidate.lab, normalised, model_id)]
        if tail and (strict or any(known) or DATED_TAIL.search(tail)):
            return _Found(None, reason=f"name differs from {model_id} in its parenthetical")
        return _Found(model_id, "normalised_name")


def _dated_prices(candidates: Iterable[Candidate]) -> dict[tuple[str | None, str, str], set[Price]]:
    """(lab, undated form, date) → the prices OpenRouter or the lab itself list for that
    dated id (a reseller's markup says nothing about which model it is)."""
    table: dict[tuple[str | None, str, str], set[Price]] = defaultdict(set)
    for candidate in candidates:
        if candidate.price is None or candidate.role not in ("catalogue", "lab"):
            continue
        for api_id in candidate.api_ids:
            forms = id_forms(api_id)
            if forms.undated is not None:
                table[(candidate.lab, forms.undated, forms.date or "")].add(candidate.price)
    return table


# A parenthetical naming a release ("(Mar 2025)", "(2024-05-13)") names a version.
DATED_TAIL = re.compile(r"(19|20)\d\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")
ROLE_ORDER = {"lab": 0, "score": 1}
SOURCE_ORDER = {"epoch": 0, "arena": 1}


@without_collector
def build_registry(candidates: Sequence[Candidate], aliases: AliasFile) -> Registry:
    """Canonical models and every listing's alias, quarantine or review entry."""
    return registry_placing(candidates, aliases, ())[0]


@without_collector
def registry_placing(
    candidates: Sequence[Candidate], aliases: AliasFile, listings: Sequence[Candidate]
) -> tuple[Registry, dict[str, str | None]]:
    """`build_registry`, and the model each of `listings` gets as `host_matches` places
    them (by key, None: unmatched), from the same index: one build answers both."""
    registry, index = _founded(candidates, aliases)
    # Hosts add nothing to the index, so listings alike in what matching reads (many hosts
    # list one model under one id and name) get one answer, looked up once, and an
    # unmatched one its review reason and normalised name with it.
    answers: dict[tuple[object, ...], tuple[_Found, Unmatched | None]] = {}
    for candidate in sorted((c for c in candidates if c.role == "host"), key=attrgetter("key")):
        if (candidate.source, candidate.key) in aliases.entries:
            found, review = _host_answer(
                registry, _match(candidate, aliases, index, strict=True), candidate
            )
        else:
            alike = (candidate.lab, candidate.name, candidate.provider_ids, candidate.api_ids)
            answer = answers.get(alike)
            if answer is None:
                answer = answers[alike] = _host_answer(
                    registry, _match(candidate, aliases, index, strict=True), candidate
                )
            found, review = answer
        if review is not None:  # a host's listing never founds a model
            registry.unmatched.append(
                Unmatched(candidate.source, candidate.key, candidate.name,
                          review.normalised_name, None, review.reason, candidate.lab)
            )  # fmt: skip
            continue
        assert found.model_id is not None  # `_host_answer` reviews an answer naming no model
        registry.aliases.append(_alias(candidate, found.model_id, found.method, aliases))
    placed = _placed(registry, index, aliases, listings)
    _disambiguate_names(registry)
    return registry, placed


@without_collector
def host_matches(
    candidates: Sequence[Candidate], aliases: AliasFile, listings: Sequence[Candidate]
) -> dict[str, str | None]:
    """The model each of `listings` (more hosts' listings) gets when the registry is built
    from `candidates` and them, by key (None: unmatched). Hosts neither found models nor
    lend their ids to later matches, so the registry of everything else is built once and
    no other host is matched; the answer is `build_registry`'s for these listings."""
    registry, index = _founded([c for c in candidates if c.role != "host"], aliases)
    return _placed(registry, index, aliases, listings)


def _host_answer(
    registry: Registry, found: _Found, candidate: Candidate
) -> tuple[_Found, Unmatched | None]:
    """A host's match, and where it names no model its review row (`_unmatched`): the
    fields alike hosts share are the candidate's, and only its key and source differ."""
    if found.model_id in registry.models:
        return found, None
    reason = found.reason or f"the alias file names {found.model_id!r}, no model"
    return found, _unmatched(candidate, None, reason)


def _placed(
    registry: Registry, index: _Index, aliases: AliasFile, listings: Sequence[Candidate]
) -> dict[str, str | None]:
    """Host listings matched into a founded registry (hosts add nothing to the index)."""
    matched = {}
    for listing in listings:
        found = _match(listing, aliases, index, strict=True)
        matched[listing.key] = found.model_id if found.model_id in registry.models else None
    return matched


def _founded(candidates: Sequence[Candidate], aliases: AliasFile) -> tuple[Registry, _Index]:
    """The registry and index of every listing but the hosts' (which match into them)."""
    registry = Registry()
    by_role: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        by_role[candidate.role].append(candidate)
    # Only catalogue and lab listings' prices date an id, and only the lab's own and the
    # publishers' ids witness a slug: the hosts (most listings) are never read for either.
    index = _Index(_dated_prices([*by_role["catalogue"], *by_role["lab"]]))

    catalogue, held = _quarantine(
        by_role["catalogue"], [*by_role["lab"], *by_role["score"]], aliases
    )
    registry.quarantined.extend(held)
    for candidate in catalogue:
        model_id = _chosen(candidate, aliases) or candidate.key
        method: Method = "alias_file" if _chosen(candidate, aliases) else "provider_id"
        _ensure_model(registry, model_id, candidate)
        _record(registry, index, candidate, model_id, method, aliases)
    held_keys = {q.key for q in held}
    for candidate in sorted(by_role["variant"], key=lambda c: c.key):
        if set(candidate.provider_ids) & held_keys and not _chosen(candidate, aliases):
            base = sorted(set(candidate.provider_ids) & held_keys)[0]
            registry.quarantined.append(
                Quarantined(candidate.source, candidate.key, candidate.name, base,
                            f"a variant of the quarantined listing {base!r}")
            )  # fmt: skip
            continue
        found = _match(candidate, aliases, index, strict=False)
        if found.model_id is None:  # a variant of a model OpenRouter no longer lists plainly
            base = candidate.key.lstrip("~").split(":", 1)[0]
            found = _Found(_ensure_model(registry, base, candidate), "new")
            candidate = Candidate(**{**vars(candidate), "api_ids": (base.split("/", 1)[-1],)})
        assert found.model_id is not None  # both branches above found or made a model
        _record(registry, index, candidate, found.model_id, found.method or "new", aliases)

    # The lab's own listings first (an undated id before its dated spellings), then the
    # publishers of scores: either may found a model the later ones match.
    ordered = sorted(
        by_role["lab"] + by_role["score"],
        key=lambda c: (
            ROLE_ORDER[c.role],
            SOURCE_ORDER.get(c.source, 0),
            any(id_forms(i).undated for i in c.api_ids),
            c.key,
        ),
    )
    for candidate in ordered:
        found = _match(candidate, aliases, index, strict=False)
        if found.model_id is None:
            model_id = _ensure_model(registry, _new_model_id(candidate, registry), candidate)
            registry.unmatched.append(_unmatched(candidate, model_id, found.reason))
            _record(registry, index, candidate, model_id, "new", aliases)
        else:
            _ensure_model(registry, found.model_id, candidate)
            _record(registry, index, candidate, found.model_id, found.method or "new", aliases)
    return registry, index


def _chosen(candidate: Candidate, aliases: AliasFile) -> str | None:
    entry = aliases.entries.get((candidate.source, candidate.key))
    return entry.model_id if entry else None


def _match(candidate: Candidate, aliases: AliasFile, index: _Index, strict: bool) -> _Found:
    chosen = _chosen(candidate, aliases)
    if chosen:
        return _Found(chosen, "alias_file")
    exact = index.by_exact_id(candidate)
    if exact.model_id:
        return exact
    api = index.by_api_id(candidate)
    if api.model_id or api.distinct:  # a dated id at another price: no name match
        return api
    found = index.by_lab_name(candidate, strict)
    if found.model_id:
        return found
    reasons = [exact.reason, api.reason, found.reason]
    if candidate.lab is None:
        reasons.append("no source names its lab, so its name is not compared")
    reason = "; ".join(r for r in reasons if r) or "no provider id or normalised name match"
    return _Found(None, reason=reason)


def _alias(candidate: Candidate, model_id: str, method: Method | None, aliases: AliasFile) -> Alias:
    entry = aliases.entries.get((candidate.source, candidate.key))
    # Without an entry the listing's own settings (no copy: nothing changes them).
    settings = {**candidate.settings, **entry.settings} if entry else candidate.settings
    return Alias(
        candidate.source, candidate.key, model_id, method or "new", candidate.name, settings,
        candidate.host,
    )  # fmt: skip


def _record(
    registry: Registry,
    index: _Index,
    candidate: Candidate,
    model_id: str,
    method: Method,
    aliases: AliasFile,
) -> None:
    registry.aliases.append(_alias(candidate, model_id, method, aliases))
    index.add(model_id, candidate, method)


def _unmatched(candidate: Candidate, model_id: str | None, reason: str | None) -> Unmatched:
    normalised = normalise_name(candidate.name or "")
    if model_id is None:
        reason = f"a host's listing that matches no model of its lab: {reason}"
    return Unmatched(
        candidate.source, candidate.key, candidate.name, normalised, model_id,
        reason or "no provider id or normalised name match", candidate.lab,
    )  # fmt: skip


def _model_name(candidate: Candidate) -> str:
    """The listing's name, without a trailing parenthetical that only names its settings
    ("o1-mini (high)" is the model o1-mini at high effort)."""
    name = clean(candidate.name or candidate.key)
    match = TRAILING_PARENTHETICAL.search(name)
    values = {normalise_name(v) for v in candidate.settings.values()}
    if match and match.start() > 0 and normalise_name(match.group(0).strip(" ()")) in values:
        return name[: match.start()]
    return name


def _ensure_model(registry: Registry, model_id: str, candidate: Candidate) -> str:
    if model_id not in registry.models:
        registry.models[model_id] = Model(
            model_id=model_id,
            name=_model_name(candidate),
            organization=candidate.organization,
            origin_source=candidate.source,
            origin_key=candidate.key,
            lab=candidate.lab,
        )
    return model_id


def _new_model_id(candidate: Candidate, registry: Registry) -> str:
    """`lab:api-id` (a `-latest` pointer without its suffix), else `source:key`; stable
    across runs because it depends only on the listing."""
    if candidate.lab and candidate.api_ids:
        forms = id_forms(candidate.api_ids[0])
        model_id = f"{candidate.lab}:{forms.undated if forms.date == LATEST else forms.exact}"
        if model_id not in registry.models:
            return model_id
    primary = candidate.api_ids[0] if candidate.api_ids else candidate.key
    return f"{candidate.source}:{primary}"


def _quarantine(
    catalogue: Sequence[Candidate], witnessing: Sequence[Candidate], aliases: AliasFile
) -> tuple[list[Candidate], list[Quarantined]]:
    """Split the catalogue into the listings that are models and the impostors.

    Same skeleton, different characters: the listing written plainly (its id equals its own
    skeleton) is the model and the others are impostors; with no plain one, all are held.
    Same slug under two authors: the author other sources name as the slug's lab owns it,
    else the listing listed first; the others are held. A person's alias entry overrides.
    `witnessing` holds (at least) every lab and score listing: the ones that name a lab's
    model.
    """
    held: list[Quarantined] = []
    groups: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in catalogue:
        groups[skeleton(candidate.key)].append(candidate)
    survivors = []
    for shape, group in groups.items():
        plain = [c for c in group if c.key == shape]
        for candidate in group:
            if len(group) == 1 or candidate in plain or _chosen(candidate, aliases):
                survivors.append(candidate)
                continue
            original = plain[0].key if plain else min(c.key for c in group if c is not candidate)
            reason = impostor_reason(candidate.key, original)
            if not plain:
                reason += "; neither is written plainly, so both are held"
            held.append(Quarantined(candidate.source, candidate.key, candidate.name,
                                    original, reason))  # fmt: skip
    by_slug: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in survivors:
        by_slug[skeleton(candidate.key.split("/", 1)[-1])].append(candidate)
    witnesses = {
        (c.lab, id_forms(i).exact) for c in witnessing if c.role in ("lab", "score")
        for i in c.api_ids
    }  # fmt: skip
    kept = []
    for slug, group in by_slug.items():
        owner = _slug_owner(group, slug, witnesses)
        for candidate in group:
            if owner is None or candidate is owner or _chosen(candidate, aliases):
                kept.append(candidate)
                continue
            held.append(
                Quarantined(
                    candidate.source, candidate.key, candidate.name, owner.key,
                    f"reuses the slug of {owner.key!r}, which "
                    + ("other sources name as its lab's model" if _witnessed(owner, witnesses)
                       else f"was listed first ({owner.listed_at})"),
                )
            )  # fmt: skip
    return sorted(kept, key=lambda c: c.key), held


def _witnessed(candidate: Candidate, witnesses: set[tuple[str | None, str]]) -> bool:
    return (candidate.lab, id_forms(candidate.key.split("/", 1)[-1]).exact) in witnesses


def _slug_owner(
    group: list[Candidate], slug: str, witnesses: set[tuple[str | None, str]]
) -> Candidate | None:
    if len({c.key for c in group}) < 2:
        return None
    confirmed = [c for c in group if _witnessed(c, witnesses)]
    if len(confirmed) == 1:
        return confirmed[0]
    dated = sorted((c.listed_at, c.key) for c in group if c.listed_at)
    if len(dated) == len(group) and dated[0][0] != dated[1][0]:
        return next(c for c in group if c.key == dated[0][1])
    return None


def _disambiguate_names(registry: Registry) -> None:
    """Published display names are unique: where several models share one (ignoring case),
    each gets its lab, or failing that its id, after the name."""
    groups: dict[str, list[Model]] = defaultdict(list)
    for model in registry.models.values():
        groups[skeleton(model.name)].append(model)
    for group in groups.values():
        if len(group) < 2:
            continue
        labs = [m.lab for m in group]
        distinct_labs = len(set(labs)) == len(labs) and all(labs)
        for model in group:
            suffix = model.lab if distinct_labs else model.model_id
            registry.models[model.model_id] = Model(
                **{**vars(model), "name": f"{model.name} ({suffix})"}
            )
