"""Inline SVG charts (no JavaScript): a model's canonical price over time, and the boards'
generic charts (bars with a coverage note, scores with interval whiskers and rank ranges, a
log-price scatter) that any page can draw from its rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from markupsafe import Markup, escape

from bench_pipeline.site.environment import remembered
from bench_pipeline.site.markup import usd, when

WIDTH, HEIGHT = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 36
SERIES = (("input_usd_per_1m", "input", "Input"), ("output_usd_per_1m", "output", "Output"))
_usd, _when = remembered(usd), remembered(when)
"""The formatters, remembering their results: the same prices and dates recur across models."""


def _time(value: str) -> float:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _price(value: Any) -> float | None:
    return None if value is None or value == "" else float(value)


def price_history_svg(points: Sequence[dict[str, Any]], label: str) -> Markup:
    """Step lines of the input and output price (USD per 1M tokens) per observation.

    `points` are price_history rows of one model (the canonical rate, host null), in any
    order. Returns an empty string when no observation has a price.
    """
    dated = sorted(
        ((p, _time(p["observed_at"])) for p in points if p.get("observed_at")),
        key=lambda pair: pair[1],
    )  # each timestamp parsed once
    rows = [p for p, _ in dated]
    prices = [v for p in rows for key, *_ in SERIES if (v := _price(p.get(key))) is not None]
    if not prices:
        return Markup("")
    start, end = dated[0][1], dated[-1][1]
    top = max(prices) * 1.1 or 1.0
    span_x, span_y = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(at: float) -> float:
        return LEFT + (span_x * (at - start) / (end - start) if end > start else span_x / 2)

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
        f'<text x="{LEFT}" y="{HEIGHT - 8}">{escape(_when(rows[0]["observed_at"]))}</text>',
    ]
    if end > start:
        last = escape(_when(rows[-1]["observed_at"]))
        parts.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{last}</text>')
    for key, css, title in SERIES:
        series = [(x(at), y(v), r) for r, at in dated if (v := _price(r.get(key))) is not None]
        steps: list[str] = []
        for index, (px, py, _) in enumerate(series):
            if index:
                steps.append(f"{px:.1f},{series[index - 1][1]:.1f}")
            steps.append(f"{px:.1f},{py:.1f}")
        if len(series) > 1:
            parts.append(f'<polyline class="{css}" points="{" ".join(steps)}"/>')
        for px, py, row in series:
            tip = f"{title} {_usd(row.get(key))} per 1M tokens, {_when(row['observed_at'])}"
            parts.append(
                f'<circle class="{css}" cx="{px:.1f}" cy="{py:.1f}" r="3">'
                f"<title>{escape(tip)}</title></circle>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))


# ----------------------------------------------------------------- board charts
# Every mark below carries the figures it draws as data attributes (`data-value`,
# `data-low`, ...), written with Python's round-trip float spelling, so a test (or a reader's
# tool) can compare a chart with the published table without measuring pixels.

BAR_ROW, BAR_LABEL, BAR_PANEL, BAR_NOTE = 20, 170, 220, 100
WHISKER_ROW, WHISKER_LABEL, WHISKER_PANEL, RANK_PANEL, PANEL_GAP, PAD = 20, 270, 300, 200, 28, 26


@dataclass(frozen=True)
class Bar:
    """One bar: a label, its value and a note drawn after the value (e.g. "3 of 6")."""

    label: str
    value: float
    note: str = ""


@dataclass(frozen=True)
class Interval:
    """One board entry: its score, its interval and its rank range (each optional)."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    rank_best: int | None = None
    rank_worst: int | None = None


@dataclass(frozen=True)
class Point:
    """One scatter point; a `hollow` one is drawn as a ring (an item board's dominated
    entry: another is better and cheaper)."""

    label: str
    x: float
    y: float
    hollow: bool = False


