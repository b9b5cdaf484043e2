"""Item boards from the warehouse: SWE-bench's live tables in, `item_boards` and
`item_board_pairs` out. Entries name their model only in `Model: …` tags; they get the
registry model the registry asset placed them on (`registry.entries`: an entry that names
several models, or a name the rules cannot place, keeps `model_id` empty: a board entry
never creates a model)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Sequence
from decimal import Decimal
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.registry.entries import SOURCE, stored_entry_models
from bench_pipeline.scores.board_matrix import ItemResults
from bench_pipeline.scores.card import (
    Card,
    Matrix,
    PairStatistics,
    card,
    matrix_from_cells,
    pair_statistics,
)
from bench_pipeline.scores.item_boards import (
    BoardEntry,
    ItemBoard,
    board_frames,
    board_from_results,
)
from bench_pipeline.scores.item_matrix_boards import matrix_boards
from bench_pipeline.scores.navigator import cost_per_success

TABLES = ("item_boards", "item_board_pairs", "item_board_cards", "item_board_rank_sets")
__all__ = ["SOURCE", "TABLES", "card_frames", "item_board_frames", "load_boards"]

REPOSITORY = re.compile(r"^(.*)-\d+$")
"""A SWE-bench instance's group: its repository, the id before the last `-<number>`."""


def load_boards(conn: duckdb.DuckDBPyConnection) -> list[ItemBoard]:
    """One board per leaderboard that has per-item results, with all its entries.

    Each entry's model is the one the registry asset stored (`swebench_entry_models`,
    placed from its own build). The per-item results are read as columns (an entry and an
    item code per row) and each entry's cost totals are summed by the warehouse, exactly
    (DECIMAL): no Python object per item result.
    """
    entries = conn.execute(
        "SELECT leaderboard, folder, entry, resolved_percent FROM swebench_entries "
        "WHERE leaderboard IN (SELECT DISTINCT leaderboard FROM swebench_item_results) "
        "ORDER BY leaderboard, folder"
    ).fetchall()
    models = stored_entry_models(conn)
    by_board: dict[str, list[BoardEntry]] = defaultdict(list)
    for leaderboard, folder, name, percent in entries:
        by_board[leaderboard].append(
            BoardEntry(
                key=folder,
                entry=name,
                model_id=models.get(f"{leaderboard}\0{folder}"),
                published_percent=percent,
            )
        )
    index = {(b, e.key): i for b, listed in by_board.items() for i, e in enumerate(listed)}
    costs: dict[str, dict[int, tuple[Decimal | None, Decimal | None]]] = defaultdict(dict)
    for leaderboard, folder, items, priced, total, resolved in conn.execute(
        "SELECT leaderboard, folder, count(*), count(cost_usd), sum(cost_usd), "
        "count(*) FILTER (WHERE resolved) FROM swebench_item_results GROUP BY ALL"
    ).fetchall():
        if (leaderboard, folder) in index:
            # The one rule (`cost_per_success`) on the exact total: unknown when any item
            # has no cost; Σ of 0/1 outcomes is the count resolved.
            known = total if priced == items else None
            costs[leaderboard][index[(leaderboard, folder)]] = cost_per_success(
                [known], [float(resolved)]
            )
    return [
        board_from_results(board, listed, _results(conn, board, index), costs[board])
        for board, listed in sorted(by_board.items())
    ]


def _results(
    conn: duckdb.DuckDBPyConnection, board: str, index: dict[tuple[str, str], int]
) -> ItemResults:
    """The board's per-item results as columns: entry index, item code, resolved."""
    # Items are numbered through the board's few hundred distinct ids: a window over its
    # result rows (625,000 at 50x the recorded data) sorted them all, at 7x the cost.
    frame = fetch_frame(
        conn,
        "WITH items AS (SELECT instance_id, row_number() OVER (ORDER BY instance_id) AS item "
        "FROM (SELECT DISTINCT instance_id FROM swebench_item_results WHERE leaderboard = $1)) "
        "SELECT r.folder, i.item, r.resolved FROM swebench_item_results r "
        "JOIN items i USING (instance_id) WHERE r.leaderboard = $1",
        [board],
    )
    folders = pl.DataFrame(
        {
            "folder": [folder for (b, folder) in index if b == board],
            "entry": [i for (b, _), i in index.items() if b == board],
        },
        schema={"folder": pl.String, "entry": pl.Int64},
    )
    joined = frame.join(folders, on="folder", how="inner")
    return ItemResults(
        entry=joined["entry"].to_numpy(),
        item=joined["item"].cast(pl.Int64).to_numpy(),
        resolved=joined["resolved"].to_numpy(),
    )


