r"""What may reveal a run's identity to a grader or a reviewer, and the blind copy of an output
with it redacted (the stored output is never edited: it keeps its exact bytes).

An output is untrusted text, so it is normalised before anything reads it
(`core.text.normalise`: terminal escapes, control, invisible and bidirectional characters
removed, then NFKC), and the blind copy is that normalised text. Names are then found on its
skeleton (`core.text.skeleton_with_positions`: look-alike letters folded to Latin, case
folded) with every separator left out (spaces of any kind, every Unicode dash and hyphen, the
minus sign, underscores: `is_separator`), so "Cl\u200baude", "Сlaude" (Cyrillic С),
"ＣＬＡＵＤＥ", "GPT 5.4", "gpt\u20115.4" (non-breaking hyphen) and "GPT5.4" all meet the
name `gpt-5.4`. When the output held bidirectional controls, a name written backwards (which
an override would have displayed forwards) is redacted too.

Which names: every name a run could be recognised by, not only the candidate's own
(`BlindNames`, built from the warehouse by `grading.blind_names`): every setup's model id,
company, record and label, the registry's model names and ids (`registry_names` keeps those
a reader could not mistake for an ordinary word), and the reviewed lab and product names of
`sources/aliases.toml` (those of `[labs]` written as names, and `[blind_names]`: ChatGPT,
Claude, Gemini, Copilot, ...).
A name is matched anywhere when it has five characters or more; a shorter one ("GPT", "Qwen")
only as a word of its own, so "philosophy" keeps its letters. A version written after a name
goes with it: "Claude Opus 4.6", "GPT 5.4 mini" and "Gemini 3.1 Pro" are redacted whole
(`_VERSION`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bench_pipeline.core.text import has_bidi_controls, normalise, skeleton, skeleton_with_positions

REDACTED = "[redacted]"
MIN_REDACT_CHARS = 3
"""Names shorter than this (separators left out) are not redacted, so "o3" or "AI" never
blank out ordinary text."""
WORD_ONLY_BELOW = 5
"""Names shorter than this match only as a word of their own (no letter or digit before, no
letter after; a digit after is a version, which goes with the name)."""

DASHES = frozenset(
    "-\u058a\u05be\u1400\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2e17\u2e1a\u2e3a\u2e3b"
    "\u2e40\u2e5d\u301c\u3030\u30a0\ufe31\ufe32\ufe58\ufe63\uff0d\U00010ead"  # Unicode 14 Pd
    "\u2212\u2043\u02d7"  # minus sign, hyphen bullet, modifier minus
)
"""Every dash and hyphen (the non-breaking hyphen U+2011 too) and the minus signs."""
SEPARATORS = DASHES | frozenset("_")
"""With every kind of space (`str.isspace`: NBSP too), what a name is matched without."""

_TIERS = (
    "opus", "sonnet", "haiku", "pro", "flash", "mini", "nano", "turbo", "ultra", "lite",
    "preview", "instant", "thinking", "instruct",
)  # fmt: skip
_SEP = r"[\s" + re.escape("".join(sorted(SEPARATORS))) + "]?"
_VERSION = re.compile(
    rf"(?:{_SEP}(?:v?\d+(?:[.,]\d+)*[a-z]*|(?:{'|'.join(_TIERS)})(?![a-z])))+",
    re.IGNORECASE,
)
"""What goes with a name after it: versions ("5.4", "4o", "70b", "v3") and tier words
("Opus", "Pro", "mini"), each after at most one separator (so "GPT 5.4 — 3 reasons" keeps
its "— 3")."""


def is_separator(char: str) -> bool:
    """A space of any kind (NBSP too), a dash or hyphen of any kind, a minus or an underscore:
    left out when names are matched."""
    return char.isspace() or char in SEPARATORS


def fold(name: str) -> str:
    """A name as it is matched: its skeleton without separators."""
    return "".join(c for c in skeleton(name) if not is_separator(c))


def identity_terms(api_id: str, company: str, *names: str) -> list[str]:
    """The API id, its model part (`openai/gpt-5.4` → `gpt-5.4`), the company and any other
    names (model record, harness, setup label)."""
    terms = [api_id, api_id.rsplit("/", 1)[-1], company, *names]
    return [term for term in terms if term]


_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")


def registry_names(name: str | None, model_id: str | None = None) -> list[str]:
    """The names a registry model lends the blind list: its display name without a lab
    prefix ("OpenAI: GPT-4o") or a trailing parenthetical ("(free)"), and the model part of
    its id (`openai/gpt-4o`, `epoch:gpt-4o` → `gpt-4o`). A name that is one plain word with
    no digit ("Sonar", "Fusion", "auto") is left out: it is an ordinary word as often as a
    model's name, and a family that needs blinding by itself is in the reviewed list."""
    found = []
    if name:
        found.append(_PARENTHETICAL.sub("", name.split(": ", 1)[-1]).strip())
    if model_id:
        found.append(re.split(r"[/:]", model_id)[-1])
    return [
        n
        for n in found
        if any(c.isalpha() for c in n) and (any(c.isdigit() for c in n) or len(n.split()) > 1)
    ]


