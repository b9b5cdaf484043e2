"""Matching model names across sources, with no Dagster and no database.

Order of evidence, strongest first: a person's entry in the alias file; an exact provider
model identifier; the normalised name. Anything weaker is not evidence: a name that matches
nothing, or matches two models, becomes a new model and is listed for review, because merging
two distinct models silently corrupts every number attached to both.
"""

from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Method = Literal["alias_file", "provider_id", "normalised_name", "new"]
TRAILING_PARENTHETICAL = re.compile(r"\s*\([^()]*\)\s*$")
NOT_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")


def split_name(name: str) -> tuple[str, str]:
    """(the name without trailing parenthetical groups, those groups normalised)."""
    previous: str | None = None
    tails: list[str] = []
    while previous != name:
        previous = name
        match = TRAILING_PARENTHETICAL.search(name)
        if match:
            tails.insert(0, match.group(0))
            name = name[: match.start()]
    return name, NOT_ALPHANUMERIC.sub("", " ".join(tails).lower())


def normalise_name(name: str) -> str:
    """Drop trailing parenthetical groups, lowercase, keep only letters and digits.

    One addition to the plain rule: "+" is read as "plus" first, because in model names it
    names a different model ("Command R+" is not "Command R").
    """
    base, _ = split_name(name)
    return NOT_ALPHANUMERIC.sub("", base.replace("+", "plus").lower())


@dataclass(frozen=True)
class Candidate:
    """A model as one source names it."""

    source: str
    key: str
    name: str | None
    provider_ids: tuple[str, ...] = ()
    organization: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AliasEntry:
    source: str
    key: str
    model_id: str
    settings: Mapping[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class AliasFile:
    """What people decided: explicit aliases, and suffixes that are settings, per source."""

    entries: Mapping[tuple[str, str], AliasEntry]
    setting_suffixes: Mapping[str, Mapping[str, Sequence[str]]]

    @classmethod
    def load(cls, path: Path) -> AliasFile:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
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
        return cls(entries=entries, setting_suffixes=document.get("setting_suffixes", {}))

    def split_settings(self, source: str, key: str) -> tuple[str, dict[str, str]]:
        """`gpt-5_high` → (`gpt-5`, {"effort": "high"}) where `_high` is declared an effort."""
        for setting, suffixes in self.setting_suffixes.get(source, {}).items():
            for suffix in sorted(suffixes, key=len, reverse=True):
                if key.endswith(suffix) and len(key) > len(suffix):
                    return key[: -len(suffix)], {setting: suffix.lstrip("_-")}
        return key, {}


@dataclass(frozen=True)
class Model:
    model_id: str
    name: str
    organization: str | None
    origin_source: str
    origin_key: str


@dataclass(frozen=True)
class Alias:
    source: str
    key: str
    model_id: str
    method: Method
    name: str | None
    settings: Mapping[str, str]


@dataclass(frozen=True)
class Unmatched:
    source: str
    key: str
    name: str | None
    normalised_name: str
    model_id: str
    reason: str


@dataclass
class Registry:
    models: dict[str, Model] = field(default_factory=dict)
    aliases: list[Alias] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)