def held_entries(boards: Sequence[ItemBoard]) -> set[tuple[str, str]]:
    """(board, entry key) of every entry parity keeps from a rank (`scores.parity`)."""
    return {(b.board, r.key) for b in boards for r in b.rows if r.parity is not None}


def card_row(board: str, computed: Card) -> dict[str, Any]:
    """A board's row of `item_board_cards`."""
    resolution = computed.resolution
    return {
        "board": board, "systems": computed.systems, "items": computed.items,
        "data_type": computed.data_type, "matrix_sha256": computed.matrix_sha256,
        "missing_cells": computed.missing_cells, "groups": computed.groups,
        "draws": computed.draws, "seed": computed.seed,
        "pairs_total": computed.pairs_total,
        "pairs_established": computed.pairs_established,
        "established_share": computed.established_share,
        "tiers_height": computed.tiers.height,
        "largest_antichain": computed.tiers.largest_antichain,
        "discordance": computed.discordance.mean_carrying_items,
        "discordance_top_decile": computed.discordance.top_decile_mean_carrying_items,
        "resolution_gap_50": None if resolution is None else resolution.gap_50,
        "resolution_gap_80": None if resolution is None else resolution.gap_80,
        "alpha": computed.alpha, "adjacent_pairs": computed.adjacent_pairs,
        "adjacent_undecided": computed.adjacent_undecided,
        "top_decile_entries": computed.discordance.top_decile_systems,
        "discordance_share": computed.discordance.mean_share,
        "discordance_top_decile_share": computed.discordance.top_decile_mean_share,
        "pair_test": _pair_test(computed),
        "resolution_threshold": None if resolution is None else resolution.threshold,
        "resolution_replicates": None if resolution is None else resolution.replicates,
        "self_checks": "; ".join(f"{c.name}: {c.detail}" for c in computed.self_checks),
        "software": computed.software, "command": computed.command,
    }  # fmt: skip


def _pair_test(computed: Card) -> str:
    """The paired test the card's pairs were tested with: the exact binomial on pass/fail,
    else the tests its pairs name (or, without pairs, the sign-flip family)."""
    if computed.data_type == "binary":
        return "exact binomial"
    named = sorted({p.test for p in computed.pairs})
    return "; ".join(named) if named else "exact sign-flip, or its normal approximation"


def rank_set_rows(board: str, computed: Card) -> list[dict[str, Any]]:
    """A board's rows of `item_board_rank_sets`, one per entry of its card."""
    return [
        {
            "board": board, "entry_key": e.system, "rank_set_low": e.rank_set_low,
            "rank_set_high": e.rank_set_high, "group_rank_set_low": e.group_rank_set_low,
            "group_rank_set_high": e.group_rank_set_high, "tier": e.tier,
        }
        for e in computed.entries
    ]  # fmt: skip


def card_frames(
    conn: duckdb.DuckDBPyConnection,
    held: Collection[tuple[str, str]] | None = None,
    extra: Sequence[tuple[str, Card, Matrix]] = (),
) -> dict[str, pl.DataFrame]:
    """`item_board_cards` (one row per board) and `item_board_rank_sets` (one per entry
    with per-item results): each board's reporting card (`scores.card`), from the same
    per-item results, the instances grouped by repository; and `pair_statistics`, the
    cards' per-pair figures keyed by board and entry keys in both orders (the
    difference signed for the order), for `item_board_pairs`. A card whose self-check fails
    raises `CardRefused`, and the run publishes nothing. The entries `held` (board, key)
    disagree with their published score (parity before rank): they have no rank set
    (None: read from the boards)."""
    if held is None:
        held = held_entries(load_boards(conn))
    boards, entries, pairs = [], [], []
    results = fetch_frame(
        conn,
        "SELECT leaderboard, folder, instance_id, resolved FROM swebench_item_results "
        "ORDER BY leaderboard",
    )
    for (board,), rows in results.group_by(["leaderboard"], maintain_order=True):
        cells = [
            (folder, instance, 1.0 if resolved else 0.0)
            for folder, instance, resolved in rows.select(
                "folder", "instance_id", "resolved"
            ).iter_rows()
            if (board, folder) not in held  # parity before rank: no rank set either
        ]
        groups = {}
        for _, instance, _ in cells:
            match = REPOSITORY.match(instance)
            groups[instance] = match.group(1) if match else instance
        matrix = matrix_from_cells(cells, groups)
        computed = card(matrix, with_pairs=False, command=COMMAND)
        pairs.append(_pair_statistics(board, matrix.systems, pair_statistics(matrix.values)))
        boards.append(card_row(board, computed))
        entries += rank_set_rows(board, computed)
    for board, computed, matrix in extra:
        pairs.append(_pair_statistics(board, matrix.systems, pair_statistics(matrix.values)))
        boards.append(card_row(board, computed))
        entries += rank_set_rows(board, computed)
    return {
        "item_board_cards": pl.DataFrame(boards, schema=_CARD_SCHEMA, orient="row"),
        "item_board_rank_sets": pl.DataFrame(entries, schema=_RANK_SET_SCHEMA, orient="row"),
        "pair_statistics": pl.concat(pairs) if pairs else pl.DataFrame(schema=_PAIR_STATISTICS),
    }


