"""Inline SVG charts (no JavaScript): a model's canonical price over time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from markupsafe import Markup, escape

from bench_pipeline.site.markup import usd, when

WIDTH, HEIGHT = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 36
SERIES = (("input_usd_per_1m", "input", "Input"), ("output_usd_per_1m", "output", "Output"))


def _time(value: str) -> float:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _price(value: Any) -> float | None:
    return None if value is None or value == "" else float(value)


def price_history_svg(points: Sequence[dict[str, Any]], label: str) -> Markup:
    """Step lines of the input and output price (USD per 1M tokens) per observation.

    `points` are price_history rows of one model (the canonical rate, host null), in any
    order. Returns an empty string when no observation has a price.
    """
    rows = sorted(
        (p for p in points if p.get("observed_at")), key=lambda p: _time(p["observed_at"])
    )
    prices = [v for p in rows for key, *_ in SERIES if (v := _price(p.get(key))) is not None]
    if not prices:
        return Markup("")
    start, end = _time(rows[0]["observed_at"]), _time(rows[-1]["observed_at"])
    top = max(prices) * 1.1 or 1.0
    span_x, span_y = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(row: dict[str, Any]) -> float:
        return LEFT + (span_x * (_time(row["observed_at"]) - start) / (end - start) if end > start
                       else span_x / 2)  # fmt: skip

    def y(value: float) -> float:
        return TOP + span_y * (1 - value / top)

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{TOP + span_y}" x2="{WIDTH - RIGHT}" '
        f'y2="{TOP + span_y}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + span_y}"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{escape(usd(f"{top:.4g}"))}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + span_y + 4}" text-anchor="end">$0</text>',
        f'<text x="{LEFT}" y="{HEIGHT - 8}">{escape(when(rows[0]["observed_at"]))}</text>',
    ]
    if end > start:
        last = escape(when(rows[-1]["observed_at"]))
        parts.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{last}</text>')
    for key, css, title in SERIES:
        series = [(x(r), y(v), r) for r in rows if (v := _price(r.get(key))) is not None]
        steps: list[str] = []
        for index, (px, py, _) in enumerate(series):
            if index:
                steps.append(f"{px:.1f},{series[index - 1][1]:.1f}")
            steps.append(f"{px:.1f},{py:.1f}")
        if len(series) > 1:
            parts.append(f'<polyline class="{css}" points="{" ".join(steps)}"/>')
        for px, py, row in series:
            tip = f"{title} {usd(row.get(key))} per 1M tokens, {when(row['observed_at'])}"
            parts.append(
                f'<circle class="{css}" cx="{px:.1f}" cy="{py:.1f}" r="3">'
                f"<title>{escape(tip)}</title></circle>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))
