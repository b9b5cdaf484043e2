"""Key scrubbing finds the key in every encoding a server might echo it in."""

from __future__ import annotations

import base64
import json
import re
import textwrap
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench_pipeline.providers.scrubbing import (
    REDACTED,
    SECRET_KEYS,
    holds_secret_key,
    scrub,
    secret_pattern,
)

pytestmark = pytest.mark.unit

KEY = f"sk-or-v1-{uuid.uuid4().hex}{uuid.uuid4().hex}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _wrapped(text: str, width: int, newline: str = "\n") -> str:
    return newline.join(textwrap.wrap(text, width, break_on_hyphens=False))


ECHOES = {
    "as is": f"key={KEY}",
    "base64": _b64(f"Bearer {KEY}"),
    "base64 at each alignment": " ".join(_b64(p + KEY) for p in ("", "x", "xy")),
    "base64 in MIME lines (76, CRLF)": _wrapped(_b64(f"Authorization: Bearer {KEY}"), 76, "\r\n"),
    "base64 in PEM lines (64)": "-----BEGIN X-----\n"
    + _wrapped(_b64(f"Bearer {KEY}"), 64)
    + "\n-----END X-----",
    "base64 lines JSON-escaped": _wrapped(_b64(f"Bearer {KEY}"), 64, "\\n"),
    "URL-safe base64": base64.urlsafe_b64encode(f"\xff\xfe{KEY}".encode()).decode(),
    "URL-safe base64 wrapped": _wrapped(base64.urlsafe_b64encode(f"?{KEY}".encode()).decode(), 20),
    "hex lower": KEY.encode().hex(),
    "hex upper": KEY.encode().hex().upper(),
    "hex with \\x": "".join(f"\\x{b:02X}" for b in KEY.encode()),
    "hex dump with colons": ":".join(f"{b:02x}" for b in KEY.encode()),
    "hex wrapped": _wrapped(KEY.encode().hex(), 32),
    "percent-encoded every byte": "".join(f"%{b:02x}" for b in KEY.encode()),
    "percent-encoded upper": "".join(f"%{b:02X}" for b in KEY.encode()),
    "percent-encoded (quote)": quote(f"Bearer {KEY}", safe=""),
    "JSON \\u escapes": "".join(f"\\u{ord(c):04x}" for c in KEY),
    "JSON \\u escapes upper": "".join(f"\\u{ord(c):04X}" for c in KEY),
    "JSON \\u escapes, some": "".join(
        f"\\u{ord(c):04x}" if i % 3 else c for i, c in enumerate(KEY)
    ),
    "split across lines": KEY[:20] + "\n" + KEY[20:45] + "\r\n  " + KEY[45:],
    "split with escaped newline": KEY[:30] + "\\n" + KEY[30:],
}


def _decodings(text: str) -> list[str]:
    """`text` read every way the key could be hidden in it (an oracle independent of the
    scrubber): line breaks removed, then JSON-unescaped, percent-decoded, hex-decoded and
    base64-decoded at every offset."""
    flat = re.sub(r"\s|\\[rnt]", "", text)
    readings = [flat, unquote(flat)]
    try:
        readings.append(json.loads(f'"{flat}"'))
    except ValueError:
        pass
    hex_only = re.sub(r"\\x|0x|%|:", "", flat)
    readings += [
        bytes.fromhex(run).decode("latin-1") for run in re.findall(r"(?:[0-9a-fA-F]{2})+", hex_only)
    ]
    for run in re.findall(r"[A-Za-z0-9+/_=-]{8,}", flat):
        run = run.replace("-", "+").replace("_", "/").rstrip("=")
        for start in range(4):
            piece = run[start:]
            piece = piece[: len(piece) - len(piece) % 4]
            try:
                readings.append(base64.b64decode(piece).decode("latin-1"))
            except ValueError:
                pass
    return readings


def _leaks(text: str) -> list[str]:
    """The readings of `text` that still show (a 30-character middle of) the key."""
    return [r for r in _decodings(text) if KEY[10:40] in r]


@pytest.mark.parametrize("encoding", sorted(ECHOES))
def test_the_key_is_scrubbed(encoding: str) -> None:
    echoed = ECHOES[encoding]
    assert _leaks(echoed), "the check itself must see the key in the unscrubbed echo"
    kept = scrub({"error": {"message": f"proxy said: {echoed} (end)"}}, [KEY])
    message = kept["error"]["message"]
    assert REDACTED in message, encoding
    assert _leaks(message) == [], (encoding, message)
    assert message.startswith("proxy said: ") and message.endswith(" (end)")


def test_every_encoding_in_one_body_and_nothing_else_touched() -> None:
    body = json.dumps({"dump": list(ECHOES.values()), "Authorization": KEY, "ok": "fine text"})
    kept = scrub(json.loads(body), [KEY])
    assert "Authorization" not in kept and kept["ok"] == "fine text"
    assert [e for e in kept["dump"] if _leaks(e)] == []
    innocent = "deadbeef " * 10 + "aGVsbG8gd29ybGQ=\n" + "%41%42 \\u0041 sk-or-v1-other"
    assert scrub(innocent, [KEY]) == innocent


def _scrub_one_call_per_value(value: Any, secrets: Iterable[str]) -> Any:
    """The scrubber as it was before its patterns were looked up once per body (the oracle
    for the faster walk): every value a call of its own, the secrets filtered each time."""
    hidden = [s for s in secrets if s]
    if isinstance(value, str):
        for secret in hidden:
            value = secret_pattern(secret).sub(REDACTED, value)
        return value
    if isinstance(value, Mapping):
        return {
            _scrub_one_call_per_value(k, hidden): _scrub_one_call_per_value(v, hidden)
            for k, v in value.items()
            if not (isinstance(k, str) and k.lower() in SECRET_KEYS)
        }
    if isinstance(value, list | tuple):
        return [_scrub_one_call_per_value(item, hidden) for item in value]
    return value


class _Flag(int):
    """An int subclass: kept as is by both walks."""


_TEXTS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [KEY, f"Bearer {KEY}", ECHOES["base64"], ECHOES["hex upper"], "sk-or-v1-other", "ok"]
    ),
    st.sampled_from([*sorted(SECRET_KEYS), "AUTHORIZATION", "Api_Key", "content", "model"]),
)
_ATOMS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.builds(_Flag, st.integers(0, 9)),
    _TEXTS,
)
_BODIES = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(_TEXTS, st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_BODIES, secrets=st.lists(st.sampled_from([KEY, "", "s3cr3t-token-value"])))
def test_the_walk_scrubs_exactly_like_one_call_per_value(body: Any, secrets: list[str]) -> None:
    expected = _scrub_one_call_per_value(body, secrets)
    kept = scrub(body, secrets)
    assert kept == expected
    assert _typed(kept) == _typed(expected)  # the same types all the way down


def _typed(value: Any) -> Any:
    if isinstance(value, dict):
        return [(_typed(k), _typed(v)) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


_JSON_BODIES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXTS, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(body=_JSON_BODIES)
def test_a_body_holds_a_secret_key_exactly_when_scrubbing_would_change_it(body: Any) -> None:
    # Without a secret to hide, the provider skips the scrubbing copy of a body it parsed
    # itself when `holds_secret_key` says nothing would be dropped.
    assert holds_secret_key(body) == (scrub(body, []) != body)
