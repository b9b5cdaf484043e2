"""Item boards of the per-item results source kind (`ingest/parsers/item_results.py`).

One board per source whose definition has a `[board]` table, from its live rows in
`item_matrix_results` (and the headlines in `item_matrix_entries`), published in the same
tables as the SWE-bench boards (`item_boards`, `item_board_pairs`, `item_board_cards`,
`item_board_rank_sets`) and on the same page.

Scores are put on 0–1, higher better, from the definition's scale and direction (a board's
`score` column is 100 × that). With `absent = "failed"` every system is scored over the
definition's item count: a listed item it has no result for, and every item no file lists,
count at the bottom of the scale. Parity before rank (`scores.parity`): a system whose mean
over its items disagrees with a headline its files state, at the headline's rounding, is
listed with both numbers and the reason and left out of the ranking and the card. The rest
are ranked by the reporting card (`scores.card`): its Holm rank ranges over exact paired
tests, its pairs, its rank sets. The interval of a score is Clopper–Pearson on pass/fail
results and, on continuous ones, the mean ± 1.96 standard errors within the scale (the
whole scale below two items).
"""

from __future__ import annotations

import math
from collections import defaultdict
from decimal import Decimal
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.ingest.catalog import ItemBoardSpec, source_definitions
from bench_pipeline.scores.card import Card, Matrix, card, matrix_from_cells
from bench_pipeline.scores.item_boards import (
    _PAIR_SCHEMA,
    BoardRow,
    ItemBoard,
    clopper_pearson,
)
from bench_pipeline.scores.navigator import cost_per_success
from bench_pipeline.scores.parity import parity

UNLISTED = "(unlisted {})"
"""The id of an item no file lists, counted as failed by every system (`absent = "failed"`)."""


def _unit(value: float, spec: ItemBoardSpec) -> float:
    low, high = spec.scale
    share = (value - low) / (high - low)
    return share if spec.direction == "higher" else 1.0 - share


def _interval(values: list[float], binary: bool) -> tuple[float, float]:
    n = len(values)
    if binary:
        return clopper_pearson(round(sum(values)), n)
    if n < 2:
        return 0.0, 100.0
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = 1.959963984540054 * sd / math.sqrt(n)
    return 100.0 * max(0.0, mean - half), 100.0 * min(1.0, mean + half)


def source_board(
    source: str,
    spec: ItemBoardSpec,
    results: pl.DataFrame,
    stated: pl.DataFrame,
) -> tuple[ItemBoard, Card | None, Matrix | None]:
    """The board of one source, its card and the matrix the card was computed from (None,
    None when fewer than two systems are ranked).

    Args:
        source: The source's name (for the reasons).
        spec: Its definition's `[board]`.
        results: Its rows of `item_matrix_results` (system, item, score, item_group,
            cost_usd).
        stated: Its rows of `item_matrix_entries` (system, stated_score).
    """
    native: dict[str, dict[str, float]] = defaultdict(dict)
    groups: dict[str, str] = {}
    costs: dict[str, list[Decimal | None]] = defaultdict(list)
    for system, item, score, group, cost in results.select(
        "system", "item", "score", "item_group", "cost_usd"
    ).iter_rows():
        native[system][item] = float(score)
        costs[system].append(cost)
        if group is not None:
            groups[item] = group
    if spec.absent == "failed":
        bottom = spec.scale[0] if spec.direction == "higher" else spec.scale[1]
        listed = sorted({i for items in native.values() for i in items})
        unlisted = [UNLISTED.format(n) for n in range(1, spec.items - len(listed) + 1)]
        for system in native:
            for item in (*listed, *unlisted):
                native[system].setdefault(item, bottom)
        groups |= {item: item for item in unlisted} if groups else {}
    headlines: dict[str, list[str]] = defaultdict(list)
    for system, value in stated.select("system", "stated_score").iter_rows():
        if value is not None:
            headlines[system].append(value)
    held: dict[str, str] = {}
    for system, items in native.items():
        mean = sum(items.values()) / len(items)
        for value in headlines.get(system, []):
            checked = parity(mean, value, basis=f"mean of {len(items)} items")
            if not checked.agrees:
                held[system] = checked.reason or ""
                break
    ranked = sorted(s for s in native if s not in held)
    cells = [(s, i, _unit(v, spec)) for s in ranked for i, v in native[s].items()]
    computed, matrix = None, None
    if len(ranked) >= 2:
        with_groups = groups if groups and all(i in groups for _, i, _ in cells) else None
        matrix = matrix_from_cells(cells, with_groups)
        computed = card(matrix, with_pairs=True, command=COMMAND)
    binary = all(v in (0.0, 1.0) for _, _, v in cells)
    rows: list[BoardRow] = []

    def row(system: str, rank: tuple[int | None, int | None, bool | None], reason: str | None):
        values = [_unit(v, spec) for v in native[system].values()]
        n, mean = len(values), sum(values) / len(values)
        low, high = _interval(values, binary)
        total, per = cost_per_success(costs[system], values)
        published = headlines.get(system)
        shown = None if not published else 100.0 * _unit(float(published[0]), spec)
        resolved = round(sum(values)) if binary else None
        return BoardRow(
            spec.benchmark, system, system, None, shown, n, resolved, 100.0 * mean, low, high,
            *rank, total, per, parity=reason,
        )  # fmt: skip

    if computed is not None:
        rows += [row(e.system, (e.rank_best, e.rank_worst, e.tied), None) for e in computed.entries]
    else:  # one system: nothing to compare it with
        rows += [row(s, (1, 1, False), None) for s in ranked]
    rows += [row(s, (None, None, None), held[s]) for s in sorted(held)]
    board = ItemBoard(spec.benchmark, tuple(rows), _pairs(spec.benchmark, computed, cells))
    return board, computed, matrix


