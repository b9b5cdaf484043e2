r"""Scrubbing a secret (the API key) out of everything kept from a provider's answers.

A server, a debugging proxy or a model may echo the key back in any encoding: as is, in an
`Authorization` header dumped base64 (standard or URL-safe, at any byte alignment, wrapped
into MIME or PEM lines), as hex (either case, with or without `\x`/`0x`/`%` per byte), as
percent-encoding (either case), as JSON `\u` escapes, or broken across lines. `secret_pattern`
is one regular expression finding every one of those (mixed too: part escaped, part plain),
and `scrub` replaces each match with `[redacted]` in a copy of JSON-like data, dropping
header-like secret keys whatever they hold.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
SECRET_KEYS = frozenset({"authorization", "proxy-authorization", "api_key", "api-key", "x-api-key"})
"""Keys dropped from anything kept, whatever they hold."""
MIN_ENCODED = 8
"""Shorter base64 runs than this are not redacted (they would match innocent text)."""

_BREAK = r"(?:\s|\\[rnt])*"
"""What may sit between two characters of an echoed secret: white space and line breaks,
written or JSON-escaped (a wrapped base64 block, a key split across lines)."""


def _hex_digit(digit: str) -> str:
    return f"[{digit.lower()}{digit.upper()}]" if digit.isalpha() else digit


def _hex_byte(byte: int) -> str:
    """One byte as two hex digits, either case."""
    return "".join(_hex_digit(d) for d in f"{byte:02x}")


def _char(char: str) -> str:
    r"""One character of a secret as it may be written: itself, backslash-escaped (JSON's
    `\/`), percent-encoded, or a JSON `\u` escape (hex either case)."""
    options = [re.escape(char)]
    if not char.isalnum():
        options.append(re.escape("\\" + char))
    encoded = char.encode()
    options.append("".join("%" + _hex_byte(b) for b in encoded))
    if len(encoded) == 1:
        options.append(r"\\[uU]00" + _hex_byte(ord(char)))
    return "(?:" + "|".join(options) + ")"


def _written(text: str) -> str:
    """`text` as `_char`s, with `_BREAK` allowed between any two."""
    return _BREAK.join(_char(c) for c in text)


def _hex(raw: bytes) -> str:
    r"""`raw` as hex, either case, each byte optionally prefixed (`\x`, `0x`, `%`) and
    separated (`:`, white space, line breaks)."""
    byte = r"(?:\\x|0x|%)?{}"
    return rf"[:]?{_BREAK}".join(byte.format(_hex_byte(b)) for b in raw)


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters every base64 text holding `raw` contains, at each of the three
    byte alignments `raw` can start at, standard and URL-safe alphabets."""
    cores = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        # Whole 4-character groups made of the secret's bytes only: the same in any text.
        core = encoded[4 if shift else 0 : 4 * ((shift + len(raw)) // 3)]
        if len(core) >= MIN_ENCODED:
            cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


@functools.lru_cache(maxsize=16)
def secret_pattern(secret: str) -> re.Pattern[str]:
    """One expression matching `secret` in every form of the module docstring."""
    raw = secret.encode()
    forms = [_written(secret), _hex(raw), *(_written(c) for c in sorted(_base64_cores(raw)))]
    return re.compile("|".join(f"(?:{form})" for form in forms))


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of `value` with every secret replaced (in any form: `secret_pattern`) and
    header-like secret keys dropped.

    Args:
        value: JSON-like data (dicts, lists, strings, numbers).
        secrets: Strings that must not survive (empty strings are ignored).
    """
    return _scrubbed(value, [secret_pattern(s) for s in secrets if s])


_PLAIN = frozenset({int, float, bool, type(None)})
"""Types kept as they are, checked first: most of a response body."""


def _scrubbed(value: Any, patterns: list[re.Pattern[str]]) -> Any:
    # Called for every value of every answer kept: the patterns are looked up once, by
    # `scrub`, and exact types are tested before the slower isinstance checks.
    if type(value) in _PLAIN:
        return value
    if isinstance(value, str):
        for pattern in patterns:
            value = pattern.sub(REDACTED, value)
        return value
    if isinstance(value, Mapping):
        return {
            _scrubbed(k, patterns): _scrubbed(v, patterns)
            for k, v in value.items()
            if not (isinstance(k, str) and k.lower() in SECRET_KEYS)
        }
    if isinstance(value, list | tuple):
        return [_scrubbed(item, patterns) for item in value]
    return value


def holds_secret_key(value: Any) -> bool:
    """Whether JSON-like `value` holds, at any depth, a key `scrub` would drop: when it holds
    none and there is no secret to hide, `scrub` would return an equal copy, which a caller
    owning `value` can skip."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and key.lower() in SECRET_KEYS:
                return True
            if type(item) not in _LEAVES and holds_secret_key(item):
                return True
    elif isinstance(value, list | tuple):
        for item in value:
            if type(item) not in _LEAVES and holds_secret_key(item):
                return True
    return False


_LEAVES = _PLAIN | {str}
