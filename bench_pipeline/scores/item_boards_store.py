"""Item boards from the warehouse: SWE-bench's live tables in, `item_boards` and
`item_board_pairs` out. Entries name their model only in `Model: …` tags; they get a registry
model when the identity rules match the tag to a model already in the registry (an entry that
names several models, or a name the rules cannot place, keeps `model_id` empty: a board
entry never creates a model)."""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.ingest.parsers.swebench import model_tags
from bench_pipeline.registry.candidates import all_candidates, catalogue_labs
from bench_pipeline.registry.matching import AliasFile, Candidate, host_matches
from bench_pipeline.scores.board_matrix import ItemResults
from bench_pipeline.scores.item_boards import (
    BoardEntry,
    ItemBoard,
    board_frames,
    board_from_results,
)
from bench_pipeline.scores.navigator import cost_per_success

SOURCE = "swebench"
ORG_TAG = "Org: "
TABLES = ("item_boards", "item_board_pairs")


def entry_models(
    conn: duckdb.DuckDBPyConnection, aliases: AliasFile, tags: dict[str, list[str]]
) -> dict[str, str | None]:
    """Each entry key's registry model from its tags (`Model: …`, `Org: …`), by the
    registry's own rules.

    An entry naming exactly one model is matched as a host's listing is: against the models
    every source's candidates make (the registry is rebuilt deterministically, so its model
    ids are the stored ones), strictly, and never founding a model. An entry naming several
    models, or none the rules place, keeps `model_id` empty.
    """
    models = {key: model_tags(listed) for key, listed in tags.items()}
    organisation = {key: _org(listed) for key, listed in tags.items()}
    single = {key: found[0] for key, found in models.items() if len(found) == 1}
    probes = {(name, organisation[key]) for key, name in single.items()}
    if not probes:
        return dict.fromkeys(tags)
    labs = catalogue_labs(conn, aliases)
    candidates = [
        Candidate(
            source=SOURCE, key=f"{org or ''}\0{name}", name=name,
            provider_ids=(name,) if "/" in name else (), organization=org, lab=labs.lab(org),
            role="host", host=SOURCE, api_ids=(name,),
        )
        for name, org in sorted(probes, key=lambda p: (p[0], p[1] or ""))
    ]  # fmt: skip
    # The registry these host listings would join, built once without them (hosts never
    # found models): the same answer as rebuilding it with them, at half the cost.
    matched = host_matches(all_candidates(conn, aliases, hosts=False), aliases, candidates)
    return {
        key: matched.get(f"{organisation[key] or ''}\0{single[key]}") if key in single else None
        for key in tags
    }


def _org(tags: list[str]) -> str | None:
    orgs = [t[len(ORG_TAG) :].strip() for t in tags if t.startswith(ORG_TAG)]
    return orgs[0] if len(orgs) == 1 else None


def load_boards(conn: duckdb.DuckDBPyConnection, aliases: AliasFile) -> list[ItemBoard]:
    """One board per leaderboard that has per-item results, with all its entries.

    The per-item results are read as columns (an entry and an item code per row) and each
    entry's cost totals are summed by the warehouse, exactly (DECIMAL): no Python object per
    item result.
    """
    entries = conn.execute(
        "SELECT leaderboard, folder, entry, resolved_percent, tags FROM swebench_entries "
        "WHERE leaderboard IN (SELECT DISTINCT leaderboard FROM swebench_item_results) "
        "ORDER BY leaderboard, folder"
    ).fetchall()
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
    frame = fetch_frame(
        conn,
        "SELECT folder, dense_rank() OVER (ORDER BY instance_id) AS item, resolved "
        "FROM swebench_item_results WHERE leaderboard = ?",
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


def item_board_frames(conn: duckdb.DuckDBPyConnection, alias_path: Path) -> dict[str, pl.DataFrame]:
    """The two published tables, recomputed from the live tables."""
    return board_frames(load_boards(conn, AliasFile.load(alias_path)))