def _pairs(board: str, computed: Card | None, cells: list[tuple[str, str, float]]) -> pl.DataFrame:
    """The card's pairs as `item_board_pairs` rows (the higher scored entry first)."""
    if computed is None:
        return pl.DataFrame(schema=_PAIR_SCHEMA)
    value = {(s, i): v for s, i, v in cells}
    items = sorted({i for _, i, _ in cells})
    score = {e.system: e.score for e in computed.entries}
    records: list[dict[str, Any]] = []
    for p in computed.pairs:
        a, b = (p.a, p.b) if score[p.a] >= score[p.b] else (p.b, p.a)
        shared = [i for i in items if (a, i) in value and (b, i) in value]
        wins_a = sum(1 for i in shared if value[(a, i)] > value[(b, i)])
        wins_b = sum(1 for i in shared if value[(a, i)] < value[(b, i)])
        records.append({
            "board": board, "entry_a": a, "entry_b": b, "items": len(shared),
            "discordant": wins_a + wins_b, "p_value": p.p_value, "significant": p.established,
            "better": p.better if p.established else None, "dominates": None,
            "wins_a": wins_a, "wins_b": wins_b, "entry_key_a": a, "entry_key_b": b,
        })  # fmt: skip
    return pl.DataFrame(records, schema=_PAIR_SCHEMA, orient="row")


COMMAND = "bench run (asset scores/item_boards: scores.item_matrix_boards.source_board)"
"""What computes the per-item results kind's cards, recorded on each."""


def matrix_boards(
    conn: duckdb.DuckDBPyConnection,
) -> list[tuple[ItemBoard, Card | None, Matrix | None]]:
    """Every per-item results source's board, card and matrix, from its live rows."""
    found = []
    for name, definition in sorted(source_definitions().items()):
        if definition.board is None:
            continue
        results = fetch_frame(
            conn,
            "SELECT system, item, score, item_group, cost_usd FROM item_matrix_results "
            "WHERE source = $1 ORDER BY system, item",
            [name],
        )
        if results.is_empty():
            continue
        stated = fetch_frame(
            conn,
            "SELECT system, stated_score FROM item_matrix_entries WHERE source = $1 "
            "ORDER BY system, source_file",
            [name],
        )
        found.append(source_board(name, definition.board, results, stated))
    return found


__all__ = ["matrix_boards", "source_board"]