class _Index:
    """Identifier and name lookups; a lookup that finds two models finds nothing."""

    def __init__(self) -> None:
        self.by_id: dict[str, set[str]] = defaultdict(set)
        self.by_name: dict[str, set[str]] = defaultdict(set)
        self.tails: dict[tuple[str, str], set[str]] = defaultdict(set)

    def add(self, model_id: str, provider_ids: Iterable[str], name: str | None) -> None:
        for identifier in provider_ids:
            self.by_id[identifier.lower()].add(model_id)
        if name and normalise_name(name):
            self.by_name[normalise_name(name)].add(model_id)
            self.tails[(normalise_name(name), model_id)].add(split_name(name)[1])

    def lookup_name(self, name: str) -> tuple[str | None, bool]:
        """Match on the normalised name; among several models, one with the same
        parenthetical ("Claude Opus 4.6" rather than "Claude Opus 4.6 (Fast)") decides."""
        normalised = normalise_name(name)
        found, ambiguous = self.lookup(self.by_name, [normalised] if normalised else [])
        if ambiguous:
            tail = split_name(name)[1]
            exact = [m for m in self.by_name[normalised] if tail in self.tails[(normalised, m)]]
            if len(exact) == 1:
                return exact[0], False
        if found and self.tail_conflict(name, found):
            return None, True
        return found, ambiguous

    def tail_conflict(self, name: str, model_id: str) -> bool:
        """Both names carry a parenthetical and they differ ("(4k)" vs "(128k)"): not one model."""
        tail = split_name(name)[1]
        known = self.tails[(normalise_name(name), model_id)]
        return bool(tail) and tail not in known and any(known)

    def lookup(self, table: dict[str, set[str]], keys: Iterable[str]) -> tuple[str | None, bool]:
        """(the one model found, whether the keys were ambiguous)."""
        found: set[str] = set()
        for key in keys:
            found |= table.get(key, set())
        if len(found) == 1:
            return next(iter(found)), False
        return None, len(found) > 1


PRIMARY_SOURCE = "openrouter_models"


def build_registry(
    candidates: Sequence[Candidate], aliases: AliasFile, primary_source: str = PRIMARY_SOURCE
) -> Registry:
    """Match candidates in order; the first candidate of a new model defines it.

    Models of the primary catalogue (OpenRouter, which lists new models first) are the
    registry's backbone; a new model from any other source is also listed as unmatched.
    """
    registry = Registry()
    index = _Index()
    for candidate in candidates:
        alias = _match(candidate, aliases, index, registry, candidate.source == primary_source)
        registry.aliases.append(alias)
        index.add(alias.model_id, candidate.provider_ids, candidate.name)
    return registry


def _match(
    candidate: Candidate, aliases: AliasFile, index: _Index, registry: Registry, primary: bool
) -> Alias:
    def alias(model_id: str, method: Method, settings: Mapping[str, str]) -> Alias:
        return Alias(candidate.source, candidate.key, model_id, method, candidate.name, settings)

    entry = aliases.entries.get((candidate.source, candidate.key))
    if entry is not None:
        _ensure_model(registry, entry.model_id, candidate)
        return alias(entry.model_id, "alias_file", {**candidate.settings, **entry.settings})
    found, id_ambiguous = index.lookup(index.by_id, (i.lower() for i in candidate.provider_ids))
    if found:
        return alias(found, "provider_id", candidate.settings)
    normalised = normalise_name(candidate.name or "")
    name_ambiguous = False
    if not primary:  # a catalogue's own distinct ids are distinct models, whatever their names
        found, name_ambiguous = index.lookup_name(candidate.name or "")
        if found:
            return alias(found, "normalised_name", candidate.settings)
    model_id = _ensure_model(registry, None, candidate)
    if not primary:
        reason = (
            "name matches more than one model, or differs only in a parenthetical"
            if name_ambiguous or id_ambiguous
            else "no provider id or normalised name match"
        )
        registry.unmatched.append(
            Unmatched(candidate.source, candidate.key, candidate.name, normalised, model_id, reason)
        )
    return alias(model_id, "new", candidate.settings)


def _ensure_model(registry: Registry, model_id: str | None, candidate: Candidate) -> str:
    model_id = model_id or new_model_id(candidate)
    if model_id not in registry.models:
        registry.models[model_id] = Model(
            model_id=model_id,
            name=candidate.name or candidate.key,
            organization=candidate.organization,
            origin_source=candidate.source,
            origin_key=candidate.key,
        )
    return model_id


def new_model_id(candidate: Candidate) -> str:
    """A model first seen in a source other than OpenRouter is named after that source."""
    primary = candidate.provider_ids[0] if candidate.provider_ids else candidate.key
    return primary if candidate.source == PRIMARY_SOURCE else f"{candidate.source}:{primary}"
