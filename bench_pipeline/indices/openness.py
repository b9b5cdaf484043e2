"""Licence classification and the openness score.

Licence strings arrive from upstream sources in many spellings ("Apache 2.0",
"Apache-2.0", "apache-2.0", "Propretary", ...). They are mapped to one of four
licence classes through a table kept in ``sources/licences.toml`` so that
people can extend it without touching code. :func:`openness_score` then
combines the class with whether weights are published and whether a
repository is recorded.
"""

from __future__ import annotations

import os
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, cast

LicenceClass: TypeAlias = Literal[
    "permissive", "commercial_restricted", "non_commercial", "proprietary"
]
"""The four licence classes a licence string can be mapped to."""

PERMISSIVE: Final = "permissive"
COMMERCIAL_RESTRICTED: Final = "commercial_restricted"
NON_COMMERCIAL: Final = "non_commercial"
PROPRIETARY: Final = "proprietary"

LICENCE_CLASSES: frozenset[str] = frozenset(
    {PERMISSIVE, COMMERCIAL_RESTRICTED, NON_COMMERCIAL, PROPRIETARY}
)
"""Every valid licence class."""

UNKNOWN: Final = "unknown"
"""Table value recording a string known to be too vague to classify."""

DEFAULT_LICENCE_TABLE_PATH: Final = (
    Path(__file__).resolve().parents[2] / "sources" / "licences.toml"
)
"""Location of the licence table in a source checkout of the project."""

OPENNESS_SCORES: Mapping[str, int] = MappingProxyType(
    {
        "open_permissive_with_repository": 100,
        "open_permissive": 90,
        "open_commercial_restricted": 60,
        "open_non_commercial": 40,
        "proprietary": 5,
    }
)
"""The openness levels and their scores, for documentation and reports."""


