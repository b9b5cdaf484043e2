"""Small text helpers for the site: value formatting, slugs and a Markdown subset.

The Markdown subset covers what the project's own pages use: `#` headings, paragraphs,
`-` and `1.` lists, `code`, **strong**, *emphasis* and [links](target). Everything is
escaped first, and a link may only point to a relative path, `#anchor`, http(s) or mailto.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from markupsafe import Markup, escape

from bench_pipeline.core.money import plain

MISSING = "—"
_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*|\*(.+?)\*|\[([^\]]+)\]\(([^)\s]+)\)")
_SAFE_LINK = re.compile(r"^(https?://|mailto:|#|[\w./-])", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^(?:[-*]|\d+\.)\s+")


def slugify(text: str, limit: int = 80) -> str:
    """Lowercase letters and digits joined by `-`: safe as a file name and in a URL."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "model"


def unique_slugs(ids: list[str]) -> dict[str, str]:
    """A distinct slug per id; a clash gets a short digest of the id appended."""
    slugs: dict[str, str] = {}
    taken: set[str] = set()
    for item in sorted(ids):
        slug = slugify(item)
        if slug in taken:
            slug = f"{slug}-{hashlib.sha256(item.encode()).hexdigest()[:8]}"
        taken.add(slug)
        slugs[item] = slug
    return slugs


def missing(value: Any) -> bool:
    return value is None or value == ""


def number(value: Any, places: int = 2) -> str:
    """A figure with `places` decimals (thousands separated); an em dash when missing."""
    if missing(value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and places == 0:
        return f"{value:,}"
    return f"{float(value):,.{places}f}"


def usd(value: Any) -> str:
    """An exact decimal price as published (a string), with a dollar sign."""
    if missing(value):
        return MISSING
    try:
        exact = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    return f"${plain(exact)}"


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


def _inline(source: str) -> str:
    out, position = [], 0
    for match in _INLINE.finditer(source):
        out.append(str(escape(source[position : match.start()])))
        code, strong, emphasis, label, target = match.groups()
        if code is not None:
            out.append(f"<code>{escape(code)}</code>")
        elif strong is not None:
            out.append(f"<strong>{_inline(strong)}</strong>")
        elif emphasis is not None:
            out.append(f"<em>{_inline(emphasis)}</em>")
        elif _SAFE_LINK.match(target) and not target.lower().startswith("javascript"):
            out.append(f'<a href="{escape(target)}">{_inline(label)}</a>')
        else:
            out.append(_inline(label))
        position = match.end()
    out.append(str(escape(source[position:])))
    return "".join(out)


def markdown(source: str) -> Markup:
    """Render the Markdown subset described above to HTML."""
    html: list[str] = []
    source = re.sub(r"^(#{1,4}\s.*)$", "\n\\1\n", source, flags=re.MULTILINE)
    for block in re.split(r"\n\s*\n", source.strip()):
        lines = [line.rstrip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        heading = re.match(r"^(#{1,4})\s+(.*)$", lines[0])
        if heading:
            level, title = len(heading.group(1)), heading.group(2)
            html.append(f'<h{level} id="{slugify(title)}">{_inline(title)}</h{level}>')
        elif _LIST_ITEM.match(lines[0]):
            items: list[str] = []
            for line in lines:
                if _LIST_ITEM.match(line):
                    items.append(_LIST_ITEM.sub("", line))
                else:
                    items[-1] += " " + line.strip()
            tag = "ol" if lines[0][0].isdigit() else "ul"
            body = "".join(f"<li>{_inline(item)}</li>" for item in items)
            html.append(f"<{tag}>{body}</{tag}>")
        else:
            html.append(f"<p>{_inline(' '.join(line.strip() for line in lines))}</p>")
    return Markup("\n".join(html))


def first_heading(source: str, default: str) -> str:
    match = re.search(r"^#\s+(.+)$", source, re.MULTILINE)
    return match.group(1).strip() if match else default
