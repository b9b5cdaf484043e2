"""What the reader's boards show beyond their tables: charts, default orders and summaries.

Pure functions from a loaded release (and the models `views.collect_models` gathered) to
what a template draws: the Known Good Index bars with their coverage, price against index,
the market's default order, the capability indices as one model × index table, the Arena
boards with readable names, snapshot dates and ranks, every board's interval chart, the
summary that opens "What changed", and which downloads hold simulated rows. Nothing here
renders or reads files.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from markupsafe import Markup

from bench_pipeline.site import markup
from bench_pipeline.site.charts import (
    Bar,
    Interval,
    Point,
    bars_svg,
    figure,
    intervals_chart,
    scatter_chart,
)
from bench_pipeline.site.large_tables import LargeTable
from bench_pipeline.site.layout import Row

ARENA_CHART_ROWS = 30
"""Entries drawn per Arena chart (the table below lists every one)."""
ARENA_NAMES = {
    "text": "Text",
    "text_style_control": "Text, style control",
    "text_public": "Text, public leaderboard",
    "vision": "Vision",
    "vision_style_control": "Vision, style control",
    "webdev": "Web development",
}
PRICE_COLUMNS = ("input_usd_per_1m", "output_usd_per_1m", "blended_price_usd_per_1m")
SUMMARY_SHOWN = 10


def _name_key(model: Any) -> tuple[str, str]:
    return (model.name.lower(), model.id)


# --------------------------------------------------------------- Known Good Index


def kgi_bars(
    leaderboard: Iterable[tuple[int, Row, Any]], components: int, total: int | None = None
) -> Markup:
    """The ranked models' index values as bars, each noting its coverage ("3 of 6"); `total`
    is how many models are ranked when `leaderboard` holds only the top of them."""
    bars = [
        Bar(model.name, value, f"{row.get('index_components')} of {components}")
        for _rank, row, model in leaderboard
        if (value := figure(row.get("known_good_index"))) is not None
    ]
    shown = (
        "every ranked model"
        if total is None or total <= len(bars)
        else (f"the top {len(bars):,} of {total:,} ranked models")
    )
    return bars_svg(bars, f"Known Good Index of {shown}, with its coverage")


def price_index_points(models: Iterable[Any]) -> list[Point]:
    """A point per model with both a Known Good Index and a blended price."""
    points = []
    for model in sorted(models, key=_name_key):
        index = figure((model.kgi or {}).get("known_good_index"))
        price = figure((model.market or {}).get("blended_price_usd_per_1m"))
        if index is not None and price is not None:
            points.append(Point(model.name, price, index))
    return points


def top_points(points: list[Point], limit: int) -> list[Point]:
    """The `limit` points of highest index (a scatter of every model would outweigh its page)."""
    if len(points) <= limit:
        return points
    return sorted(points, key=lambda p: (-p.y, p.x, p.label))[:limit]


def price_index_chart(points: list[Point]) -> Markup:
    """Blended price (log scale) against the Known Good Index."""
    return scatter_chart(
        points,
        "Blended price (log scale) against the Known Good Index",
        "blended price, USD per 1M tokens (log scale)",
        "Known Good Index",
    )


# --------------------------------------------------------------------- market


def market_rows(rows: Iterable[Row], models: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The market split into priced rows, by Known Good Index (highest first, models without
    one after) then blended price (cheapest first), and rows without a price, by name."""
    priced: list[tuple[Row, Any, float | None]] = []
    unpriced: list[tuple[Row, Any, float | None]] = []
    for row in rows:
        model = models[row["model_id"]]
        price = figure(row.get("blended_price_usd_per_1m"))
        (unpriced if price is None else priced).append((row, model, price))
    priced.sort(
        key=lambda item: (
            -(figure((item[1].kgi or {}).get("known_good_index")) or -1.0),
            item[2],
            *_name_key(item[1]),
        )
    )
    unpriced.sort(key=lambda item: _name_key(item[1]))
    return {"priced": priced, "unpriced": unpriced}


# ------------------------------------------------------------ capability indices


def capability_table(
    rows: Iterable[Row],
    models: Mapping[str, Any],
    columns: list[tuple[str, str, list[str], int]],
    rank_of: Mapping[str, str | None],
) -> list[tuple[Any, Row, list[tuple[Any, Any]]]]:
    """One row per model holding any capability index: (model, row, [(value, rank)] per
    index), by the first index (highest first; models without it after), then by name."""
    table = []
    for row in rows:
        cells = [(row.get(c), row.get(rank_of.get(c) or "")) for c, *_ in columns]
        if all(markup.missing(value) for value, _ in cells):
            continue
        table.append((models[row["model_id"]], row, cells))
    first = columns[0][0] if columns else ""
    table.sort(key=lambda item: (-(figure(item[1].get(first)) or -1.0), *_name_key(item[0])))
    return table


# ----------------------------------------------------------------------- Arena


def arena_name(board: str) -> str:
    """A board's readable name ("text_style_control" → "Text, style control")."""
    return ARENA_NAMES.get(board) or board.replace("_", " ").capitalize()


