r"""What may reveal a run's identity to a grader or a reviewer, and the blind copy of an output
with it redacted (the stored output is never edited: it keeps its exact bytes).

An output is untrusted text, so it is normalised before anything reads it
(`core.text.normalise`: terminal escapes, control, invisible and bidirectional characters
removed, then NFKC), and the blind copy is that normalised text. Identity terms are then
found on its skeleton (`core.text.skeleton_with_positions`: look-alike letters folded to Latin,
case folded), so "Cl\u200baude", "Cl\x1b[0maude", "Сlaude" (Cyrillic С) and "ＣＬＡＵＤＥ" are
all redacted. When the output held bidirectional controls, a term written backwards (which an
override would have displayed forwards) is redacted too.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench_pipeline.core.text import has_bidi_controls, normalise, skeleton, skeleton_with_positions

REDACTED = "[redacted]"
MIN_REDACT_CHARS = 3
"""Terms shorter than this are not redacted, so ordinary words are not blanked out."""


def identity_terms(api_id: str, company: str, *names: str) -> list[str]:
    """The API id, its model part (`openai/gpt-5.4` → `gpt-5.4`), the company and any other
    names (model record, harness, setup label)."""
    terms = [api_id, api_id.rsplit("/", 1)[-1], company, *names]
    return [term for term in terms if term]


def _spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Where in `text` (normalised) each term's skeleton occurs, merged, in order."""
    folded, positions = skeleton_with_positions(text)
    found: list[tuple[int, int]] = []
    for term in terms:
        start = folded.find(term)
        while start != -1:
            end = start + len(term)
            found.append((positions[start], positions[end - 1] + 1))
            start = folded.find(term, end)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact(output: str, identity: Iterable[str]) -> str:
    """The blind copy of `output`: normalised (see the module docstring), with every
    identity term (model id, model or setup name, company, harness) replaced by
    `[redacted]`, whatever its case, look-alike letters or hidden characters.

    For the caller that knows the candidate: an answer can name its own maker ("as a model
    made by ..."), and the prompt builders, which never see the identity, cannot catch that.
    """
    terms = {skeleton(t).strip() for t in identity}
    terms = {t for t in terms if len(t) >= MIN_REDACT_CHARS}
    if has_bidi_controls(output):
        terms |= {t[::-1] for t in terms}
    text = normalise(output)
    pieces, last = [], 0
    for start, end in _spans(text, sorted(terms, key=len, reverse=True)):
        pieces += [text[last:start], REDACTED]
        last = end
    return "".join([*pieces, text[last:]])


def blind_copy(output: str, api_id: str, company: str, *names: str) -> str:
    """`output` with every identity term replaced by `[redacted]` (see `redact`)."""
    return redact(output, identity_terms(api_id, company, *names))
