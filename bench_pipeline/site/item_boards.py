"""The item board pages: one per board in `item_boards`, and an index of them.

Each page draws (inline SVG, no JavaScript) every ranked entry's 95% interval as a whisker
and its rank range as a bar (each entry's figures also in the chart's data attributes), a
cost-per-resolved versus score scatter where dominated entries are hollow, the pair matrix,
and a reading in plain words. Called from `SiteBuilder.build`; everything it shows comes
from the release's two item-board tables.

A board can hold thousands of entries (its pairs grow with their square), so a page stays
light whatever the size: the charts draw the top `CHART_ROWS` entries, the matrix the top
`MATRIX_ENTRIES`, the entries table its first page, and the reading names at most
`NAMED` entries in a list; each says so and points to the downloads, which hold every row.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl
from markupsafe import Markup, escape

from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.site.charts import Point, scatter_chart, shorten
from bench_pipeline.site.large_tables import LargeTable
from bench_pipeline.site.markup import missing, unique_slugs
from bench_pipeline.site.paging import CHART_ROWS, first_page

Row = dict[str, Any]
ROW_HEIGHT, LABEL_WIDTH, PANEL, GAP, PAD = 18, 300, 260, 30, 24
INK, MUTED, LINE, ACCENT, WEAK = "#1f2933", "#62707d", "#c7ccd1", "#1b6ec2", "#b8c4cf"
MATRIX_ENTRIES = 30
LABEL_CHARS = 42
"""The longest entry name a chart row shows whole in its LABEL_WIDTH at 11 px (a longer one
is cut with an ellipsis, its whole name in the row's tooltip), so no name runs off the left."""
"""Ranked entries the pair matrix shows (its cells grow with their square)."""
NAMED = 10
"""Entries a sentence of the reading names before it says how many more there are."""
RANK_TICKS = 20
"""About this many rank labels under the rank panel, whatever the board's size."""


class Renderer(Protocol):
    """What the page needs from the site builder: its release rows and its render call."""

    def render(self, path: str, template: str, shows: Any = (), **context: Any) -> None: ...


@dataclass(frozen=True)
class BoardPairs:
    """What a board's page needs of its pairs: how many there are, how many differ
    significantly, and the pairs between the entries its matrix shows (in file order)."""

    total: int = 0
    significant: int = 0
    shown: list[Row] = field(default_factory=list)

    @classmethod
    def of(cls, pairs: list[Row] | BoardPairs) -> BoardPairs:
        """`pairs` (every pair of one board, or already counted) counted."""
        if isinstance(pairs, BoardPairs):
            return pairs
        return cls(len(pairs), sum(1 for p in pairs if p["significant"]), pairs)


def board_pairs(
    pairs: Iterable[Row] | LargeTable, shown: Mapping[str, set[Any]]
) -> dict[str, BoardPairs]:
    """Per board (by its name as text), its pairs counted and those between its `shown`
    entry keys; from rows in memory, or asked of the table's file (`large_tables.py`)."""
    if isinstance(pairs, LargeTable):
        return _board_pairs_from_file(pairs, shown)
    totals: Counter[str] = Counter()
    significant: Counter[str] = Counter()
    among: dict[str, list[Row]] = defaultdict(list)
    for pair in pairs:
        board = str(pair["board"])
        totals[board] += 1
        significant[board] += 1 if pair["significant"] else 0
        keys = shown.get(board, ())
        if pair["entry_key_a"] in keys and pair["entry_key_b"] in keys:
            among[board].append(pair)
    return {b: BoardPairs(totals[b], significant[b], among[b]) for b in totals}


def _board_pairs_from_file(
    table: LargeTable, shown: Mapping[str, set[Any]]
) -> dict[str, BoardPairs]:
    """`board_pairs` by two queries of the file: the counts per board, and the few pairs
    whose two entries are both shown somewhere (then kept per board as in memory)."""
    board = pl.col("board").fill_null("None")  # as str(None) names it in memory
    counts = (
        table.scan()
        .group_by(board)
        .agg(pl.len().alias("total"), pl.col("significant").fill_null(False).sum())
        .collect()
    )
    keys = set().union(*shown.values()) if shown else set()
    texts = sorted(k for k in keys if isinstance(k, str))  # the key columns hold text only

    def held(column: str) -> pl.Expr:
        found = pl.col(column).is_in(texts)
        return found | pl.col(column).is_null() if None in keys else found

    wanted = table.scan().filter(held("entry_key_a") & held("entry_key_b")).collect()
    pairs = board_pairs(table.rows(wanted), shown)
    return {
        str(row["board"]): BoardPairs(
            int(row["total"]),
            int(row["significant"]),
            pairs.get(str(row["board"]), BoardPairs()).shown,
        )
        for row in counts.iter_rows(named=True)
    }


def _ranked(rows: list[Row]) -> list[Row]:
    """The entries with a rank (per-item results that agree with the published score)."""
    return [r for r in rows if not missing(r.get("rank_best"))]


def _float(value: Any) -> float:
    return float(value)


def intervals_svg(rows: list[Row], label: str, limit: int = CHART_ROWS) -> Markup:
    """Whiskers (95% interval, dot at the score) and rank-range bars, one line for each of
    the top `limit` entries; the rank panel spans every ranked entry."""
    ranked = _ranked(rows)
    if not ranked:
        return Markup("")
    n = len(ranked)
    ranked = ranked[:limit]
    height = PAD + len(ranked) * ROW_HEIGHT + PAD
    width = LABEL_WIDTH + PANEL + GAP + PANEL + 16
    score_x0, rank_x0 = LABEL_WIDTH, LABEL_WIDTH + PANEL + GAP

    def sx(value: float) -> float:
        return score_x0 + PANEL * value / 100.0

    def rx(rank: float) -> float:
        return rank_x0 + PANEL * (rank - 0.5) / n

    parts = [
        f'<svg class="chart item-intervals" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" font-size="11" '
        f'style="max-width: {width}px">',
        f"<title>{escape(label)}</title>",
        f'<text x="{score_x0}" y="14" fill="{MUTED}">score, 95% interval (0–100)</text>',
        f'<text x="{rank_x0}" y="14" fill="{MUTED}">rank range (1–{n})</text>',
    ]
    parts.extend(
        f'<line x1="{sx(tick):.1f}" y1="{PAD - 4}" x2="{sx(tick):.1f}" '
        f'y2="{height - PAD + 4}" stroke="{LINE}"/>'
        f'<text x="{sx(tick):.1f}" y="{height - 6}" fill="{MUTED}" '
        f'text-anchor="middle">{tick}</text>'
        for tick in (0, 25, 50, 75, 100)
    )
    parts.extend(
        f'<text x="{rx(rank):.1f}" y="{height - 6}" fill="{MUTED}" '
        f'text-anchor="middle">{rank}</text>'
        for rank in sorted({1, n, *range(_tick_step(n), n + 1, _tick_step(n))})
    )
    for index, row in enumerate(ranked):
        y = PAD + index * ROW_HEIGHT + ROW_HEIGHT / 2
        name = escape(str(row["entry"]))
        low, high, score = _float(row["ci_low"]), _float(row["ci_high"]), _float(row["score"])
        best, worst = int(row["rank_best"]), int(row["rank_worst"])
        tip = escape(
            f"{row['entry']}: {score:.1f} (95% {low:.1f}–{high:.1f}), ranks {best}–{worst}"
        )
        parts.append(
            f'<g class="entry" data-label="{name}" data-value="{score!r}" data-low="{low!r}" '
            f'data-high="{high!r}" data-rank-best="{best}" data-rank-worst="{worst}">'
            f"<title>{tip}</title>"
            f'<text x="{LABEL_WIDTH - 8}" y="{y + 4:.1f}" text-anchor="end" fill="{INK}">'
            f"{escape(shorten(str(row['entry']), LABEL_CHARS))}</text>"
            f'<line x1="{sx(low):.1f}" y1="{y:.1f}" x2="{sx(high):.1f}" y2="{y:.1f}" '
            f'stroke="{ACCENT}" stroke-width="2"/>'
            f'<circle cx="{sx(score):.1f}" cy="{y:.1f}" r="3.5" fill="{ACCENT}"/>'
            f'<rect x="{rx(best) - PANEL / (2 * n):.1f}" y="{y - 5:.1f}" '
            f'width="{PANEL * (worst - best + 1) / n:.1f}" height="10" rx="3" '
            f'fill="{WEAK if best != worst else ACCENT}"/></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _tick_step(n: int) -> int:
    """A multiple of 5 that puts about `RANK_TICKS` labels on a rank axis of `n`."""
    return 5 * max(1, math.ceil(n / (5 * RANK_TICKS)))


def scatter_svg(rows: list[Row], label: str, limit: int = CHART_ROWS) -> Markup:
    """Cost per resolved instance (log scale) against score for the top `limit` entries,
    drawn by the site's one scatter (`charts.scatter_chart`: top points named, every point a
    keyboard stop); dominated entries are hollow."""
    points = [
        Point(
            str(r["entry"]),
            _float(r["cost_per_success_usd"]),
            _float(r["score"]),
            hollow=not missing(r.get("dominated_by")),
        )
        for r in _ranked(rows)[:limit]
        if not missing(r.get("cost_per_success_usd")) and _float(r["cost_per_success_usd"]) > 0
    ]
    return scatter_chart(points, label, "cost per resolved instance (USD)", "score")


def pair_matrix(
    rows: list[Row], pairs: list[Row] | BoardPairs, limit: int = MATRIX_ENTRIES
) -> list[tuple[Row, list[Row]]]:
    """Per ranked entry of the top `limit` (in board order), one cell per other of them:
    `mark` is ▲ when the row's entry is significantly better, ▼ when significantly worse,
    · otherwise."""
    ranked, shown = _ranked(rows)[:limit], matrix_keys(rows, limit)
    by_pair = {}
    for p in BoardPairs.of(pairs).shown:
        if p["entry_key_a"] in shown and p["entry_key_b"] in shown:
            by_pair[(p["entry_key_a"], p["entry_key_b"])] = p
            by_pair[(p["entry_key_b"], p["entry_key_a"])] = p
    matrix = []
    for row in ranked:
        cells = []
        for other in ranked:
            pair = by_pair.get((row["entry_key"], other["entry_key"]))
            if pair is None:
                cells.append({"mark": "", "title": "", "kind": "self"})
                continue
            if pair["significant"]:
                won = pair_winner(pair) == row["entry_key"]
                kind, mark = ("better", "▲") if won else ("worse", "▼")
            else:
                kind, mark = "tie", "·"
            title = f"{row['entry']} vs {other['entry']}: p = {_float(pair['p_value']):.3g} "
            title += f"over {pair['discordant']} discordant of {pair['items']} shared items"
            cells.append({"mark": mark, "title": title, "kind": kind})
        matrix.append((row, cells))
    return matrix


def pair_winner(pair: Row) -> Any:
    """The entry key of the better entry of a significant pair: the side with more wins (the
    test's statistic is the difference), which holds even when two entries share a name."""
    a_better = int(pair["wins_a"]) > int(pair["wins_b"])
    return pair["entry_key_a"] if a_better else pair["entry_key_b"]


def board_paths(names: Iterable[str]) -> dict[str, str]:
    """Each item board's page, relative to the site root, by the board's name."""
    slugs = unique_slugs(sorted(names))
    return {name: f"item-boards/{slug}.html" for name, slug in slugs.items()}


def _named(names: Iterable[str], between: str = ", ") -> str:
    """The first `NAMED` of `names` joined, and how many more there are."""
    listed = list(names)
    shown = between.join(listed[:NAMED])
    return shown + (f"{between}and {len(listed) - NAMED:,} more" if len(listed) > NAMED else "")


def reading(rows: list[Row], pairs: list[Row] | BoardPairs) -> list[str]:
    """The board in plain sentences: who shares the top, how many pairs separate, what
    dominates, and where the per-item results disagree with the published percentage."""
    ranked = _ranked(rows)
    if not ranked:
        return ["No entry of this board publishes per-item results, so nothing is ranked."]
    top = [r for r in ranked if r["rank_best"] == 1]
    sentences = []
    if len(top) == 1:
        sentences.append(f"{top[0]['entry']} is first, significantly ahead of every other entry.")
    else:
        lead = _named(str(r["entry"]) for r in top)
        count = "two" if len(top) == 2 else "three" if len(top) == 3 else str(len(top))
        sentences.append(
            f"The top {count} are statistically tied ({lead}): the data cannot order them."
        )
    counted = BoardPairs.of(pairs)
    significant = counted.significant
    single = sum(1 for r in ranked if not r["tied"])
    sentences.append(
        f"{significant} of {counted.total} pairs differ significantly after Holm's correction "
        f"at 5%; {single} of {len(ranked)} entries {'has' if single == 1 else 'have'} a "
        "single possible rank."
    )
    dominated = [r for r in ranked if not missing(r.get("dominated_by"))]
    if dominated:
        free = [r for r in ranked if missing(r.get("dominated_by"))]
        sentences.append(
            f"{len(dominated)} entries are dominated (another is significantly better and "
            f"cheaper per resolved instance); not dominated: "
            f"{_named(str(r['entry']) for r in free) or 'none'}."
        )
    apart = [r for r in rows if not missing(r.get("parity"))]  # `scores.parity`'s reason
    if apart:
        sentences.append(
            "Not ranked because the per-item results disagree with the published score: "
            + _named((f"{r['entry']} ({r['parity']})" for r in apart), "; ")
            + "."
        )
    unranked = len(rows) - len(ranked) - len(apart)
    if unranked:
        sentences.append(
            f"{unranked} entries publish only a percentage; they are listed without a rank."
        )
    return sentences


def matrix_keys(rows: list[Row], limit: int = MATRIX_ENTRIES) -> set[Any]:
    """The entry keys a board's matrix shows (`pair_matrix`'s top `limit` ranked)."""
    return {r["entry_key"] for r in _ranked(rows)[:limit]}


def board_sources(names: Iterable[str], sources: Mapping[str, Row]) -> dict[str, Row | None]:
    """Each board's source row (`sources`: the release's, by name): a per-item results
    source's board is named by its definition's `benchmark`; every other board is one of the
    SWE-bench leaderboards. None when the release lists no such source."""
    by_benchmark = {
        definition.board.benchmark: name
        for name, definition in source_definitions().items()
        if definition.board is not None
    }
    return {board: sources.get(by_benchmark.get(board, "swebench")) for board in names}


def render_item_boards(
    builder: Renderer,
    boards: list[Row],
    pairs: list[Row] | LargeTable,
    cards: Iterable[Row] = (),
    rank_sets: Iterable[Row] = (),
    sources: Mapping[str, Row] | None = None,
) -> None:
    """`item-boards.html` and `item-boards/<board>.html` for every board in the release;
    `pairs` are the `item_board_pairs` rows, or that table's file (`large_tables.py`);
    `cards` and `rank_sets` the boards' reporting cards (none in an older release);
    `sources` the release's sources by name, to name each board's publisher and licence."""
    card_of = {str(c["board"]): c for c in cards}
    sets_of: dict[str, dict[Any, Row]] = defaultdict(dict)
    for found in rank_sets:
        sets_of[str(found["board"])][found["entry_key"]] = found
    rows_of: dict[str, list[Row]] = defaultdict(list)
    for row in boards:
        rows_of[str(row["board"])].append(row)
    counted = board_pairs(pairs, {name: matrix_keys(rows) for name, rows in rows_of.items()})
    names = sorted(rows_of)
    paths = board_paths(names)
    source_of = board_sources(names, sources or {})
    summaries = []
    for name in names:
        path = paths[name]
        rows, board_pairs_ = rows_of[name], counted.get(name, BoardPairs())
        sentences = reading(rows, board_pairs_)
        summaries.append({"board": name, "href": path, "entries": len(rows),
                          "ranked": len(_ranked(rows)), "lead": sentences[0]})  # fmt: skip
        builder.render(
            path, "item_board.html", ("item_boards",),
            board=name, entries=first_page(rows, "item_boards"), reading=sentences,
            ranked=len(_ranked(rows)), charted=min(len(_ranked(rows)), CHART_ROWS),
            intervals=intervals_svg(rows, f"{name}: scores with 95% intervals and rank ranges"),
            scatter=scatter_svg(rows, f"{name}: cost per resolved instance against score"),
            matrix=pair_matrix(rows, board_pairs_),
            card_reading=card_reading(rows, card_of.get(name), sets_of[name]),
            tiers=tier_bands(rows, card_of.get(name), sets_of[name]),
            card_facts=card_facts(card_of.get(name)),
            source=source_of[name],
        )  # fmt: skip
    builder.render("item-boards.html", "item_boards.html", ("item_boards",), boards=summaries)


# The reporting card on the page -------------------------------------------------------------
# What a board's card (`item_board_cards`, `item_board_rank_sets`; `scores.card`) adds to its
# page: the tiers drawn as bands, each entry's rank sets over items and over groups side by
# side, the card's figures, and a plain reading generated from them. Nothing here computes a
# statistic: every figure is the card's, so a different card reads and draws differently.


def _points(value: float, binary: bool) -> str:
    """A gap in the board's units: percentage points on pass/fail boards, else the scale's."""
    shown = 100.0 * value if binary else value
    text = f"{shown:.0f}" if abs(shown) >= 10 else f"{shown:.1f}"
    return f"{text} point{'' if text == '1' else 's'}" if binary else text


def _figure(card: Row, name: str) -> float | None:
    """A figure of the card, None when missing (an older card has no such column)."""
    value: Any = card.get(name)
    return None if missing(value) else float(value)


def card_reading(rows: list[Row], card: Row | None, sets: Mapping[Any, Row]) -> list[str]:
    """The card in plain sentences: the top tier, how many tiers, the adjacent ranks, the
    gap the board separates, what resampling groups does, and how often entries disagree."""
    ranked = [r for r in _ranked(rows) if r["entry_key"] in sets]
    if card is None or not ranked:
        return []
    sentences = []
    top = [r for r in ranked if sets[r["entry_key"]].get("tier") == 1]
    if len(top) == 1:
        sentences.append(
            f"{top[0]['entry']} alone makes up the top tier: no entry is established better."
        )
    elif top and all(r is s for r, s in zip(top, ranked, strict=False)):
        sentences.append(
            f"The top {len(top)} are one tier: no two of them are established apart, "
            "and no entry is established better than any of them."
        )
    elif top:
        sentences.append(
            f"{len(top)} entries make up the top tier (no entry is established better than "
            f"any of them): {_named(str(r['entry']) for r in top)}."
        )
    height, widest, systems = card["tiers_height"], card["largest_antichain"], card["systems"]
    sentences.append(
        f"The data resolves {height} tier{'s' if height != 1 else ''}; the largest set of "
        f"entries no two of which are established apart holds {widest} of {systems}."
    )
    adjacent, undecided = _figure(card, "adjacent_pairs"), _figure(card, "adjacent_undecided")
    if adjacent and undecided is not None:
        if undecided == adjacent:
            lead = "No adjacent ranks are separable"
        elif undecided == 0:
            lead = "Every adjacent rank is separable"
        elif undecided * 2 > adjacent:
            lead = "Most adjacent ranks are not separable"
        elif undecided * 2 == adjacent:
            lead = "Half the adjacent ranks are not separable"
        else:
            lead = "Most adjacent ranks are separable"
        sentences.append(
            f"{lead}: {undecided:.0f} of {adjacent:.0f} pairs of entries next to each other "
            "by score are not established apart."
        )
    binary = card.get("data_type") == "binary"
    gap_80, gap_50 = _figure(card, "resolution_gap_80"), _figure(card, "resolution_gap_50")
    if gap_80 is not None:
        half = "" if gap_50 is None else f", half the time at {_points(gap_50, binary)}"
        sentences.append(
            f"The board separates gaps of about {_points(gap_80, binary)}: two entries that "
            f"far apart are told apart four times in five{half} (simulated from its own pairs)."
        )
    widths = [
        (s["rank_set_high"] - s["rank_set_low"] + 1,
         s["group_rank_set_high"] - s["group_rank_set_low"] + 1)
        for s in (sets[r["entry_key"]] for r in ranked)
        if not missing(s.get("group_rank_set_low"))
    ]  # fmt: skip
    if widths:
        items = sum(w for w, _ in widths) / len(widths)
        groups = sum(g for _, g in widths) / len(widths)
        change = 100.0 * (groups - items) / items
        how = f"widens the rank sets by {change:.0f}%"
        if abs(change) < 0.5:
            how = "leaves the rank sets as wide"
        elif change < 0:
            how = f"narrows the rank sets by {-change:.0f}%"
        sentences.append(
            f"Resampling whole groups of items ({card.get('groups')} of them) instead of single "
            f"items {how}: they are {groups:.1f} ranks wide on average, against "
            f"{items:.1f}."
        )
    share = _figure(card, "discordance_share")
    top_share = _figure(card, "discordance_top_decile_share")
    if share is not None:
        among = (
            ""
            if top_share is None
            else f"; {100 * top_share:.0f}% among the top decile's "
            f"{card.get('top_decile_entries')} entries"
        )
        sentences.append(
            f"Two entries disagree on {100 * share:.0f}% of the items they share, on "
            f"average{among}."
        )
    return sentences


def _bar(low: int, high: int, count: int, label: str, kind: str) -> str:
    """One rank set as a bar over ranks 1..count (an inline SVG that stretches to its cell)."""
    x, width = 100.0 * (low - 1) / count, 100.0 * (high - low + 1) / count
    shown = str(low) if low == high else f"{low}–{high}"
    return (
        f'<span class="set {kind}" data-low="{low}" data-high="{high}">'
        f'<span class="what">{escape(label)} {shown}</span>'
        f'<svg viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true">'
        f'<rect class="track" x="0" y="0" width="100" height="8"/>'
        f'<rect class="span" x="{x:.2f}" y="0" width="{width:.2f}" height="8"/></svg></span>'
    )


def tier_bands(
    rows: list[Row], card: Row | None, sets: Mapping[Any, Row], limit: int = CHART_ROWS
) -> Markup:
    """The tiers drawn: one band per tier of the partial order "established better" (tier 1
    on top), its entries in board order, each with its rank set over items and, when items
    carry groups, over groups, side by side. The top `limit` entries are drawn."""
    ranked = [r for r in _ranked(rows) if r["entry_key"] in sets][:limit]
    if card is None or not ranked:
        return Markup("")
    count = int(card["systems"])
    grouped = not missing(sets[ranked[0]["entry_key"]].get("group_rank_set_low"))
    by_tier: dict[int, list[Row]] = defaultdict(list)
    for row in ranked:
        by_tier[int(sets[row["entry_key"]]["tier"])].append(row)
    groups = card.get("groups")
    parts = [f'<div class="tiers" data-tiers="{card["tiers_height"]}">']
    for tier in sorted(by_tier):
        members = by_tier[tier]
        parts.append(
            f'<section class="tier" data-tier="{tier}"><h3>Tier {tier} '
            f'<span class="basis">{len(members)} entr{"y" if len(members) == 1 else "ies"}'
            "</span></h3><ol>"
        )
        for row in members:
            found = sets[row["entry_key"]]
            bars = _bar(int(found["rank_set_low"]), int(found["rank_set_high"]), count,
                        "items: ranks", "items")  # fmt: skip
            if grouped:
                bars += _bar(int(found["group_rank_set_low"]), int(found["group_rank_set_high"]),
                             count, f"{groups} groups: ranks", "groups")  # fmt: skip
            parts.append(
                f'<li data-entry="{escape(str(row["entry_key"]))}"><span class="name">'
                f'{escape(str(row["entry"]))} <span class="basis">'
                f"{_float(row['score']):.1f}</span></span>{bars}</li>"
            )
        parts.append("</ol></section>")
    parts.append("</div>")
    return Markup("".join(parts))


def card_facts(card: Row | None) -> list[tuple[str, str]]:
    """The card's board figures as (label, value) lines for the page."""
    if card is None:
        return []

    def share(value: Any) -> str:
        return "–" if missing(value) else f"{100 * float(value):.1f}%"

    binary = card.get("data_type") == "binary"
    facts = [
        ("Matrix", f"{card['systems']} entries × {card['items']} items, {card['data_type']}"
                   f", {card['missing_cells']} cells missing"),
        ("Matrix SHA-256", str(card["matrix_sha256"])),
        ("Pairs established",
         f"{card['pairs_established']} of {card['pairs_total']} "
         f"({share(card.get('established_share'))}), Holm at "
         f"{card.get('alpha') if not missing(card.get('alpha')) else 0.05}"),
        ("Tiers", f"{card['tiers_height']} (longest chain); largest set not established "
                  f"apart: {card['largest_antichain']}"),
    ]  # fmt: skip
    if not missing(card.get("adjacent_pairs")):
        facts.append(("Adjacent pairs not separable",
                      f"{card['adjacent_undecided']} of {card['adjacent_pairs']}"))  # fmt: skip
    if not missing(card.get("discordance")):
        facts.append(("Discordance", f"{float(card['discordance']):.1f} items a pair "
                      f"({share(card.get('discordance_share'))}); top decile "
                      f"{share(card.get('discordance_top_decile_share'))}"))  # fmt: skip
    gap_80, half = _figure(card, "resolution_gap_80"), _figure(card, "resolution_gap_50")
    if gap_80 is not None:
        facts.append(("Resolution (simulated)",
                      f"{_points(gap_80, binary)} at 80% power, "
                      f"{'–' if half is None else _points(half, binary)} at 50%"))  # fmt: skip
    facts.append(("Rank sets", f"{card['draws']:,} paired bootstrap draws, seed {card['seed']}"
                  + ("" if missing(card.get("groups")) else
                     f"; also resampling {card['groups']} groups")))  # fmt: skip
    if not missing(card.get("pair_test")):
        facts.append(("Pair test", str(card["pair_test"])))
    if not missing(card.get("self_checks")):
        facts.append(("Self-checks passed", str(card["self_checks"])))
    if not missing(card.get("software")):
        facts.append(("Computed by", f"{card['software']}; {card.get('command') or ''}"))
    return facts
