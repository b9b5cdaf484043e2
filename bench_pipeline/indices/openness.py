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
from dataclasses import dataclass
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
    unexpected = sorted(k for k in document if k != "licences")
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
    return LicenceTable(entries=MappingProxyType(entries), source=source)


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


__all__ = [
    "COMMERCIAL_RESTRICTED",
    "DEFAULT_LICENCE_TABLE_PATH",
    "LICENCE_CLASSES",
    "NON_COMMERCIAL",
    "OPENNESS_SCORES",
    "PERMISSIVE",
    "PROPRIETARY",
    "UNKNOWN",
    "LicenceClass",
    "LicenceTable",
    "classify_licence",
    "load_licence_table",
    "normalise_licence",
    "openness_score",
]