@dataclass(frozen=True)
class BlindNames:
    """The folded names to redact, indexed by their first three characters."""

    names: frozenset[str]

    @classmethod
    def of(cls, names: Iterable[str]) -> BlindNames:
        return cls(frozenset(f for f in map(fold, names) if len(f) >= MIN_REDACT_CHARS))

    def with_names(self, names: Iterable[str]) -> BlindNames:
        return BlindNames(self.names | BlindNames.of(names).names)

    def redact(self, output: str) -> str:
        """The blind copy of `output` (see the module docstring)."""
        names = set(self.names)
        if has_bidi_controls(output):
            names |= {n[::-1] for n in names}
        text = normalise(output)
        pieces, last = [], 0
        for start, end in _spans(text, names):
            pieces += [text[last:start], REDACTED]
            last = end
        return "".join([*pieces, text[last:]])


def _folded(text: str) -> tuple[str, list[int]]:
    """The skeleton of normalised `text` without separators, with each character's index."""
    folded, positions = skeleton_with_positions(text)
    kept = [(c, p) for c, p in zip(folded, positions, strict=True) if not is_separator(c)]
    return "".join(c for c, _ in kept), [p for _, p in kept]


def _is_word(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not before.isalnum() and not after.isalpha()


def _spans(text: str, names: set[str]) -> list[tuple[int, int]]:
    """Where in `text` (normalised) each name occurs, with the version after it, merged."""
    folded, positions = _folded(text)
    grams = {folded[i : i + MIN_REDACT_CHARS] for i in range(len(folded) - MIN_REDACT_CHARS + 1)}
    found: list[tuple[int, int]] = []
    for name in names:
        if name[:MIN_REDACT_CHARS] not in grams:
            continue
        at = folded.find(name)
        while at != -1:
            start, end = positions[at], positions[at + len(name) - 1] + 1
            if len(name) >= WORD_ONLY_BELOW or _is_word(text, start, end):
                version = _VERSION.match(text, end)
                found.append((start, version.end() if version else end))
            at = folded.find(name, at + 1)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact(output: str, identity: Iterable[str], names: BlindNames | None = None) -> str:
    """The blind copy of `output`: normalised (see the module docstring), with every name of
    `names` and every identity term (model id, model or setup name, company, harness)
    replaced by `[redacted]`, whatever its case, separators, look-alike letters or hidden
    characters.

    For the caller that knows the candidate: an answer can name its own maker ("as a model
    made by ..."), and the prompt builders, which never see the identity, cannot catch that.
    """
    return (names or BlindNames(frozenset())).with_names(identity).redact(output)


def blind_copy(
    output: str, api_id: str, company: str, *names: str, known: BlindNames | None = None
) -> str:
    """`output` with every identity term and every name `known` replaced by `[redacted]`
    (see `redact`)."""
    return redact(output, identity_terms(api_id, company, *names), known)
