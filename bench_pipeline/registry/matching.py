"""Matching model listings across sources to canonical models, with no Dagster and no database.

A canonical model is the lab's model. OpenRouter's own listings are the backbone: each plain
OpenRouter id is one model, and distinct ids are never merged with each other. Every other
listing is matched, in this order and on nothing weaker:

1. a row of the reviewed alias table (`sources/aliases.toml`: who reviewed it, when, why);
2. an exact provider id: a full id another listing carries, or the vendor's API id within the
   same lab, read case-blind and with dashes for dots (`claude-opus-4-6` is
   `claude-opus-4.6`). The ids a listing carries are the ones its publisher states:
   OpenRouter's id, its `canonical_slug` and the `hugging_face_id` weights it names, a
   lab's own models.dev id, and the one dated id a lab's `(latest)` listing points at;
3. the exact normalised name within the same lab, with the same parenthetical (bar
   `(latest)`, `(free)` and the listing's own settings), and never a family-level name:
   Epoch AI's "Model name", or a name one source gives several of a lab's ids.

A dated id (`gpt-4-0613`, `gemini-1.5-pro-002`, `qwen3-max-2025-09-23`) is its own model:
its trailing date is never dropped to reach an undated model, and a match that would put
two dates of one id on a model is refused. Refused dated-snapshot and family-name merges
are kept (`Registry.refused`) for `bench registry report`.

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
from bench_pipeline.registry.forms import LATEST, id_forms, spelling
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.text import (
    TRAILING_PARENTHETICAL,
    clean,
    impostor_reason,
    letters_and_digits,
    normalise_name,
    page_skeleton,
    skeleton,
    split_name,
)

Method = Literal["alias_file", "provider_id", "normalised_name", "new"]
RefusalKind = Literal["dated_snapshot", "family_name"]
Role = Literal["catalogue", "variant", "lab", "host", "score"]

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
        listed_at: when the catalogue first listed it (ISO), for slug clashes.
        family: a family-level name the source gives it (Epoch AI's "Model name"): shown,
            never matched on.
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
    listed_at: str | None = None
    family: str | None = None


REVIEW_FIELDS = ("reviewed_by", "reviewed_on", "why")
"""What every row of the reviewed alias table states, and the model page shows."""


@dataclass(frozen=True)
class AliasEntry:
    source: str
    key: str
    model_id: str
    settings: Mapping[str, str] = field(default_factory=dict)
    note: str = ""
    reviewed_by: str = ""
    reviewed_on: str = ""

    @property
    def evidence(self) -> str:
        return f"reviewed alias table: {self.reviewed_by}, {self.reviewed_on}: {self.note}"


def _review(raw: Mapping[str, object], where: str) -> dict[str, str]:
    """A row's reviewer, date and reason, each required: an unreviewed row joins nothing."""
    values = {}
    for name in REVIEW_FIELDS:
        value = raw.get(name, raw.get("note") if name == "why" else None)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{where} lacks field {name!r} (who reviewed it, when, and why)")
        values[name] = value.strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", values["reviewed_on"]):
        raise ValueError(f"{where}: reviewed_on must be a date, YYYY-MM-DD")
    return values


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
                review = _review(raw, f"{path}: alias {number}")
                entry = AliasEntry(
                    source=raw["source"],
                    key=raw["key"],
                    model_id=raw["model_id"],
                    settings=dict(raw.get("settings", {})),
                    note=review["why"],
                    reviewed_by=review["reviewed_by"],
                    reviewed_on=review["reviewed_on"],
                )
            except KeyError as missing:
                raise ValueError(f"{path}: alias {number} lacks field {missing}") from None
            if (entry.source, entry.key) in entries:
                raise ValueError(f"{path}: alias {number} repeats {entry.source} {entry.key!r}")
            entries[(entry.source, entry.key)] = entry
        for number, (listing, row) in enumerate(document.get("accept", {}).items(), 1):
            source, _, key = listing.partition(":")
            if not key or not isinstance(row, dict) or not isinstance(row.get("model_id"), str):
                raise ValueError(
                    f'{path}: accept {number} must read "source:key" = {{ model_id = "...", '
                    f'reviewed_by = "...", reviewed_on = "YYYY-MM-DD", why = "..." }}'
                )
            review = _review(row, f"{path}: accept {number} ({listing})")
            if (source, key) in entries:
                raise ValueError(f"{path}: accept {number} repeats {source} {key!r}")
            entries[(source, key)] = AliasEntry(
                source, key, row["model_id"], dict(row.get("settings", {})), review["why"],
                review["reviewed_by"], review["reviewed_on"],
            )  # fmt: skip
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
                    return key[: -len(suffix)], {setting: suffix.strip("_- ()")}
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
    evidence: str = ""


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