@dataclass(frozen=True)
class LicenceTable:
    """Lookup from normalised licence strings to licence classes.

    Attributes:
        entries: Maps a key produced by :func:`normalise_licence` to its class,
            or to ``None`` for a string deliberately recorded as unknown.
        source: Where the table was loaded from, for error messages.
    """

    entries: Mapping[str, LicenceClass | None]
    source: str = "<memory>"
    repositories: Mapping[str, RepositoryLicence] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Licences of weights repositories, by lower-cased repository id (``[repositories]``)."""

    def repository_licence(self, repository: str | None) -> RepositoryLicence | None:
        """The reviewed licence of a weights repository (e.g. a Hugging Face id), if any."""
        if not repository:
            return None
        return self.repositories.get(repository.strip().casefold())


@dataclass(frozen=True)
class RepositoryLicence:
    """The licence a weights repository publishes, as a person read it.

    Attributes:
        repository: The repository id as published (``moonshotai/Kimi-K2.5``).
        licence: The licence string the repository names; a key of ``[licences]``.
        evidence: Where the licence was read (the repository's licence file).
        reviewed_on: When (``YYYY-MM-DD``).
        reviewed_by: Who read it.
    """

    repository: str
    licence: str
    evidence: str
    reviewed_on: str
    reviewed_by: str


def normalise_licence(licence: str) -> str:
    """Reduce a licence string to its lookup key.

    The key is case-insensitive and ignores punctuation and whitespace: the
    string is Unicode NFKC-normalised, case-folded, and every character that
    is not a letter or digit is dropped. "Apache 2.0", "Apache-2.0" and
    "apache-2.0" all become ``"apache20"``.

    Args:
        licence: A licence string as found in source data.

    Returns:
        The lookup key (possibly empty).
    """
    folded = unicodedata.normalize("NFKC", licence).casefold()
    return "".join(ch for ch in folded if ch.isalnum())


def load_licence_table(path: str | os.PathLike[str] = DEFAULT_LICENCE_TABLE_PATH) -> LicenceTable:
    """Load and validate a licence table from a TOML file.

    The file must contain a ``[licences]`` table whose keys are licence strings
    (any spelling) and whose values are a licence class or ``"unknown"``. Keys
    are stored under :func:`normalise_licence`, so two spellings of the same
    licence may both be listed as long as they agree on the class.

    Args:
        path: The TOML file; defaults to ``sources/licences.toml``.

    Returns:
        The validated table.

    Raises:
        FileNotFoundError: If the file does not exist.
        tomllib.TOMLDecodeError: If the file is not valid TOML.
        ValueError: If the ``[licences]`` table is missing, an unexpected
            top-level key is present, a value is not a known class or
            ``"unknown"``, a key normalises to nothing, or two keys normalise
            to the same string with different classes.
    """
    source = os.fspath(path)
    with open(path, "rb") as handle:
        document = tomllib.load(handle)
    unexpected = sorted(k for k in document if k not in ("licences", "repositories"))
    if unexpected:
        raise ValueError(
            f"{source}: unexpected top-level key(s) {unexpected}; entries belong in [licences]"
        )
    raw = document.get("licences")
    if not isinstance(raw, dict):
        raise ValueError(f"{source}: missing [licences] table")

    entries: dict[str, LicenceClass | None] = {}
    spelled: dict[str, str] = {}
    for spelling, value in raw.items():
        if value != UNKNOWN and value not in LICENCE_CLASSES:
            raise ValueError(
                f"{source}: licence {spelling!r} has class {value!r}; expected one of "
                f"{sorted(LICENCE_CLASSES)} or {UNKNOWN!r}"
            )
        key = normalise_licence(spelling)
        if not key:
            raise ValueError(f"{source}: licence {spelling!r} has no letters or digits")
        licence_class = None if value == UNKNOWN else cast("LicenceClass", value)
        if key in entries and entries[key] != licence_class:
            raise ValueError(
                f"{source}: {spelled[key]!r} and {spelling!r} are the same licence after "
                f"normalisation but have different classes"
            )
        entries[key] = licence_class
        spelled[key] = spelling
    repositories = _load_repositories(document.get("repositories", {}), entries, source)
    return LicenceTable(
        entries=MappingProxyType(entries),
        source=source,
        repositories=MappingProxyType(repositories),
    )


REPOSITORY_FIELDS: Final = ("licence", "evidence", "reviewed_on", "reviewed_by")
"""What every ``[repositories."<id>"]`` entry must state."""


def _load_repositories(
    raw: object, entries: Mapping[str, LicenceClass | None], source: str
) -> dict[str, RepositoryLicence]:
    """The ``[repositories]`` table: each repository's licence, which must be in the table."""
    if not isinstance(raw, dict):
        raise ValueError(f"{source}: [repositories] must be a table of repositories")
    found: dict[str, RepositoryLicence] = {}
    for repository, entry in raw.items():
        where = f"{source}: [repositories.{repository!r}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} must be a table with {list(REPOSITORY_FIELDS)}")
        bad = [f for f in REPOSITORY_FIELDS if not str(entry.get(f) or "").strip()]
        bad += [f for f in REPOSITORY_FIELDS if f in entry and not isinstance(entry[f], str)]
        extra = sorted(set(entry) - set(REPOSITORY_FIELDS))
        if bad or extra:
            raise ValueError(f"{where}: missing or blank {bad}, unexpected {extra}")
        fields: dict[str, str] = {f: entry[f] for f in REPOSITORY_FIELDS}
        if normalise_licence(fields["licence"]) not in entries:
            raise ValueError(
                f"{where}: licence {fields['licence']!r} is not in [licences]; add it there first"
            )
        key = repository.strip().casefold()
        if key in found:
            raise ValueError(f"{where}: listed twice (repository ids ignore case)")
        found[key] = RepositoryLicence(repository=repository, **fields)
    return found


def classify_licence(licence: str | None, table: LicenceTable) -> LicenceClass | None:
    """Classify a licence string using the table.

    Matching is exact on the normalised key (see :func:`normalise_licence`);
    there is no fuzzy or prefix matching, so an unseen string stays unknown
    until someone adds it to the table.

    Args:
        licence: The licence string from source data, or None.
        table: The table from :func:`load_licence_table`.

    Returns:
        ``"permissive"``, ``"commercial_restricted"``, ``"non_commercial"`` or
        ``"proprietary"``; None when the licence is missing, blank, not in the
        table, or recorded in the table as ``"unknown"``.
    """
    if licence is None:
        return None
    key = normalise_licence(licence)
    if not key:
        return None
    return table.entries.get(key)


