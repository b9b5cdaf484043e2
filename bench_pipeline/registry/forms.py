"""The spellings a vendor's API id takes across sources, as comparable forms.

Labs publish one model under several ids: dated (`claude-opus-4-5-20251101`,
`gpt-5-2025-08-07`, `grok-4-0709`), with dashes for dots (`claude-opus-4-5` for OpenRouter's
`claude-opus-4.5`), and hosts wrap them (`anthropic.claude-opus-4-6-v1` on Bedrock,
`claude-opus-4-6@default` on Vertex). `id_forms` gives a listing's exact form and, where it
carries a trailing release date or version stamp, the undated form with that date. Matching
compares exact forms only: a dated id is its own model. The undated form says which dated
ids are two dates of one id (never on one model) and which undated model a dropped date
would have reached (a refused merge, reported).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from bench_pipeline.registry.text import MEMO, clean

# A trailing release date: -2025-08-07, -20251101, @20251101, -09-2025, -0709 / -2411, a
# version stamp as Google writes it (-001, -002), or the vendor's moving pointer -latest (its
# undated form is the model it points at).
TRAILING_DATE = re.compile(
    r"(?:[-@](?P<full>\d{4}-\d{2}-\d{2}|20\d{6})|-(?P<month>\d{2}-20\d{2})|-(?P<short>\d{4})"
    r"|-(?P<version>0\d\d)|-(?P<latest>latest))$"
)
DATE_TAIL = 12
"""How far from the end `TRAILING_DATE` can start: its longest form is 11 characters
(`-2025-08-07`), one more for the newline `$` may stand before. Searching only that tail
finds the same match at a fraction of the cost of trying every place in the id."""
LATEST = "latest"
DASH_FOR_DOT = re.compile(r"(?<=[a-z-])(\d)-(\d)(?=-|$)")
DIGIT_DASH_DIGIT = re.compile(r"\d-\d")
"""What every `DASH_FOR_DOT` match holds: searched for a quarter of its cost (its look-behind
is tried at every place in the id), it rules out the ids with no dash for a dot."""
HOST_SUFFIX = re.compile(r"(?:-v\d+(?::\d+)?|:\d+|@default|@latest)$")
REVISION = re.compile(r"(?::\d+|@default|@latest)$")


class IdForms(NamedTuple):
    """`exact`: the id as comparable text; `undated`/`date`: without its trailing date.

    A named tuple: one is made for every distinct id (hundreds of thousands at scale), in
    a fraction of a frozen dataclass's time."""

    exact: str
    undated: str | None = None
    date: str | None = None


def _dot(match: re.Match[str]) -> str:
    return f"{match[1]}.{match[2]}"


def _dots(text: str) -> str:
    # A function, not the template r"\1.\2": `sub` expands a template at a cost of about
    # 1 µs a call even when nothing matches, several times what the search itself costs.
    if DIGIT_DASH_DIGIT.search(text) is None:
        return text
    return DASH_FOR_DOT.sub(_dot, text)


@lru_cache(maxsize=MEMO)
def id_forms(identifier: str) -> IdForms:
    """Comparable forms of one API id (lower case, dashes for dots read as dots)."""
    text = clean(identifier).strip().lower()
    match = TRAILING_DATE.search(text, max(0, len(text) - DATE_TAIL))
    if match is None or match.start() == 0:
        return IdForms(exact=_dots(text))
    date = next(g for g in match.groups() if g).replace("-", "")
    undated = _dots(text[: match.start()])
    if match["full"]:  # one date, however written: `-2026-03-05`, `-20260305`, `@20260305`
        return IdForms(exact=f"{undated}-{date}", undated=undated, date=date)
    return IdForms(exact=_dots(text), undated=undated, date=date)


def spelling(identifier: str) -> str:
    """The id as a new model's id spells it: lower case, dashes for dots read as dots, its
    date as written (`qwen3-max-2025-09-23`)."""
    return _dots(clean(identifier).strip().lower())


JOINERS = ("/", ".", "-")
"""What may join a host's or lab's prefix to the id it wraps, in the order tried."""


def _strip_ascii(text: str, lowered: str, heads: tuple[str, ...]) -> str:
    """`unwrap_host_id`'s prefix stripping when every letter is ASCII: lower case keeps
    each letter's place, so the id is lowered once instead of at every comparison."""
    changed = True
    while changed and lowered.startswith(heads):  # else a pass would strip nothing
        changed = False
        for head in heads:
            if lowered.startswith(head) and len(text) > len(head):
                text, lowered, changed = text[len(head) :], lowered[len(head) :], True
    return text


@lru_cache(maxsize=MEMO)
def _lowered(prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """The prefixes in lower case (remembered, as `_ascii_heads`: a host's listings share
    one pair)."""
    return tuple(p.lower() for p in prefixes)


@lru_cache(maxsize=MEMO)
def _ascii_heads(prefixes: tuple[str, ...]) -> tuple[str, ...] | None:
    """Every prefix with every joiner, lower case, in the order `unwrap_host_id` tries
    them; None when a prefix is not all ASCII."""
    if not all(p.isascii() for p in prefixes):
        return None
    return tuple(p.lower() + joiner for p in prefixes for joiner in JOINERS)


def _may_end_in_host_suffix(text: str) -> bool:
    """Whether `HOST_SUFFIX` can match: each of its forms holds `-v`, `:` or `@` (three
    substring tests cost a fraction of the search)."""
    return "-v" in text or ":" in text or "@" in text


def unwrap_host_id(identifier: str, prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """A host's id without the host's and lab's prefixes, then also without its version
    suffix: `anthropic.claude-opus-4-6-v1` → (`claude-opus-4-6-v1`, `claude-opus-4-6`);
    `amazon.nova-lite-v1:0` → (`nova-lite-v1:0`, `nova-lite-v1`, `nova-lite`). A regional
    prefix (`eu.`, `us.`) is kept: a regional offering is its own listing.

    Not remembered: nearly every call is a different host's listing (at 50× the recorded
    data 54 of 259,000 calls repeated one), so a memo only cost its upkeep."""
    text = identifier
    lowered = identifier.lower()
    changed = lowered.startswith(_lowered(prefixes))  # else nothing to strip
    heads = _ascii_heads(prefixes) if changed and identifier.isascii() else None
    if heads is not None:
        text, changed = _strip_ascii(identifier, lowered, heads), False
    while changed:
        changed = False
        for prefix in prefixes:
            for joiner in JOINERS:
                if text.lower().startswith(prefix.lower() + joiner) and len(text) > len(prefix) + 1:
                    text, changed = text[len(prefix) + 1 :], True
    # Every REVISION suffix is a HOST_SUFFIX one.
    if not _may_end_in_host_suffix(text) or HOST_SUFFIX.search(text) is None:
        return (text,) if text else ()
    forms = [text, REVISION.sub("", text), HOST_SUFFIX.sub("", text)]
    return tuple(dict.fromkeys(f for f in forms if f))