_DATE = re.compile(r"(?<!\d)(20\d\d)-?([01]\d)-?([0-3]\d)(?!\d)")
_MONTH = re.compile(r"-(2[3-9])(0[1-9]|1[0-2])$")  # LMArena's "-2507": July 2025
_THINKING = re.compile(r"(?:^|[-_])(no-|non-)?thinking(?:[-_](\d+k))?(?=$|[-_])", re.IGNORECASE)
_EFFORT = re.compile(r"(?:^|-)([^-]*)-(minimal|low|medium|high|xhigh)$", re.IGNORECASE)


def arena_variant(key: Any) -> str:
    """What sets one of LMArena's entries for a model apart from its others, read from
    LMArena's own key: thinking (with its budget, or "no thinking"), a reasoning effort at the
    key's end and the dated snapshot (`claude-opus-4-5-20251101-thinking-32k` is "thinking
    32k, 2025-11-01"; `gpt-5.1-high` is "high effort"); a key naming none of these is shown as
    it is. "medium" after a word without a digit is a model's name (`mistral-medium`), not an
    effort."""
    text = "" if markup.missing(key) else str(key)
    parts = []
    if thinking := _THINKING.search(text):
        said = "no thinking" if thinking.group(1) else "thinking"
        parts.append(" ".join(filter(None, (said, thinking.group(2)))))
    effort = _EFFORT.search(text)
    if effort and (effort.group(2).lower() != "medium" or re.search(r"\d", effort.group(1))):
        parts.append(f"{effort.group(2).lower()} effort")
    if date := _DATE.search(text):
        parts.append("-".join(date.groups()))
    elif month := _MONTH.search(text):
        parts.append(f"20{month.group(1)}-{month.group(2)}")
    return ", ".join(parts) or text


def _told_apart(row: Row, model: Any) -> str:
    """An Arena row's variant, or "" when it would only repeat the model's name."""
    variant = arena_variant(row.get("model_key"))
    return "" if variant.casefold() == str(model.name).casefold() else variant


def _variant_name(entry: Mapping[str, Any]) -> str:
    """An Arena entry's model name with its variant, as its chart row reads."""
    name = str(entry["model"].name)
    return f"{name} ({entry['variant']})" if entry["variant"] else name


def interval_ranks(
    rows: list[Row], low: str = "rating_low", high: str = "rating_high"
) -> list[tuple[int, int] | None]:
    """Rank ranges from intervals (the `low`/`high` columns), for a board that publishes
    none: an entry's best rank is 1 + the entries whose interval lies wholly above its own,
    its worst is the board's size minus those wholly below (None without an interval)."""
    bounds = [(figure(r.get(low)), figure(r.get(high))) for r in rows]
    known = [(lo, hi) for lo, hi in bounds if lo is not None and hi is not None]
    # Sorted bounds and bisection: O(n log n), where comparing every pair was quadratic
    # (minutes for a board of 20,000 entries).
    lows = sorted(lo for lo, _ in known)
    highs = sorted(hi for _, hi in known)
    out: list[tuple[int, int] | None] = []
    for lo, hi in bounds:
        if lo is None or hi is None:
            out.append(None)
            continue
        above = len(lows) - bisect_right(lows, hi)
        below = bisect_left(highs, lo)
        out.append((1 + above, len(known) - below))
    return out


def arena_boards(
    rows: Iterable[Row], models: Mapping[str, Any], runs: Mapping[str, Row]
) -> list[Row]:
    """Every Arena board: readable title, snapshot date, ranks (published, else from the
    intervals, and then said so) and its chart of the top entries."""
    grouped: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        grouped[str(row.get("leaderboard"))].append(row)
    boards = []
    for board, board_rows in sorted(grouped.items()):
        board_rows.sort(key=lambda r: (-(figure(r.get("rating")) or 0.0), str(r["model_id"])))
        published = any(not markup.missing(r.get("rank")) for r in board_rows)
        derived = [None] * len(board_rows) if published else interval_ranks(board_rows)
        entries = []
        for row, ranks in zip(board_rows, derived, strict=True):
            best, worst = (
                (row.get("rank_best"), row.get("rank_worst"))
                if published
                else (ranks or (None, None))
            )
            entries.append({"row": row, "model": models[row["model_id"]], "rank": row.get("rank"),
                            "best": best, "worst": worst,
                            "variant": _told_apart(row, models[row["model_id"]])})  # fmt: skip
        dates = Counter(str(r["published_on"]) for r in board_rows if r.get("published_on"))
        title = arena_name(board)
        chart = intervals_chart(
            [
                Interval(_variant_name(e), value, figure(e["row"].get("rating_low")),
                         figure(e["row"].get("rating_high")), e["best"], e["worst"])
                for e in entries[:ARENA_CHART_ROWS]
                if (value := figure(e["row"].get("rating"))) is not None
            ],
            f"Arena {title}: ratings with 95% intervals and rank ranges",
        )  # fmt: skip
        boards.append(
            {"id": board, "title": title, "entries": entries, "ranks_published": published,
             "published_on": max(dates) if dates else None, "chart": chart,
             "charted": min(len(entries), ARENA_CHART_ROWS)}
        )  # fmt: skip
    return boards