@dataclass(frozen=True)
class Refusal:
    """A merge the old, weaker rules made and these refuse: `key` would have joined
    `would_join` by a dropped date (`dated_snapshot`) or a family-level name (`family_name`);
    it sits on `model_id` instead."""

    source: str
    key: str
    model_id: str | None
    would_join: str
    kind: RefusalKind
    reason: str


@dataclass
class Registry:
    models: dict[str, Model] = field(default_factory=dict)
    aliases: list[Alias] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


class _Found(NamedTuple):
    """A lookup's answer; `distinct` means the evidence says "another model": stop there.

    A named tuple: every lookup makes one, and a tuple is made fastest.
    """

    model_id: str | None
    method: Method | None = None
    reason: str | None = None
    distinct: bool = False
    evidence: str = ""
    refused: tuple[RefusalKind, str] | None = None  # what a weaker rule would have joined


_NOTHING = _Found(None)
_NONE: frozenset[str] = frozenset()


class _Index:
    """Lookups by exact id, by API id form within a lab, and by name within a lab; and the
    dated ids each model holds, so that no second date of an id ever joins it."""

    def __init__(self, families: frozenset[tuple[str, str | None, str]] = frozenset()) -> None:
        """`families`: (source, lab, full name) of the family-level names (`_families`)."""
        self.by_id: dict[str, set[str]] = defaultdict(set)
        self.by_form: dict[tuple[str | None, str], set[str]] = defaultdict(set)
        self.forms_any_lab: dict[str, set[str]] = defaultdict(set)
        self.by_name: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.tails: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.lenders: dict[tuple[str | None, str], str] = {}
        self.dates: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
        self.families = families

    def add(self, model_id: str, candidate: Candidate, method: Method) -> None:
        """Index a listing's ids and name under its model. A listing matched only by name
        lends its model no ids (one weak match must not become the evidence for the next),
        except the lab's own listing: the id a lab gives its model is the lab's word."""
        lends = method != "normalised_name" or candidate.role == "lab"
        for identifier in candidate.provider_ids if lends else ():
            self.by_id[identifier].add(model_id)
        for api_id in candidate.api_ids if lends else ():
            form = id_forms(api_id).exact  # a `-latest` pointer moves: never its undated form
            self.by_form[(candidate.lab, form)].add(model_id)
            self.forms_any_lab[form].add(model_id)
            self.lenders.setdefault((candidate.lab, form), f"{candidate.source} {candidate.key}")
        for forms in map(id_forms, candidate.api_ids):
            if forms.undated is not None and forms.date != LATEST:
                self.dates[(model_id, forms.undated)].setdefault(forms.date or "", forms.exact)
        if candidate.lab and candidate.name and not self.is_family(candidate):
            normalised = normalise_name(candidate.name)
            if normalised:
                self.by_name[(candidate.lab, normalised)].add(model_id)
                self.tails[(candidate.lab, normalised, model_id)].add(_tail(candidate))

    def is_family(self, candidate: Candidate) -> bool:
        """Whether the listing's name is family-level: one its source gives several of the
        lab's ids, or one that leaves out the "preview" or "exp" its own id carries
        (LMArena's "Qwen3-Max" for `qwen3-max-preview`)."""
        if not candidate.name or candidate.role == "host":
            return False
        if candidate.api_ids and _drops_stage(candidate.api_ids[0], candidate.name):
            return True
        return (candidate.source, candidate.lab, _full_name(candidate)) in self.families

    def second_date(self, model_id: str, candidate: Candidate) -> str | None:
        """Why the listing may not join `model_id`, if one of its dated ids would be a second
        date of one id there. A host adds nothing to the index, so two hosts' dates never
        meet in it: a host's dated id (the last path part of an id it carries) joins only a
        model holding that very date."""
        host = candidate.role == "host"
        dated = own = False
        ids = (*candidate.api_ids, *candidate.provider_ids) if host else candidate.api_ids
        for api_id in ids:
            forms = id_forms(api_id.rsplit("/", 1)[-1] if host else api_id)
            if forms.undated is None or forms.date == LATEST:
                continue
            dated = True
            held = self.dates.get((model_id, forms.undated), {})
            other = next((i for d, i in sorted(held.items()) if d != (forms.date or "")), None)
            if other is not None:
                return f"{model_id} already holds {other}: two dates of one id never share a model"
            own = own or bool(held)
        if host and dated and not own:
            return (
                f"a host's dated id joins only a model holding that date, and {model_id} does not"
            )
        return None

    def by_exact_id(self, candidate: Candidate) -> _Found:
        ids = candidate.provider_ids
        if not ids:
            return _NOTHING
        if len(ids) == 1:  # most listings carry one id: no union to build
            found = self.by_id.get(ids[0], _NONE)
        else:
            found = set().union(*(self.by_id.get(i, _NONE) for i in ids))
        if len(found) == 1:
            held = next(i for i in ids if i in self.by_id)
            return _Found(next(iter(found)), "provider_id", evidence=f"same provider id {held}")
        return _Found(None, reason="provider id names several models") if found else _NOTHING

    def _forms(self, lab: str | None, form: str) -> set[str] | frozenset[str]:
        if lab is None:
            return self.forms_any_lab.get(form, _NONE)
        return self.by_form.get((lab, form), _NONE)

    def by_api_id(self, candidate: Candidate) -> _Found:
        """The exact form within the lab (with no lab, an exact form exactly one model
        holds in any lab). A dated id whose exact form no model holds matches nothing: the
        undated model it would have fallen back to is noted as a refused merge."""
        reasons: list[str] = []
        refused: tuple[RefusalKind, str] | None = None
        for api_id in candidate.api_ids:
            forms = id_forms(api_id)
            found = self._forms(candidate.lab, forms.exact)
            if len(found) == 1:
                lender = self.lenders.get((candidate.lab, forms.exact)) or "another listing"
                return _Found(
                    next(iter(found)), "provider_id",
                    evidence=f"same API id {forms.exact} as {lender}",
                )  # fmt: skip
            if found:
                reasons.append(f"API id {api_id!r} names several models")
                continue
            if forms.undated is None or forms.date == LATEST or refused is not None:
                continue
            undated = self._forms(candidate.lab, forms.undated)
            if len(undated) == 1:
                model_id = next(iter(undated))
                refused = ("dated_snapshot", model_id)
                reasons.append(
                    f"{api_id!r} is a dated snapshot ({forms.date}) that no source names as "
                    f"{model_id}: a date is never dropped to match"
                )
        if not reasons:
            return _NOTHING
        return _Found(None, reason="; ".join(reasons), refused=refused)

    def by_lab_name(self, candidate: Candidate, strict: bool) -> _Found:
        """The exact normalised name within the lab, with the same parenthetical (bar the
        ones that name no model: `_tail`). Several models: the one with the same
        parenthetical decides. A family-level name is never looked up (`strict` is kept
        for the hosts' callers: the rule is the same for every listing)."""
        del strict
        if candidate.lab is None or not candidate.name or self.is_family(candidate):
            return _NOTHING
        normalised = normalise_name(candidate.name)
        found = self.by_name.get((candidate.lab, normalised), _NONE) if normalised else _NONE
        if not found:  # most hosts' names: the tail is never read
            return _NOTHING
        tail = _tail(candidate)
        same_tail = [m for m in found if tail in self.tails[(candidate.lab, normalised, m)]]
        evidence = f"exact normalised name {normalised!r} within lab {candidate.lab}"
        if len(same_tail) == 1:
            return _Found(same_tail[0], "normalised_name", evidence=evidence)
        if len(found) > 1:
            return _Found(None, reason="name matches more than one model of the lab")
        model_id = next(iter(found))
        return _Found(None, reason=f"name differs from {model_id} in its parenthetical")

    def by_family(self, candidate: Candidate) -> str | None:
        """The one model a family-level name would have joined (for the refusal report)."""
        name = candidate.family if candidate.family else candidate.name
        if candidate.lab is None or not name:
            return None
        normalised = normalise_name(name)
        found = self.by_name.get((candidate.lab, normalised), _NONE)
        if len(found) == 1:
            return next(iter(found))
        plain = [m for m in found if "" in self.tails[(candidate.lab, normalised, m)]]
        return plain[0] if len(plain) == 1 else None


