"""Simulated answers to prototype tasks: self-contained HTML pages, better from better setups.

So that the offline demo's browser grading (Chromium and the vision step) has real pages to
open, a simulated answer to a prompt that asks for an HTML prototype is a page, not prose.
What the page holds follows the answer's latent quality (`providers.simulated`), drawn from
the request's seeded random stream, so the same request always gets the same page:

- below `PAGE_FLOOR` the answer describes the prototype in prose and holds no HTML document
  (the browser check fails it, as it would a model that never built the file);
- otherwise each requirement (clause) of the brief is built as a section with a control
  (with probability `quality`), the context is shown as a list, and a small inline script
  makes the controls answer clicks; nothing is loaded from the network;
- below `TASTE_FLOOR` the page has the generic look the browser measures count (gradients,
  a grid of identical cards, em dashes, several fonts); above it, one accent colour and
  the system font, as the prototype briefs ask.

The page is plain HTML after the `[simulated] quality q.` line every simulated answer starts
with, and that line shows on the page, so a screenshot is labelled simulated too.
"""

from __future__ import annotations

import html
import random
import re

PAGE_FLOOR = 0.3
"""Answers of lower quality hold no HTML document."""
TASTE_FLOOR = 0.55
"""Answers of lower quality have the generic look (gradients, card grids, em dashes)."""
MIN_CLAUSE_WORDS = 3
"""Shorter clauses ("Step 1:") are labels, not requirements."""
_CLAUSE = re.compile(r"(?<=[.!?:;])\s+|,\s+(?:and\s+)?(?=an?\s)")
"""Where a brief's requirements divide: sentence ends, colons, semicolons, ", a"/", and a"."""
_HTML_WORD = re.compile(r"\bHTML\b")


def wants_prototype(prompt: str) -> bool:
    """Whether `prompt` asks for a prototype as an HTML file (both words appear)."""
    return bool(_HTML_WORD.search(prompt)) and "prototype" in prompt.lower()


def _style(polished: bool) -> str:
    if polished:
        return (
            "body{font-family:system-ui,sans-serif;color:#222;background:#fff;margin:2rem}"
            "button{background:#0b62d6;color:#fff;border:0;padding:.4rem .8rem}"
            "section{margin:1rem 0}"
        )
    return (
        "body{font-family:Georgia,serif;color:#333;margin:2rem;"
        "background:linear-gradient(135deg,#f6d365,#fda085)}"
        "h1{font-family:Impact,fantasy;color:#7b2ff7}"
        ".cards{display:grid;grid-template-columns:repeat(3,1fr);gap:1rem}"
        ".card{background:radial-gradient(#fff,#e0c3fc);padding:1rem;height:6rem}"
        "button{font-family:Courier,monospace;background:#ff5e62;color:#fff}"
    )


def _cards() -> str:
    card = "<div class='card'><h3>Feature</h3><p>Seamless \u2014 delightful \u2014 fast.</p></div>"
    return f"<div class='cards'>{card * 3}</div>"


def simulated_page(prompt: str, quality: float, rng: random.Random) -> str:
    """The body of a simulated answer to a prototype prompt (after its first line).

    Args:
        prompt: The task's prompt (brief, a blank line, context).
        quality: The answer's latent quality in [0, 1], as its first line shows it.
        rng: The request's seeded random stream (so the page is deterministic).
    """
    brief, _, context = prompt.strip().partition("\n\n")
    clauses = _CLAUSE.split(" ".join(brief.split()))
    sentences = [s.strip() for s in clauses if len(s.split()) >= MIN_CLAUSE_WORDS]
    if quality < PAGE_FLOOR:
        return (
            "Here is how the prototype would work: "
            + "; ".join(s.rstrip(".;:") for s in sentences[1:3])
            + ". I describe it rather than build the file."
        )
    title = html.escape((sentences[0] if sentences else "Prototype")[:80])
    sections = []
    for number, sentence in enumerate(sentences[1:], start=1):
        if rng.random() < quality:
            sections.append(
                f"<section><p>{html.escape(sentence)}</p>"
                f"<button type='button' data-step='{number}'>Step {number}</button></section>"
            )
    facts = "".join(
        f"<li>{html.escape(line.strip())}</li>" for line in context.splitlines() if line.strip()
    )
    polished = quality >= TASTE_FLOOR
    script = (
        "document.querySelectorAll('button').forEach(b=>b.addEventListener('click',()=>{"
        "document.getElementById('status').textContent='Done: step '+b.dataset.step;}));"
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>{_style(polished)}</style></head><body>"
        f"<h1>{title}</h1>{'' if polished else _cards()}{''.join(sections)}"
        f"<ul>{facts}</ul><p id='status' role='status'></p>"
        f"<script>{script}</script></body></html>"
    )
