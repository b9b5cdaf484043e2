"""Item boards from the warehouse: SWE-bench's live tables in, `item_boards` and
`item_board_pairs` out. Entries name their model only in `Model: …` tags; they get a registry
model when the identity rules match the tag to a model already in the registry (an entry that
names several models, or a name the rules cannot place, keeps `model_id` empty: a board
entry never creates a model)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import duckdb
import polars as pl

from bench_pipeline.registry.candidates import all_candidates
from bench_pipeline.registry.matching import AliasFile, Candidate, build_registry
from bench_pipeline.scores.item_boards import (
    BoardEntry,
    ItemBoard,
    ItemResult,
    board_frames,
    item_board,
)

SOURCE = "swebench"
TABLES = ("item_boards", "item_board_pairs")


def entry_models(
    conn: duckdb.DuckDBPyConnection, aliases: AliasFile, tags: dict[str, list[str]]
) -> dict[str, str | None]:
    """Each entry key's registry model from its model tags, by the registry's own rules.

    The registry is rebuilt from every source's candidates (deterministically, so its model
    ids are the stored ones) with one candidate per single-model entry appended: those the
    rules match (alias file, provider id, normalised name) get the model; a new one does not.
    """
    single = {key: models[0] for key, models in tags.items() if len(models) == 1}
    names = sorted(set(single.values()))
    if not names:
        return dict.fromkeys(tags)
    probes = [Candidate(source=SOURCE, key=name, name=name, provider_ids=(name,)) for name in names]
    registry = build_registry([*all_candidates(conn, aliases), *probes], aliases)
    # A probe that matched another probe's new model matched nothing already registered.
    matched = {
        a.key: a.model_id
        for a in registry.aliases
        if a.source == SOURCE and registry.models[a.model_id].origin_source != SOURCE
    }
    return {key: matched.get(single[key]) if key in single else None for key in tags}


def load_boards(conn: duckdb.DuckDBPyConnection, aliases: AliasFile) -> list[ItemBoard]:
    """One board per leaderboard that has per-item results, with all its entries."""
    entries = conn.execute(
        "SELECT leaderboard, folder, entry, resolved_percent, model_tags FROM swebench_entries "
        "WHERE leaderboard IN (SELECT DISTINCT leaderboard FROM swebench_item_results) "
        "ORDER BY leaderboard, folder"
    ).fetchall()
    items: dict[tuple[str, str], dict[str, ItemResult]] = defaultdict(dict)
    for leaderboard, folder, instance, resolved, cost in conn.execute(
        "SELECT leaderboard, folder, instance_id, resolved, cost_usd FROM swebench_item_results "
        "ORDER BY leaderboard, folder, instance_id"
    ).fetchall():
        items[(leaderboard, folder)][instance] = ItemResult(bool(resolved), cost)
    tags = {f"{b}\0{f}": json.loads(t or "[]") for b, f, _, _, t in entries}
    models = entry_models(conn, aliases, tags)
    by_board: dict[str, list[BoardEntry]] = defaultdict(list)
    for leaderboard, folder, name, percent, _ in entries:
        by_board[leaderboard].append(
            BoardEntry(
                key=folder,
                entry=name,
                model_id=models[f"{leaderboard}\0{folder}"],
                published_percent=percent,
                items=items.get((leaderboard, folder), {}),
            )
        )
    return [item_board(board, listed) for board, listed in sorted(by_board.items())]


def item_board_frames(conn: duckdb.DuckDBPyConnection, alias_path: Path) -> dict[str, pl.DataFrame]:
    """The two published tables, recomputed from the live tables."""
    return board_frames(load_boards(conn, AliasFile.load(alias_path)))