STAGES = ("preview", "exp")
"""Words in an id that mark a pre-release checkpoint: a name without them names the family."""


def _drops_stage(api_id: str, name: str) -> bool:
    words = set(re.split(r"[^a-z0-9]+", api_id.lower()))
    return any(s in words and s not in letters_and_digits(name) for s in STAGES)


IGNORED_TAILS = frozenset({"latest", "free"})
"""Parentheticals that name no model: a moving pointer ("(latest)") and a free offering
("(free)"), so "Claude Opus 4 (latest)" is "Claude Opus 4" for the name rule."""


def _tail(candidate: Candidate) -> str:
    """The listing's parenthetical as the name rule compares it: without the groups that
    name no model and without the listing's own settings ("GPT-5 mini (high)")."""
    if not candidate.name or ")" not in candidate.name:
        return ""
    groups = re.findall(r"\(([^()]*)\)", split_name_groups(candidate.name))
    settings = {letters_and_digits(v) for v in candidate.settings.values()}
    kept = [
        letters_and_digits(g) for g in groups
        if letters_and_digits(g) not in IGNORED_TAILS and letters_and_digits(g) not in settings
    ]  # fmt: skip
    return "".join(kept)


def split_name_groups(name: str) -> str:
    """The trailing parenthetical groups of a name, as written."""
    base, _ = split_name(name)
    return clean(name)[len(base) :]


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
        registry.aliases.append(_alias(candidate, found, aliases))
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


