"""Small text helpers for the site: value formatting, slugs and Markdown pages.

Pages are rendered by markdown-it-py (CommonMark and tables) with the site's two rules on top:
headings carry their slug as `id`, and a link may only point to a relative path, `#anchor`,
http(s) or mailto.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markupsafe import Markup

MISSING = "—"
_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):")
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


def slugify(text: str, limit: int = 80) -> str:
    """Lowercase letters and digits joined by `-`: safe as a file name and in a URL."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "model"


def unique_slugs(ids: list[str], keep_order: bool = False) -> dict[str, str]:
    """A distinct slug per id; a clash gets a short digest of the id appended (to the id
    later in sorted order, or in the given order when `keep_order`)."""
    slugs: dict[str, str] = {}
    taken: set[str] = set()
    for item in ids if keep_order else sorted(ids):
        slug = slugify(item)
        if slug in taken:
            slug = f"{slug}-{hashlib.sha256(item.encode()).hexdigest()[:8]}"
        taken.add(slug)
        slugs[item] = slug
    return slugs


def model_slugs(ids: list[str]) -> dict[str, str]:
    """A distinct page slug per model id, one that no newcomer can take.

    OpenRouter-style ids (`lab/model`) come before the registry's lab- or source-scoped
    ones (`lab:model`), each in id order, so where two ids give one slug the OpenRouter id
    keeps the plain page. The registry holds back ids that differ only by punctuation, so
    two of those never meet here.
    """
    return unique_slugs(sorted(ids, key=lambda i: (":" in i, i)), keep_order=True)


def missing(value: Any) -> bool:
    return value is None or value == ""


def number(value: Any, places: int = 2) -> str:
    """A figure with `places` decimals (thousands separated); an em dash when missing."""
    if missing(value):
        return MISSING
    if type(value) is float:  # most figures: `float(value)` is the value itself
        return f"{value:,.{places}f}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and places == 0:
        return f"{value:,}"
    return f"{float(value):,.{places}f}"


MONEY_PLACES, MONEY_CENTS_FROM, MONEY_SMALL_DIGITS = 2, Decimal("0.1"), 6


def usd(value: Any) -> str:
    """The site's one money formatter: a dollar sign, thousands separated and two decimals
    from ten cents up; a smaller figure (a per-run or per-task cost) keeps its published
    digits, up to six significant, so it never reads as $0.00. `"3.437500"` → `$3.44`,
    `"20"` → `$20.00`, `"0.05"` → `$0.05`, `"0.01392"` → `$0.01392`, `"0.022245325444"` →
    `$0.0222453`. The downloads keep every published digit; an em dash when missing.
    """
    if missing(value):
        return MISSING
    try:
        exact = Decimal(value if type(value) is str else str(value))
    except InvalidOperation:
        return str(value)
    if not exact.is_finite():
        return str(value)
    places = MONEY_PLACES
    if not exact.is_zero() and abs(exact) < MONEY_CENTS_FROM:
        published = -int(exact.normalize().as_tuple().exponent)
        significant = -exact.adjusted() - 1 + MONEY_SMALL_DIGITS
        places = max(MONEY_PLACES, min(published, significant))
    rounded = exact.quantize(_QUANTA.get(places) or Decimal(1).scaleb(-places), ROUND_HALF_EVEN)
    if not rounded.is_signed() and rounded < _PLAIN_BELOW and rounded.adjusted() >= _PLAIN_FROM:
        return f"${rounded}"  # its plain text is its fixed-point form: no separator needed
    sign = "-" if rounded < 0 else ""
    return f"{sign}${abs(rounded):,.{places}f}"


_QUANTA = {places: Decimal(1).scaleb(-places) for places in range(MONEY_PLACES, 16)}
"""The quantum of each usual number of places (`usd`), made once."""
_PLAIN_BELOW, _PLAIN_FROM = Decimal(1000), -6
"""`str` of a non-negative `Decimal` below a thousand, whose adjusted exponent is at least
-6, is exactly its `,.{places}f` form at its own places (no separator, no exponent)."""


def text(value: Any) -> str:
    return MISSING if missing(value) else str(value)


def when(value: Any) -> str:
    """An ISO timestamp as `YYYY-MM-DD HH:MM` (UTC as given); a date stays a date."""
    if missing(value):
        return MISSING
    raw = str(value)
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return raw
    if len(raw) <= 10:
        return raw
    return (parsed.astimezone(UTC) if parsed.tzinfo else parsed).strftime("%Y-%m-%d %H:%M")


def script_json(value: Any) -> Markup:
    """`value` as JSON to sit inside `<script type="application/json">`: `<`, `>` and `&`
    are written as escapes, so no string in the data can close the script element."""
    text = json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def is_simulated(row: dict[str, Any]) -> bool:
    """A row labelled as simulated by its producer (`simulated` true)."""
    return row.get("simulated") in (True, 1, "true", "True")


def _safe_target(target: str) -> bool:
    """A link target a reader may follow: a relative path, `#anchor`, http(s) or mailto."""
    scheme = _SCHEME.match(target)
    return scheme is None or scheme.group(1).lower() in _SAFE_SCHEMES


def _site_rules(state: StateCore) -> None:
    """Give every heading its slug as `id`, and unwrap links to an unsafe target (their
    label stays, as text)."""
    tokens = state.tokens
    for position, token in enumerate(tokens):
        if token.type == "heading_open" and position + 1 < len(tokens):
            token.attrSet("id", slugify(tokens[position + 1].content))
        if token.type != "inline" or not token.children:
            continue
        kept, unwrapping = [], False
        for child in token.children:
            if child.type == "link_open" and not _safe_target(str(child.attrGet("href") or "")):
                unwrapping = True
            elif child.type == "link_close" and unwrapping:
                unwrapping = False
            else:
                kept.append(child)
        token.children = kept


class _SiteMarkdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        """Accept every link while parsing: `_site_rules` judges them, keeping a refused
        link's label rather than its source text."""
        return True


def _renderer() -> MarkdownIt:
    # CommonMark with tables; raw HTML is escaped, images are not part of the site's pages.
    md = _SiteMarkdown("commonmark", {"html": False}).enable("table").disable("image")
    md.core.ruler.push("bench_site", _site_rules)
    return md


_MARKDOWN = _renderer()


def markdown(source: str) -> Markup:
    """Render a page's Markdown (CommonMark and tables) to HTML.

    Raw HTML in the source is escaped, every heading gets its slug as `id`, and a link may
    only point to a relative path, `#anchor`, http(s) or mailto: any other link (for example
    `javascript:`, `vbscript:` or `data:`) is rendered as its label alone.
    """
    return Markup(_MARKDOWN.render(source))


def first_heading(source: str, default: str) -> str:
    match = re.search(r"^#\s+(.+)$", source, re.MULTILINE)
    return match.group(1).strip() if match else default