def openness_score(
    open_weights: bool | None,
    licence_class: str | None,
    has_repository: bool,
) -> int | None:
    """Score how open a model is, from 5 (closed) to 100 (fully open).

    Decisions, applied in this order:

    1. Closed: a ``"proprietary"`` licence class, or ``open_weights`` False,
       scores 5. A proprietary class wins even when ``open_weights`` says True,
       because the licence, not the download link, decides what may be done
       with the weights; and weights that are not published score 5 whatever
       licence is recorded.
    2. Unknown: with ``open_weights`` None and no licence class, or with open
       weights but no licence class, the score is None; a guess would
       overstate or understate openness.
    3. Inferred openness: with ``open_weights`` None but a non-proprietary
       licence class, the weights are treated as open, since an open licence
       class only exists for weights that were released under it.
    4. Open weights by licence class: ``"permissive"`` scores 100 when a
       retrievable repository is recorded and 90 otherwise;
       ``"commercial_restricted"`` scores 60; ``"non_commercial"`` scores 40.
       The repository only matters for the permissive level.

    Args:
        open_weights: Whether the weights are downloadable; None when unknown.
        licence_class: Output of :func:`classify_licence`, or None.
        has_repository: Whether a retrievable repository (e.g. a Hugging Face
            or GitHub URL) is recorded for the model.

    Returns:
        100, 90, 60, 40 or 5; None when openness cannot be determined.

    Raises:
        ValueError: If ``licence_class`` is not None and not a licence class.
    """
    if licence_class is not None and licence_class not in LICENCE_CLASSES:
        raise ValueError(
            f"unknown licence class {licence_class!r}; expected one of {sorted(LICENCE_CLASSES)}"
        )
    if licence_class == PROPRIETARY or open_weights is False:
        return OPENNESS_SCORES["proprietary"]
    if licence_class is None:
        return None
    if licence_class == PERMISSIVE:
        if has_repository:
            return OPENNESS_SCORES["open_permissive_with_repository"]
        return OPENNESS_SCORES["open_permissive"]
    if licence_class == COMMERCIAL_RESTRICTED:
        return OPENNESS_SCORES["open_commercial_restricted"]
    return OPENNESS_SCORES["open_non_commercial"]


INPUT_PRECEDENCE: Final = (
    "lab_listing",
    "weights_repository",
    "arena_licence",
    "epoch_accessibility",
    "host_listings",
)
"""The inputs to a model's openness, the lab's own record first and hosts last.

``lab_listing``: the lab's own models.dev listing (its ``open_weights``);
``weights_repository``: the weights repository OpenRouter names (``hugging_face_id``) and
the licence a person read there (``[repositories]`` in the licence table);
``arena_licence``: LMArena's licence column; ``epoch_accessibility``: Epoch AI's "Model
accessibility"; ``host_listings``: hosts' and resellers' models.dev listings.
"""

DECIDED: Final = "decided"
AGREES: Final = "agrees"
OVERRULED: Final = "overruled"
SILENT: Final = "silent"
ROLES: Final = (DECIDED, AGREES, OVERRULED, SILENT)
"""What each input did: decided the score, agreed with it, was overruled by an input
before it, or stated nothing usable (a licence the table leaves unknown)."""


@dataclass(frozen=True)
class OpennessInput:
    """One thing a source says about a model's openness.

    Attributes:
        input: One of :data:`INPUT_PRECEDENCE`.
        source_key: The record it comes from (a listing, a repository, a model key).
        open_weights: Whether the record says the weights are published (None: silent).
        licence: The licence string it names, if any.
    """

    input: str
    source_key: str
    open_weights: bool | None = None
    licence: str | None = None


@dataclass(frozen=True)
class OpennessDecision:
    """A model's openness and how it was reached.

    Attributes:
        open_weights: Whether the weights are published (None: no input says).
        licence: The licence string the score rests on, if any.
        licence_class: Its class.
        has_repository: Whether a weights repository is named.
        openness: :func:`openness_score` of the three.
        decided_by: Index into the ordered inputs of the one that decided, or None.
        roles: Per ordered input, one of :data:`ROLES`.
        inputs: The inputs in the order they were weighed.
        classes: Per ordered input, its licence's class.
    """

    open_weights: bool | None
    licence: str | None
    licence_class: LicenceClass | None
    has_repository: bool
    openness: int | None
    decided_by: int | None
    roles: tuple[str, ...]
    inputs: tuple[OpennessInput, ...]
    classes: tuple[LicenceClass | None, ...]