def figure(value: Any) -> float | None:
    """A published number as a float (None when missing or not a number)."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _attr(value: float | int | None) -> str:
    return "" if value is None else repr(value)


def _open(css: str, width: float, height: float, label: str, role: str = "img") -> list[str]:
    return [
        f'<svg class="chart {css}" viewBox="0 0 {width:.0f} {height:.0f}" role="{role}" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" '
        f'style="max-width: {width:.0f}px">',
        f"<title>{escape(label)}</title>",
    ]


def _scale(values: Sequence[float], floor: float | None = None) -> tuple[float, float]:
    """A rounded axis range covering `values` (from `floor` when given)."""
    low = min(values) if floor is None else floor
    high = max(values)
    if high <= low:
        high = low + 1
    step = 10 ** math.floor(math.log10(high - low))
    return math.floor(low / step) * step, math.ceil(high / step) * step


def bars_svg(bars: Sequence[Bar], label: str, top: float = 100.0) -> Markup:
    """Horizontal bars from 0 to `top`, one row per bar, each with its value and note."""
    if not bars:
        return Markup("")
    height = PAD + len(bars) * BAR_ROW + 8
    width = BAR_LABEL + BAR_PANEL + BAR_NOTE
    parts = _open("bars", width, height, label)
    for tick in (0, top / 2, top):
        x = BAR_LABEL + BAR_PANEL * tick / top
        parts.append(
            f'<line class="grid" x1="{x:.1f}" y1="{PAD - 6}" x2="{x:.1f}" y2="{height - 6}"/>'
            f'<text x="{x:.1f}" y="{PAD - 10}" text-anchor="middle">{tick:g}</text>'
        )
    for index, bar in enumerate(bars):
        y = PAD + index * BAR_ROW
        length = BAR_PANEL * max(0.0, min(bar.value, top)) / top
        tip = f"{bar.label}: {bar.value:.2f}" + (f", {bar.note}" if bar.note else "")
        parts.append(
            f'<g class="bar" data-label="{escape(bar.label)}" data-value="{_attr(bar.value)}" '
            f'data-note="{escape(bar.note)}"><title>{escape(tip)}</title>'
            f'<text class="label" x="{BAR_LABEL - 6}" y="{y + 14}" text-anchor="end">'
            f"{escape(shorten(bar.label, 26))}</text>"
            f'<rect x="{BAR_LABEL}" y="{y + 3}" width="{length:.1f}" height="{BAR_ROW - 6}"/>'
            f'<text class="value" x="{BAR_LABEL + length + 4:.1f}" y="{y + 14}">'
            f'{bar.value:.1f}<tspan class="note"> · {escape(bar.note)}</tspan></text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def shorten(text: str, limit: int = 28) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def intervals_chart(
    points: Sequence[Interval], label: str, scale: tuple[float, float] | None = None
) -> Markup:
    """Each entry's score as a dot with its interval as a whisker, and (when any entry has
    one) its rank range as a bar on a second panel; one row per entry, in the given order."""
    if not points:
        return Markup("")
    values = [v for p in points for v in (p.value, p.low, p.high) if v is not None]
    low, high = scale or _scale(values)
    ranks = [r for p in points for r in (p.rank_best, p.rank_worst) if r is not None]
    n = max(ranks, default=0)
    height = PAD + len(points) * WHISKER_ROW + 22
    width = WHISKER_LABEL + WHISKER_PANEL + (PANEL_GAP + RANK_PANEL if n else 0) + 12
    rank_x0 = WHISKER_LABEL + WHISKER_PANEL + PANEL_GAP

    def sx(value: float) -> float:
        return WHISKER_LABEL + WHISKER_PANEL * (min(max(value, low), high) - low) / (high - low)

    def rx(rank: float) -> float:
        return rank_x0 + RANK_PANEL * (rank - 0.5) / n

    parts = _open("intervals", width, height, label)
    parts.append(f'<text x="{WHISKER_LABEL}" y="12">score and interval</text>')
    for tick in (low, (low + high) / 2, high):
        parts.append(
            f'<line class="grid" x1="{sx(tick):.1f}" y1="{PAD - 6}" x2="{sx(tick):.1f}" '
            f'y2="{height - 20}"/><text x="{sx(tick):.1f}" y="{height - 6}" '
            f'text-anchor="middle">{tick:g}</text>'
        )
    if n:
        parts.append(f'<text x="{rank_x0}" y="12">rank range (1–{n})</text>')
        parts.extend(
            f'<text x="{rx(rank):.1f}" y="{height - 6}" text-anchor="middle">{rank}</text>'
            for rank in sorted({1, n, *range(10, n, 10)})
        )
    for index, point in enumerate(points):
        y = PAD + index * WHISKER_ROW + WHISKER_ROW / 2
        tip = f"{point.label}: {point.value:.1f}"
        if point.low is not None and point.high is not None:
            tip += f" ({point.low:.1f}–{point.high:.1f})"
        if point.rank_best is not None:
            tip += f", rank {point.rank_best}–{point.rank_worst}"
        parts.append(
            f'<g class="entry" data-label="{escape(point.label)}" '
            f'data-value="{_attr(point.value)}" data-low="{_attr(point.low)}" '
            f'data-high="{_attr(point.high)}" data-rank-best="{_attr(point.rank_best)}" '
            f'data-rank-worst="{_attr(point.rank_worst)}"><title>{escape(tip)}</title>'
            f'<text class="label" x="{WHISKER_LABEL - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(shorten(point.label, 44))}</text>"
        )
        if point.low is not None and point.high is not None:
            parts.append(
                f'<line class="whisker" x1="{sx(point.low):.1f}" y1="{y:.1f}" '
                f'x2="{sx(point.high):.1f}" y2="{y:.1f}"/>'
            )
        parts.append(f'<circle class="dot" cx="{sx(point.value):.1f}" cy="{y:.1f}" r="3.5"/>')
        if n and point.rank_best is not None and point.rank_worst is not None:
            single = " single" if point.rank_best == point.rank_worst else ""
            left = rx(point.rank_best) - RANK_PANEL / (2 * n)
            wide = RANK_PANEL * (point.rank_worst - point.rank_best + 1) / n
            parts.append(
                f'<rect class="rank{single}" x="{left:.1f}" y="{y - 5:.1f}" '
                f'width="{wide:.1f}" height="10" rx="3"/>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


SCATTER_W, SCATTER_H, S_LEFT, S_BOTTOM, S_TOP, S_RIGHT = 480, 380, 44, 42, 14, 28
SCATTER_NAMED = 8
"""How many points (the highest) a scatter names in place; every other names itself when
hovered, tapped or reached by the keyboard."""
TAG_FONT, TAG_CHAR = 12, 7.2
"""The font size of a point's name (in the chart's own units) and the width allowed a
character of it, for placing names so that they do not overlap."""


def _placed(
    x: float, y: float, text: str, taken: list[tuple[float, float, float, float]]
) -> tuple[float, float, str] | None:
    """Where a point's name fits beside it (right, left, above, below) inside the plot and
    clear of the names and points in `taken`; None when nowhere."""
    wide = len(text) * TAG_CHAR
    tries = (
        (x + 7, y + 4, "start"),
        (x - 7, y + 4, "end"),
        (x - wide / 2, y - 8, "start"),
        (x - wide / 2, y + 16, "start"),
    )
    for tx, ty, anchor in tries:
        left = tx - wide if anchor == "end" else tx
        box = (left, ty - TAG_FONT - 2, left + wide, ty + 5)  # ascent to descent, with halo
        inside = box[0] >= S_LEFT and box[2] <= SCATTER_W - 2 and box[1] >= 0
        inside = inside and box[3] <= SCATTER_H - S_BOTTOM
        clear = all(box[2] < o[0] or box[0] > o[2] or box[3] < o[1] or box[1] > o[3] for o in taken)
        if inside and clear:
            taken.append(box)
            return tx, ty, anchor
    return None


def scatter_chart(
    points: Sequence[Point], label: str, x_title: str, y_title: str, named: int = SCATTER_NAMED
) -> Markup:
    """Points on a log-scale x axis (a price, so it must be above 0) against a linear y. The
    `named` highest points carry their names where the names fit without overlapping; every
    point is a keyboard stop whose name shows on hover, tap or focus (and is its accessible
    name). Points with x <= 0 cannot be drawn on a log scale and are left out (the page says
    how many)."""
    drawn = [p for p in points if p.x > 0]
    if not drawn:
        return Markup("")
    logs = [math.log10(p.x) for p in drawn]
    x_low, x_high = math.floor(min(logs)), math.ceil(max(logs))
    x_high = x_high if x_high > x_low else x_low + 1
    y_low, y_high = _scale([p.y for p in drawn])
    span_x, span_y = SCATTER_W - S_LEFT - S_RIGHT, SCATTER_H - S_TOP - S_BOTTOM

    def x(value: float) -> float:
        return S_LEFT + span_x * (math.log10(value) - x_low) / (x_high - x_low)

    def y(value: float) -> float:
        return S_TOP + span_y * (1 - (value - y_low) / (y_high - y_low))

    parts = _open("scatter", SCATTER_W, SCATTER_H, label, role="group")
    parts[0] = parts[0].replace("max-width: 480px", "max-width: 640px")
    parts += [
        f'<line class="axis" x1="{S_LEFT}" y1="{S_TOP + span_y}" x2="{SCATTER_W - S_RIGHT}" '
        f'y2="{S_TOP + span_y}"/>',
        f'<line class="axis" x1="{S_LEFT}" y1="{S_TOP}" x2="{S_LEFT}" y2="{S_TOP + span_y}"/>',
        f'<text x="{S_LEFT + span_x / 2}" y="{SCATTER_H - 6}" text-anchor="middle">'
        f"{escape(x_title)}</text>",
        f'<text x="12" y="{S_TOP + span_y / 2}" transform="rotate(-90 12 {S_TOP + span_y / 2})" '
        f'text-anchor="middle">{escape(y_title)}</text>',
    ]
    for power in range(x_low, x_high + 1):
        tick = usd(f"{10.0**power:.10f}")
        parts.append(
            f'<line class="grid" x1="{x(10.0**power):.1f}" y1="{S_TOP}" x2="{x(10.0**power):.1f}" '
            f'y2="{S_TOP + span_y}"/><text x="{x(10.0**power):.1f}" y="{S_TOP + span_y + 16}" '
            f'text-anchor="middle">{escape(tick)}</text>'
        )
    for level in (y_low, (y_low + y_high) / 2, y_high):
        parts.append(
            f'<text x="{S_LEFT - 6}" y="{y(level) + 4:.1f}" text-anchor="end">{level:g}</text>'
        )
    order = sorted(range(len(drawn)), key=lambda i: (-drawn[i].y, drawn[i].x, drawn[i].label))
    spots = {i: (x(drawn[i].x), y(drawn[i].y)) for i in order}
    taken = [(px - 5, py - 5, px + 5, py + 5) for px, py in spots.values()]
    names: dict[int, tuple[float, float, str] | None] = {
        i: _placed(*spots[i], shorten(drawn[i].label, 30), taken) for i in order[:named]
    }
    for i in order[::-1]:  # the named points last, so they are drawn on top
        point, (px, py) = drawn[i], spots[i]
        tip = f"{point.label}: {y_title} {point.y:.1f}, {x_title} {usd(repr(point.x))}"
        place = names.get(i)
        if place is None:
            tx, ty, anchor = (
                (px - 7, py + 4, "end") if px > SCATTER_W / 2 else (px + 7, py + 4, "start")
            )
        else:
            tx, ty, anchor = place
        parts.append(
            f'<g class="spot{" named" if place else ""}" tabindex="0" role="img" '
            f'aria-label="{escape(tip)}"><title>{escape(tip)}</title>'
            f'<circle class="point{" hollow" if point.hollow else ""}" '
            f'data-label="{escape(point.label)}" data-x="{_attr(point.x)}" '
            f'data-y="{_attr(point.y)}" cx="{px:.1f}" cy="{py:.1f}" r="5"/>'
            f'<text class="tag" x="{tx:.1f}" y="{ty:.1f}" text-anchor="{anchor}">'
            f"{escape(shorten(point.label, 30))}</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
