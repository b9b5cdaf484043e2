"""Blinding holds against hidden characters: every known way to slip a model's name past
`redact` (zero-width characters, terminal escapes, look-alike letters, bidirectional
overrides, compatibility forms) is redacted, and the blind copy displays nothing hidden; and
it knows the names: every way a model names itself or its maker ("As Claude", "I'm ChatGPT",
"GPT 5.4", a non-breaking hyphen) is redacted, whoever the candidate is."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from bench_pipeline.core.text import (
    escaped,
    lookalike_problems,
    normalise,
    skeleton,
    strip_controls,
)
from bench_pipeline.grading.blind_names import reviewed_names
from bench_pipeline.grading.blinding import (
    DASHES,
    REDACTED,
    BlindNames,
    blind_copy,
    is_separator,
    redact,
    registry_names,
)

pytestmark = pytest.mark.unit

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


# --- names: every way a model names itself or its maker ----------------------------------

ALIASES = Path(__file__).parent.parent / "sources" / "aliases.toml"
SETUP_NAMES = ("openai/gpt-5.4", "gpt-5.4", "anthropic/claude-opus-4.6", "claude-opus-4.6")


@pytest.fixture(scope="module")
def names() -> BlindNames:
    """The reviewed names of the project's alias file and the demo setups' model ids (the
    candidate here is another model: the names are every model's, not only its own)."""
    return BlindNames.of([*reviewed_names(ALIASES), *SETUP_NAMES])


@pytest.mark.parametrize(
    ("output", "blind"),
    [
        ("As Claude, I would ship on Friday.", "As [redacted], I would ship on Friday."),
        ("I'm ChatGPT. Ship on Friday.", "I'm [redacted]. Ship on Friday."),
        ("Written by Claude Opus 4.6 for you.", "Written by [redacted] for you."),
        ("I am GPT 5.4, and I say ship.", "I am [redacted], and I say ship."),
        ("I am gpt\u20115.4, and I say ship.", "I am [redacted], and I say ship."),
        ("I am GPT5.4-mini.", "I am [redacted]."),
        ("I am gpt\u00a05.4.", "I am [redacted]."),
        ("Gemini 3.1 Pro here; Copilot agrees.", "[redacted] here; [redacted] agrees."),
        ("Made by OPENAI and anthropic.", "Made by [redacted] and [redacted]."),
        ("Claude\u00a0Opus\u00a04.6", "[redacted]"),
        ("GPT 5.4 \u2014 3 reasons.", "[redacted] \u2014 3 reasons."),
    ],
)
def test_each_self_naming_form_is_redacted(names: BlindNames, output: str, blind: str) -> None:
    assert names.redact(output) == blind
    assert blind_copy(output, "z-ai/glm-5", "Z.ai", known=names) == blind


@pytest.mark.parametrize("dash", sorted(DASHES | {"\u00a0", " ", "\u2007", "\u202f", "_"}))
def test_every_dash_and_space_between_a_family_and_its_version(
    names: BlindNames, dash: str
) -> None:
    assert names.redact(f"I am gpt{dash}5.4 here.") == "I am [redacted] here.", hex(ord(dash))
    assert names.redact(f"Claude{dash}Opus{dash}4.6 here.") == "[redacted] here.", hex(ord(dash))


def test_the_dash_list_holds_every_unicode_dash() -> None:
    dashes = {chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Pd"}
    assert dashes <= DASHES and {"\u2212", "\u2011"} <= DASHES
    assert all(is_separator(c) for c in "\u00a0\u2007\u202f\u3000\t\n")


def test_short_names_are_words_and_ordinary_words_stay(names: BlindNames) -> None:
    kept = "Philosophy, a grokking metaphor, and GPTs; the writer will cohere the plan."
    assert names.redact(kept) == kept
    assert names.redact("Grok says hi; so does GLM-5 and Qwen3 235B.") == (
        "[redacted] says hi; so does [redacted] and [redacted]."
    )


def test_registry_names_leave_out_ordinary_words() -> None:
    assert registry_names("OpenAI: GPT-4o (2024-11-20)", "openai/gpt-4o") == ["GPT-4o", "gpt-4o"]
    assert registry_names("Claude Opus 4.8 (Fast)", "anthropic:claude-opus-4.8-fast") == [
        "Claude Opus 4.8",
        "claude-opus-4.8-fast",
    ]
    assert registry_names("Sonar", "perplexity/sonar") == []
    assert registry_names("2.5", "lab/2.5") == []  # no letter: a number, not a name
    assert registry_names("Auto Router", "openrouter/auto") == ["Auto Router"]


def test_a_broken_alias_table_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "aliases.toml"
    bad.write_text('[blind_names]\nopenai = "ChatGPT"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"aliases.toml: \[blind_names\] openai must be a list"):
        reviewed_names(bad)