def _states_open(item: OpennessInput, licence_class: LicenceClass | None) -> bool | None:
    """What an input says about the weights: its own flag, else what its licence implies."""
    if item.open_weights is not None:
        return item.open_weights
    if licence_class is None:
        return None
    return licence_class != PROPRIETARY


def decide_openness(inputs: list[OpennessInput], table: LicenceTable) -> OpennessDecision:
    """Weigh a model's openness inputs by precedence (:data:`INPUT_PRECEDENCE`).

    1. Whether the weights are published comes from the first input that says so: its
       own flag, or what its licence implies (a proprietary class means not published,
       any other class means published). A later input never overrides it, so hosts'
       "closed" cannot override a lab's or LMArena's open licence.
    2. With weights published, the level comes from the first input naming a licence of an
       open class (permissive, commercial_restricted, non_commercial); with none, the
       openness is unknown (None) rather than guessed.
    3. With weights not published, the score is 5, decided by the input that said so.

    Inputs of one kind keep their given order (ties are broken by the caller, e.g. by
    source key). Every input gets a role: the one that decided, those that agree, those
    overruled by an earlier input, and those that say nothing usable.

    Raises:
        ValueError: If an input's kind is not one of :data:`INPUT_PRECEDENCE`.
    """
    for item in inputs:
        if item.input not in INPUT_PRECEDENCE:
            raise ValueError(f"unknown openness input {item.input!r}; expected {INPUT_PRECEDENCE}")
    ordered = tuple(sorted(inputs, key=lambda item: INPUT_PRECEDENCE.index(item.input)))
    classes = tuple(classify_licence(item.licence, table) for item in ordered)
    states = [_states_open(item, c) for item, c in zip(ordered, classes, strict=True)]
    has_repository = any(item.input == "weights_repository" for item in ordered)
    weights_at = next((n for n, s in enumerate(states) if s is not None), None)
    if weights_at is None:
        named = next((item.licence for item in ordered if item.licence), None)
        silent = tuple(SILENT for _ in ordered)
        return OpennessDecision(
            None, named, None, has_repository, None, None, silent, ordered, classes
        )
    weights = bool(states[weights_at])
    decided_at = weights_at
    if weights:
        open_classes = (PERMISSIVE, COMMERCIAL_RESTRICTED, NON_COMMERCIAL)
        decided_at = next((n for n, c in enumerate(classes) if c in open_classes), weights_at)
    licence_class = classes[decided_at] if weights else classes[weights_at]
    licence = ordered[decided_at].licence
    score = openness_score(weights, licence_class if weights else PROPRIETARY, has_repository)
    if weights and licence_class is None:
        score = None  # published weights, no licence of an open class: no guess
    roles: list[str] = []
    for n, (state, licence_class_n) in enumerate(zip(states, classes, strict=True)):
        if n == decided_at:
            roles.append(DECIDED)
        elif state is None:
            roles.append(SILENT)
        elif state != weights or (
            weights and licence_class_n is not None and licence_class_n != licence_class
        ):
            roles.append(OVERRULED)
        else:
            roles.append(AGREES)
    return OpennessDecision(
        weights,
        licence,
        licence_class,
        has_repository,
        score,
        decided_at,
        tuple(roles),
        ordered,
        classes,
    )


__all__ = [
    "AGREES",
    "COMMERCIAL_RESTRICTED",
    "DECIDED",
    "DEFAULT_LICENCE_TABLE_PATH",
    "INPUT_PRECEDENCE",
    "LICENCE_CLASSES",
    "NON_COMMERCIAL",
    "OPENNESS_SCORES",
    "OVERRULED",
    "PERMISSIVE",
    "PROPRIETARY",
    "REPOSITORY_FIELDS",
    "ROLES",
    "SILENT",
    "UNKNOWN",
    "LicenceClass",
    "LicenceTable",
    "OpennessDecision",
    "OpennessInput",
    "RepositoryLicence",
    "classify_licence",
    "decide_openness",
    "load_licence_table",
    "normalise_licence",
    "openness_score",
]