def _families(candidates: Iterable[Candidate]) -> frozenset[tuple[str, str | None, str]]:
    """(source, lab, full name) of every name a source gives several of a lab's ids:
    a family-level name ("Gemini 1.5 Pro" for `-001` and `-002`), never a matching key. A
    lab's moving pointer (`-latest`, "(latest)") is not another id of the name."""
    ids: dict[tuple[str, str | None, str], set[str]] = defaultdict(set)
    for candidate in candidates:
        if candidate.role == "host" or not candidate.name or not candidate.api_ids:
            continue
        forms = id_forms(candidate.api_ids[0])
        if forms.date == LATEST or "latest" in split_name(candidate.name)[1]:
            continue
        ids[(candidate.source, candidate.lab, _full_name(candidate))].add(forms.exact)
    return frozenset(key for key, held in ids.items() if len(held) > 1)


def _full_name(candidate: Candidate) -> str:
    """The normalised name with its parenthetical: "Model (Alpha)" and "Model (Beta)" are
    two names, "Gemini 1.5 Pro" for two ids is one."""
    return f"{normalise_name(candidate.name or '')}({_tail(candidate)})"


def _founded(candidates: Sequence[Candidate], aliases: AliasFile) -> tuple[Registry, _Index]:
    """The registry and index of every listing but the hosts' (which match into them)."""
    registry = Registry()
    by_role: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        by_role[candidate.role].append(candidate)
    # Only the lab's own and the publishers' ids witness a slug, and only they (with the
    # catalogue) can give a name to several ids: the hosts (most listings) are never read.
    index = _Index(_families([*by_role["catalogue"], *by_role["lab"], *by_role["score"]]))

    catalogue, held = _quarantine(
        by_role["catalogue"], [*by_role["lab"], *by_role["score"]], aliases
    )
    registry.quarantined.extend(held)
    for candidate in catalogue:
        entry = aliases.entries.get((candidate.source, candidate.key))
        model_id = entry.model_id if entry else candidate.key
        found = (
            _Found(model_id, "alias_file", evidence=entry.evidence)
            if entry
            else _Found(model_id, "provider_id", evidence="OpenRouter's own listing")
        )
        _ensure_model(registry, model_id, candidate)
        _record(registry, index, candidate, found, aliases)
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
            found = _Found(
                _ensure_model(registry, base, candidate), "new",
                evidence=f"a variant of {base}, which OpenRouter no longer lists",
            )  # fmt: skip
            candidate = Candidate(**{**vars(candidate), "api_ids": (base.split("/", 1)[-1],)})
        assert found.model_id is not None  # both branches above found or made a model
        _record(registry, index, candidate, found, aliases)

    # The lab's own listings first (an undated id before dated ones), then the publishers
    # of scores: either may found a model the later ones match.
    ordered = sorted(
        by_role["lab"] + by_role["score"],
        key=lambda c: (
            ROLE_ORDER[c.role],
            SOURCE_ORDER.get(c.source, 0),
            bool(c.api_ids) and id_forms(c.api_ids[0]).undated is not None,
            c.key,
        ),
    )
    for candidate in ordered:
        found = _match(candidate, aliases, index, strict=False)
        if found.model_id is None:
            model_id = _ensure_model(registry, _new_model_id(candidate, registry), candidate)
            registry.unmatched.append(_unmatched(candidate, model_id, found.reason))
            _note_refusal(registry, index, candidate, found, model_id)
            _record(
                registry, index, candidate,
                _Found(model_id, "new", evidence="matched no model: a model of its own"),
                aliases,
            )  # fmt: skip
        else:
            _ensure_model(registry, found.model_id, candidate)
            _note_refusal(registry, index, candidate, found, found.model_id)
            _record(registry, index, candidate, found, aliases)
    return registry, index