def overlap_rank_rows(rows: list[Row], low: str, high: str) -> list[Row]:
    """A ranked board's rows with the rank range its intervals allow (`interval_ranks` over
    the rows holding a rank) as `rank_best`/`rank_worst`: where intervals overlap, the data
    do not order the entries, and the range says so. None for a row without a rank or an
    interval. The rows themselves are not changed."""
    ranked = [r for r in rows if not markup.missing(r.get("rank"))]
    ranges = {id(r): found for r, found in zip(ranked, interval_ranks(ranked, low, high),
                                               strict=True)}  # fmt: skip
    out = []
    for row in rows:
        found = ranges.get(id(row))
        best, worst = found if found else (None, None)
        out.append(row | {"rank_best": best, "rank_worst": worst})
    return out


# ------------------------------------------------------------- score boards


def board_chart(
    rows: Iterable[Row],
    label: str,
    name: str,
    value: str,
    low: str | None = None,
    high: str | None = None,
    margin: str | None = None,
    best: str = "rank_best",
    worst: str = "rank_worst",
    scale: tuple[float, float] | None = (0.0, 100.0),
) -> Markup:
    """Any score board as an interval chart: `value` with its interval (the `low`/`high`
    columns, or `value` ± `margin`) and its rank range (`best`..`worst`, or a single `rank`
    when those columns are absent). Rows without a value are left out."""
    points = []
    for row in rows:
        score = figure(row.get(value))
        if score is None:
            continue
        lo = figure(row.get(low)) if low else None
        hi = figure(row.get(high)) if high else None
        if margin and (spread := figure(row.get(margin))) is not None:
            lo, hi = score - spread, score + spread
        rank_best = row.get(best) if best in row else row.get("rank")
        rank_worst = row.get(worst) if worst in row else row.get("rank")
        points.append(
            Interval(str(row.get(name) or "?"), score, lo, hi,
                     None if rank_best is None or markup.missing(rank_best) else int(rank_best),
                     None if rank_worst is None or markup.missing(rank_worst) else int(rank_worst))
        )  # fmt: skip
    return intervals_chart(points, label, scale)


# -------------------------------------------------------------- what changed


def _price(value: Any) -> str:
    return markup.usd(value)


def change_summary(release_diff: Mapping[str, Any] | None, models: Mapping[str, Any]) -> Row:
    """The few facts that open "What changed": rank moves on every board, price changes,
    models added and removed, and what caused them, each list cut to SUMMARY_SHOWN."""
    diff = release_diff or {}

    def name(key: Any) -> str:
        model_id = key.get("model_id") if isinstance(key, dict) else key
        model = models.get(model_id) if isinstance(model_id, str) else None
        if model is not None:
            return str(model.name)
        if isinstance(key, dict):
            return " · ".join(str(v) for v in key.values())
        return str(key)

    moves: list[Any] = []
    prices: list[Any] = []
    for table, found in (diff.get("tables") or {}).items():
        for move in found.get("rank_moves") or []:
            old, new = move.get("old_rank"), move.get("new_rank")
            moves.append({"table": table, "name": name(move.get("key")), "old": old, "new": new,
                          "column": move.get("column"),
                          "up": old is not None and new is not None and new < old})  # fmt: skip
        if table != "market":
            continue
        prices.extend(
            {"name": name(change.get("key")), "column": change["column"],
             "old": _price(change.get("old")), "new": _price(change.get("new"))}
            for change in found.get("changed") or []
            if change.get("column") in PRICE_COLUMNS
        )  # fmt: skip
    moves.sort(key=lambda m: -abs((m["old"] or 0) - (m["new"] or 0)))
    caused = diff.get("caused_by") or {}
    added = [name(i) for i in diff.get("models_added") or []]
    removed = [name(i) for i in diff.get("models_removed") or []]
    return {
        "moves": moves[:SUMMARY_SHOWN], "moves_count": len(moves),
        "prices": prices[:SUMMARY_SHOWN], "prices_count": len(prices),
        "added": added[:SUMMARY_SHOWN], "added_count": len(added),
        "removed": removed[:SUMMARY_SHOWN], "removed_count": len(removed),
        "causes": [
            f"{r.get('source', '?')} run {r.get('run_id', '?')} ({r.get('status') or '?'})"
            for r in caused.get("source_runs") or []
        ] + [f"case version {c}" for c in caused.get("case_versions") or []],
    }  # fmt: skip


# ------------------------------------------------------------------ downloads


def simulated_label(
    table: str, tables: Mapping[str, list[Row]], large: Mapping[str, LargeTable] | None = None
) -> str:
    """How much of a download is simulated, in words ("" when nothing is); a table in
    `large` is counted in its file (`large_tables.py`)."""
    if large and table in large:
        marked, count, total = large[table].simulated
    else:
        rows = tables.get(table, [])
        marked, total = bool(rows) and "simulated" in rows[0], len(rows)
        count = sum(1 for r in rows if markup.is_simulated(r)) if marked else 0
    if not (marked and count):
        return ""
    return "all rows simulated" if count == total else f"{count} of {total} simulated"
