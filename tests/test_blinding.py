"""Blinding holds against hidden characters: every known way to slip a model's name past
`redact` (zero-width characters, terminal escapes, look-alike letters, bidirectional
overrides, compatibility forms) is redacted, and the blind copy displays nothing hidden."""

from __future__ import annotations

import unicodedata

import pytest

from bench_pipeline.core.text import (
    escaped,
    lookalike_problems,
    normalise,
    skeleton,
    strip_controls,
)
from bench_pipeline.grading.blinding import REDACTED, blind_copy, redact

IDENTITY = ("anthropic/claude-opus-4.6", "Anthropic", "Claude Opus 4.6", "Claude")


def _blind(output: str) -> str:
    return blind_copy(output, *IDENTITY)


@pytest.mark.parametrize(
    ("bypass", "output"),
    [
        ("zero-width space", "I am Cl\u200baude, made by Anthr\u200copic."),
        ("zero-width joiner and soft hyphen", "I am Cla\u200dude by Anthro\u00adpic."),
        ("ANSI escape", "I am Cl\x1b[0maude by Anthro\x1b[31;1mpic."),
        ("OSC escape", "I am Cl\x1b]0;x\x07aude by Anthropic."),
        ("Cyrillic look-alike", "I am \u0421laude by \u0410nthr\u043epic."),
        ("Greek look-alike", "I am Cl\u03b1ude by \u0391nthropic."),
        ("full-width letters", "I am \uff23\uff4c\uff41\uff55\uff44\uff45 by ANTHROPIC."),
        ("bidi override", "I am \u202eedualC\u202c by \u202eciporhtnA\u202c."),
        ("bidi isolate", "I am \u2067Claude\u2069 by Anthropic."),
        ("variation selector", "I am Cl\ufe0faude by Anthropic."),
    ],
)
def test_each_bypass_is_redacted(bypass: str, output: str) -> None:
    blind = _blind(output)
    assert blind.count(REDACTED) == 2, (bypass, blind)
    assert "claude" not in skeleton(blind) and "anthropic" not in skeleton(blind)
    assert "edualc" not in skeleton(blind) and "ciporhtna" not in skeleton(blind)
    # Nothing hidden is left to display differently from what a judge reads.
    assert all(unicodedata.category(c) not in {"Cc", "Cf"} for c in blind), repr(blind)
    assert blind == normalise(blind)


def test_the_stored_output_keeps_its_exact_bytes() -> None:
    output = "Cl\u200baude \x1b[2J says: \u0421laude"
    stored = output.encode()
    _blind(output)
    assert output.encode() == stored  # a copy is blinded, never the output itself


def test_ordinary_text_is_left_as_written() -> None:
    text = "Café au lait, naïve coöperation: 3 × 4 = 12.\n\tIndented — and “quoted”."
    assert _blind(text) == text
    assert redact("Ask the model what it thinks.", ["gpt"]) == "Ask the model what it thinks."
    assert redact("the AI said hi", ["AI"]) == "the AI said hi"  # too short to redact


def test_terminal_text_loses_every_control_sequence() -> None:
    hostile = "ok\x1b[2J\x1b[H\x1b]0;pwned\x07\x1bP+q\x1b\\\x9b31mred\x07\x08\r overwrite\x00"
    shown = strip_controls(hostile)
    assert shown == "okred\n overwrite"
    assert not any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in shown)


def test_lookalike_names_are_explained_and_escaped() -> None:
    assert lookalike_problems("anthropic/claude-opus-4.6") == []
    assert lookalike_problems("通义千问") == []  # another script, used honestly
    assert lookalike_problems("anthropic/\u0441laude-opus-4.6") == [
        "holds letters that pass for Latin ones: U+0441 CYRILLIC SMALL LETTER ES"
    ]
    assert lookalike_problems("claude\u200b-opus") == [
        "holds invisible or control characters: U+200B ZERO WIDTH SPACE"
    ]
    assert escaped("anthropic/\u0441laude\u200b") == "anthropic/\\u0441laude\\u200b"
    assert skeleton("anthropic/\u0441laude\u200b") == "anthropic/claude"