def _note_refusal(
    registry: Registry, index: _Index, candidate: Candidate, found: _Found, model_id: str
) -> None:
    """Keep the merge a weaker rule would have made, where the listing sits elsewhere."""
    if found.refused is not None and found.refused[1] != model_id:
        kind, would = found.refused
        registry.refused.append(
            Refusal(candidate.source, candidate.key, model_id, would, kind, found.reason or "")
        )
        return
    if candidate.family or index.is_family(candidate):
        would_join = index.by_family(candidate)
        if would_join is not None and would_join != model_id:
            name = candidate.family or candidate.name
            registry.refused.append(
                Refusal(candidate.source, candidate.key, model_id, would_join, "family_name",
                        f"{name!r} is a family-level name, never a matching key")
            )  # fmt: skip


def _chosen(candidate: Candidate, aliases: AliasFile) -> str | None:
    entry = aliases.entries.get((candidate.source, candidate.key))
    return entry.model_id if entry else None


def _match(candidate: Candidate, aliases: AliasFile, index: _Index, strict: bool) -> _Found:
    found = _evidence(candidate, aliases, index, strict)
    if found.model_id is None:
        return found
    refusal = index.second_date(found.model_id, candidate)
    if refusal is None:
        return found
    return _Found(None, reason=refusal, refused=("dated_snapshot", found.model_id))