COMMAND = "bench run (asset scores/item_boards: scores.item_boards_store.card_frames)"
"""What computes the published cards, recorded on each."""
PAIR_FIGURES = ("difference", "sd", "kappa", "smallest_separable_gap")
"""The card's per-pair figures `item_board_pairs` carries beside its own test."""


def _pair_statistics(board: str, systems: tuple[str, ...], found: PairStatistics) -> pl.DataFrame:
    """The card's pair figures as rows keyed (board, entry_key_a, entry_key_b), each pair in
    both orders: the difference is x[entry_key_a] − x[entry_key_b]; NaN becomes null."""
    keys = pl.Series(systems, dtype=pl.String)
    a, b = keys.gather(found.a), keys.gather(found.b)
    figures = {
        name: pl.Series(getattr(found, name), dtype=pl.Float64).fill_nan(None)
        for name in PAIR_FIGURES
    }
    forward = pl.DataFrame(
        {
            "board": pl.repeat(board, a.len(), dtype=pl.String, eager=True),
            "entry_key_a": a,
            "entry_key_b": b,
            **figures,
        }
    )
    backward = forward.with_columns(
        entry_key_a=forward["entry_key_b"],
        entry_key_b=forward["entry_key_a"],
        difference=-forward["difference"],
    )
    return pl.concat([forward, backward]).cast(_PAIR_STATISTICS)  # type: ignore[arg-type]


_CARD_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "board": pl.String, "systems": pl.Int64, "items": pl.Int64, "data_type": pl.String,
    "matrix_sha256": pl.String, "missing_cells": pl.Int64, "groups": pl.Int64,
    "draws": pl.Int64, "seed": pl.Int64, "pairs_total": pl.Int64,
    "pairs_established": pl.Int64, "established_share": pl.Float64,
    "tiers_height": pl.Int64, "largest_antichain": pl.Int64, "discordance": pl.Float64,
    "discordance_top_decile": pl.Float64, "resolution_gap_50": pl.Float64,
    "resolution_gap_80": pl.Float64, "alpha": pl.Float64, "adjacent_pairs": pl.Int64,
    "adjacent_undecided": pl.Int64, "top_decile_entries": pl.Int64,
    "discordance_share": pl.Float64, "discordance_top_decile_share": pl.Float64,
    "pair_test": pl.String, "resolution_threshold": pl.Float64,
    "resolution_replicates": pl.Int64, "self_checks": pl.String, "software": pl.String,
    "command": pl.String,
}  # fmt: skip
_RANK_SET_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "board": pl.String, "entry_key": pl.String, "rank_set_low": pl.Int64,
    "rank_set_high": pl.Int64, "group_rank_set_low": pl.Int64, "group_rank_set_high": pl.Int64,
    "tier": pl.Int64,
}  # fmt: skip
_PAIR_STATISTICS: dict[str, pl.DataType | type[pl.DataType]] = {
    "board": pl.String, "entry_key_a": pl.String, "entry_key_b": pl.String,
    **dict.fromkeys(PAIR_FIGURES, pl.Float64),
}  # fmt: skip


def item_board_frames(conn: duckdb.DuckDBPyConnection) -> dict[str, pl.DataFrame]:
    """The published tables, recomputed from the live tables and the entries' models: the
    boards, their pairs (with the card's per-pair figures) and their cards."""
    boards = load_boards(conn)
    held = held_entries(boards)
    others = matrix_boards(conn)  # the per-item results source kind
    extra = [
        (board.board, computed, matrix)
        for board, computed, matrix in others
        if computed is not None and matrix is not None
    ]
    frames = board_frames([*boards, *(board for board, _, _ in others)])
    cards = card_frames(conn, held, extra)
    figures = cards.pop("pair_statistics")
    frames["item_board_pairs"] = frames["item_board_pairs"].join(
        figures, on=["board", "entry_key_a", "entry_key_b"], how="left"
    )
    return frames | cards
