"""Text rules for model identity: Unicode-aware name normalisation and id skeletons.

Two different jobs. `normalise_name` makes two spellings of one name compare equal (NFKC,
case folded, punctuation dropped) while keeping the letters of every script, so two
CJK-named models stay two names. `skeleton` is for spotting impostors: it also removes
invisible characters and folds look-alike letters onto the Latin ones they imitate, so
`OpenAI/GPT-4o`, a Cyrillic `gpt-4о` and `gpt-4o` with a zero-width space all give the
skeleton of `openai/gpt-4o`.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from bench_pipeline.core.text import fold_confusables, is_control, is_invisible, normalise
from bench_pipeline.core.text import skeleton as core_skeleton

TRAILING_PARENTHETICAL = re.compile(r"\s*\([^()]*\)\s*$")
NOT_ASCII_LETTER_OR_DIGIT = bytes(c for c in range(128) if not chr(c).isalnum() or chr(c).isupper())
"""Every ASCII byte but a-z and 0-9: what `letters_and_digits` drops from lower-cased ASCII."""
MEMO = 1 << 18
"""Names and ids remembered by the pure text functions below: matching asks for the same
listing's forms many times (every lookup, every phase), so each is worked out once."""


def clean(text: str) -> str:
    """The text a comparison reads (`core.text.normalise`: controls and invisibles out,
    NFKC), with every dash spelt as an ASCII hyphen."""
    # Printable ASCII has no control or invisible to drop, NFKC keeps it and its one dash is
    # the hyphen: nearly every name and id is returned as it is, unremembered (a memo miss
    # cost 8 times this test, and at 50x the recorded data the distinct texts overflow it).
    if text.isascii() and text.isprintable():
        return text
    return _clean(text)


@lru_cache(maxsize=MEMO)
def _clean(text: str) -> str:
    normalised = normalise(text)
    if normalised.isascii():  # the one ASCII dash is the hyphen itself
        return normalised
    return "".join("-" if unicodedata.category(c) == "Pd" else c for c in normalised)


@lru_cache(maxsize=MEMO)
def skeleton(identifier: str) -> str:
    """What an id looks like to a reader: cleaned, look-alikes folded, case folded."""
    return core_skeleton(clean(identifier))


PUNCTUATION = re.compile(r"[^a-z0-9]+")


def page_skeleton(identifier: str) -> str:
    """What an id's model page is named from: its skeleton with every run of punctuation
    one dash (`openai-/gpt-4o` and `openai/gpt-4o` both give `openai-gpt-4o`)."""
    return PUNCTUATION.sub("-", skeleton(identifier)).strip("-")


def impostor_reason(identifier: str, original: str) -> str:
    """Why `identifier` passes for `original` (same skeleton, different characters)."""
    reasons = []
    if any(is_invisible(c) for c in identifier):
        reasons.append("invisible characters")
    if any(is_control(c) for c in identifier):
        reasons.append("control characters")
    if fold_confusables(clean(identifier)).casefold() != clean(identifier).casefold():
        reasons.append("look-alike letters from another script")
    if clean(identifier).casefold() == clean(original).casefold() and clean(identifier) != clean(
        original
    ):
        reasons.append("letter case")
    if not reasons:
        reasons.append("Unicode compatibility forms")
    return f"differs from {original!r} only by {' and '.join(reasons)}"


@lru_cache(maxsize=MEMO)
def split_name(name: str) -> tuple[str, str]:
    """(the name without trailing parenthetical groups, those groups normalised)."""
    name = clean(name)
    if ")" not in name:  # most names: no group to look for
        return name, ""
    previous: str | None = None
    tails: list[str] = []
    while previous != name:
        previous = name
        match = TRAILING_PARENTHETICAL.search(name)
        if match:
            tails.insert(0, match.group(0))
            name = name[: match.start()]
    return name, letters_and_digits(" ".join(tails))


def letters_and_digits(text: str) -> str:
    """Case folded, letters (of any script) and digits only."""
    if text.isascii():  # ASCII letters and digits are exactly [a-z0-9] once case folded
        # A byte table drops the rest in one pass (a regular expression replaced each).
        return text.lower().encode("ascii").translate(None, NOT_ASCII_LETTER_OR_DIGIT).decode()
    return "".join(c for c in text.casefold() if unicodedata.category(c)[0] in "LN")


@lru_cache(maxsize=MEMO)
def normalise_name(name: str) -> str:
    """NFKC, trailing parenthetical groups dropped, case folded, letters (of any script) and
    digits only. "+" is read as "plus" first: "Command R+" is not "Command R"."""
    base, _ = split_name(name)
    return letters_and_digits(base.replace("+", "plus"))