def _evidence(candidate: Candidate, aliases: AliasFile, index: _Index, strict: bool) -> _Found:
    """The first rule that places the listing, with what it rests on."""
    entry = aliases.entries.get((candidate.source, candidate.key))
    if entry:
        return _Found(entry.model_id, "alias_file", evidence=entry.evidence)
    exact = index.by_exact_id(candidate)
    if exact.model_id:
        return exact
    api = index.by_api_id(candidate)
    if api.model_id:
        return api
    found = index.by_lab_name(candidate, strict)
    if found.model_id:
        return found
    reasons = [exact.reason, api.reason, found.reason]
    if candidate.lab is None:
        reasons.append("no source names its lab, so its name is not compared")
    if index.is_family(candidate):
        reasons.append(f"{candidate.name!r} names several of its source's ids: not compared")
    reason = "; ".join(r for r in reasons if r) or "no provider id or normalised name match"
    return _Found(None, reason=reason, refused=api.refused)


def _alias(candidate: Candidate, found: _Found, aliases: AliasFile) -> Alias:
    entry = aliases.entries.get((candidate.source, candidate.key))
    # Without an entry the listing's own settings (no copy: nothing changes them).
    settings = {**candidate.settings, **entry.settings} if entry else candidate.settings
    assert found.model_id is not None
    return Alias(
        candidate.source, candidate.key, found.model_id, found.method or "new", candidate.name,
        settings, candidate.host, found.evidence,
    )  # fmt: skip


def _record(
    registry: Registry, index: _Index, candidate: Candidate, found: _Found, aliases: AliasFile
) -> None:
    assert found.model_id is not None
    registry.aliases.append(_alias(candidate, found, aliases))
    index.add(found.model_id, candidate, found.method or "new")


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
        own = forms.undated if forms.date == LATEST else spelling(candidate.api_ids[0])
        model_id = f"{candidate.lab}:{own}"
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
    survivors = _punctuation_variants(survivors, witnessing, aliases, held)
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


PLAIN_ID = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*/[a-z0-9]+(?:[-._:][a-z0-9]+)*")
"""An id written plainly: lower case, each punctuation mark between letters or digits."""


def _punctuation_variants(
    catalogue: list[Candidate],
    witnessing: Sequence[Candidate],
    aliases: AliasFile,
    held: list[Quarantined],
) -> list[Candidate]:
    """Listings whose ids differ only by punctuation would share one model page: the one
    other sources name (as `_slug_owner`), else the one listed first, keeps it and the
    others are held as variants; with neither, all are held. A page never changes hands."""
    groups: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in catalogue:
        groups[page_skeleton(candidate.key)].append(candidate)
    if all(len(group) == 1 for group in groups.values()):
        return catalogue
    witnesses = {
        (c.lab, id_forms(i).exact) for c in witnessing if c.role in ("lab", "score")
        for i in c.api_ids
    }  # fmt: skip
    kept = []
    for group in groups.values():
        if len(group) == 1:
            kept.extend(group)
            continue
        owner = _page_owner(group, witnesses)
        for candidate in group:
            if candidate is owner or _chosen(candidate, aliases):
                kept.append(candidate)
                continue
            resembles = owner.key if owner else min(c.key for c in group if c is not candidate)
            held.append(
                Quarantined(
                    candidate.source, candidate.key, candidate.name, resembles,
                    f"differs from {resembles!r} only by punctuation, so both would take one "
                    "model page: held as a variant"
                    + ("" if owner else "; neither is named by another source or listed first"),
                )
            )  # fmt: skip
    return kept


def _page_owner(group: list[Candidate], witnesses: set[tuple[str | None, str]]) -> Candidate | None:
    """Of ids that differ only by punctuation, the one written plainly; of several, the
    one other sources name, then the one listed first; None when nothing tells them apart."""
    plain = [c for c in group if PLAIN_ID.fullmatch(c.key)] or group
    if len(plain) == 1:
        return plain[0]
    confirmed = [c for c in plain if _witnessed(c, witnesses)]
    if len(confirmed) == 1:
        return confirmed[0]
    dated = sorted((c.listed_at, c.key) for c in plain if c.listed_at)
    if len(dated) == len(plain) and dated[0][0] != dated[1][0]:
        return next(c for c in plain if c.key == dated[0][1])
    return None


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
