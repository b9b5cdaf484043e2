r"""Untrusted text: what a model or a stranger wrote, made safe to compare and to display.

Model outputs, submissions and model names can hide things from a reader: zero-width and other
invisible format characters, bidirectional overrides that reorder what is displayed, terminal
escape sequences, and letters of other scripts that look like Latin ones (a Cyrillic "С" in
"Сlaude"). This module is the one home of the rules that take those apart:

- `strip_controls`: terminal escape sequences (CSI, OSC, DCS and the rest), C0 and C1 control
  characters except newline and tab, and invisible or bidirectional format characters
  removed; a lone carriage return becomes a newline (it could overwrite a displayed line).
  For everything printed to a terminal.
- `normalise`: `strip_controls`, then Unicode NFKC (full-width and mathematical letters become
  plain ones), then the invisibles NFKC may leave. The text a comparison reads.
- `skeleton`: `normalise`, letters that look like Latin ones folded to them (`CONFUSABLES`),
  then case-folded. Two strings with the same skeleton look alike to a reader. For matching
  only (redaction, look-alike detection); never shown or stored in place of the original.
- `lookalike_problems`: why a name is not what it appears to be (empty when it is plain).
- `escaped`: a name with every character that could pass for another shown as `\uXXXX`, so
  a look-alike is never displayed as the real name.
- `without_lone_surrogates`: a JSON escape such as `\ud800` decodes to half a character that
  no UTF-8 file, DuckDB column or Arrow array can hold; each becomes U+FFFD, as a decoder
  shows a broken byte, so one odd answer cannot stop its storage.

The stored text always keeps its exact bytes: these functions make copies.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_ESCAPE_SEQUENCE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]                      # CSI: colours, cursor moves, clearing
  | \x1b[\]PX^_].*?(?:\x07|\x1b\\|\x9c|$)        # OSC, DCS, SOS, PM, APC strings
  | \x1b[ -/]*[0-~]                              # the other escape sequences (two or more bytes)
  | \x9b[0-?]*[ -/]*[@-~]                        # CSI as one C1 character
  | [\x90\x98\x9d\x9e\x9f].*?(?:\x07|\x9c|$)     # C1 string introducers
    """,
    re.VERBOSE | re.DOTALL,
)

_KEPT_CONTROLS = frozenset("\n\t")

_INVISIBLE_EXTRA = frozenset(
    "\u034f"  # combining grapheme joiner
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers (letters that draw nothing)
    "\u17b4\u17b5"  # Khmer inherent vowels
    "\u2800"  # braille blank
)
"""Characters outside category Cf that draw nothing."""


def is_invisible(char: str) -> bool:
    """Format (Cf: zero-width, bidi controls, tags), variation selectors, and fillers."""
    if char in _INVISIBLE_EXTRA:
        return True
    code = ord(char)
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True
    return unicodedata.category(char) == "Cf"


def is_control(char: str) -> bool:
    """A control character (Cc) that a comparison drops (tab and newline are kept)."""
    return unicodedata.category(char) == "Cc" and char not in _KEPT_CONTROLS


BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""The bidirectional marks, embeddings, overrides and isolates (all of category Cf)."""


def has_bidi_controls(text: str) -> bool:
    """True when `text` holds a bidirectional control (it may display reordered)."""
    return any(char in BIDI_CONTROLS for char in text)


def strip_controls(text: str) -> str:
    """`text` safe to print to a terminal (see the module docstring)."""
    if text.isascii() and text.isprintable():  # no escape, control or invisible: as it is
        return text
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(c for c in text if not (is_control(c) or is_invisible(c)))


def normalise(text: str) -> str:
    """`text` as a comparison reads it: controls and invisibles out, then NFKC."""
    return strip_controls(unicodedata.normalize("NFKC", strip_controls(text)))


# Letters of other scripts that a reader takes for Latin ones, drawn in the usual fonts. A
# fact table (Unicode names and the Latin letter each resembles), kept small on purpose:
# NFKC already folds the full-width, mathematical and most compatibility forms.
CONFUSABLES: dict[str, str] = {
    # Cyrillic
    "а": "a", "в": "b", "г": "r", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j",
    "к": "k", "ӏ": "l", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ѡ": "w", "ү": "y", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "З": "3", "І": "I", "Ї": "I", "Ј": "J", "К": "K",
    "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S",
    "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y", "Ӏ": "I",
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Armenian, Cherokee and Latin extensions
    "օ": "o", "ս": "u", "հ": "h", "ո": "n", "ց": "g", "Ꭺ": "A", "Ꮯ": "C", "Ꭼ": "E", "Ꮋ": "H",
    "Ꮮ": "L", "Ꮇ": "M", "Ꭱ": "R", "Ꮪ": "S", "Ꭲ": "T",
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɩ": "i", "ʟ": "l",
}  # fmt: skip
"""Look-alike letter → the Latin letter it passes for."""


def fold_confusables(text: str) -> str:
    """`text` with every letter of `CONFUSABLES` replaced by the Latin one it resembles."""
    if text.isascii():  # every look-alike is outside ASCII
        return text
    return "".join(CONFUSABLES.get(c, c) for c in text)


def skeleton(text: str) -> str:
    """What `text` looks like to a reader: normalised, confusables folded, case-folded."""
    return fold_confusables(normalise(text)).casefold()


def skeleton_with_positions(text: str) -> tuple[str, list[int]]:
    """The skeleton of an already `normalise`d `text`, and for each of its characters the
    index in `text` it came from (case folding can turn one character into two)."""
    folded: list[str] = []
    positions: list[int] = []
    for index, char in enumerate(text):
        for piece in CONFUSABLES.get(char, char).casefold():
            folded.append(piece)
            positions.append(index)
    return "".join(folded), positions


def lookalike_problems(name: str) -> list[str]:
    """Why `name` is not plainly what it appears to be, in words for a reviewer; empty when
    it is plain (letters of a script used honestly, such as a Chinese name, are plain)."""
    problems = []
    hidden = sorted({c for c in name if is_invisible(c) or unicodedata.category(c) == "Cc"})
    if hidden:
        problems.append("holds invisible or control characters: " + _names(hidden))
    stripped = "".join(c for c in name if c not in hidden)
    changed = sorted({c for c in stripped if unicodedata.normalize("NFKC", c) != c})
    if changed:
        problems.append("holds compatibility forms of other characters: " + _names(changed))
    posing = sorted({c for c in stripped if c in CONFUSABLES})
    if posing:
        problems.append("holds letters that pass for Latin ones: " + _names(posing))
    return problems


def _names(chars: list[str]) -> str:
    return ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in chars)


def escaped(name: str) -> str:
    r"""`name` with every invisible, control, compatibility or look-alike character written as
    `\uXXXX` (or `\UXXXXXXXX`), so it can never be read as another name."""
    out = []
    for char in name:
        if (
            is_invisible(char)
            or unicodedata.category(char) == "Cc"
            or char in CONFUSABLES
            or unicodedata.normalize("NFKC", char) != char
        ):
            code = ord(char)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def without_lone_surrogates(value: Any) -> Any:
    """`value` (text, or JSON-like lists and dicts of it) with every lone surrogate replaced
    by U+FFFD; the same object when it holds none (ASCII text is skipped without a scan)."""
    if isinstance(value, str):
        if value.isascii() or not _LONE_SURROGATE.search(value):
            return value
        return _LONE_SURROGATE.sub(REPLACEMENT, value)
    if isinstance(value, list):
        items = [without_lone_surrogates(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        changed = False
        pairs = {}
        for key, item in value.items():
            clean_key, clean_item = without_lone_surrogates(key), without_lone_surrogates(item)
            changed |= clean_key is not key or clean_item is not item
            pairs[clean_key] = clean_item
        return pairs if changed else value
    return value
