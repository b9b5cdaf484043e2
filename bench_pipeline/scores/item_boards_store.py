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

from bench_pipeline.ingest.parsers.swebench import model_tags
from bench_pipeline.registry.candidates import all_candidates, catalogue_labs
from bench_pipeline.registry.matching import AliasFile, Candidate, build_registry
from bench_pipeline.scores.item_boards import (
    BoardEntry,
    ItemBoard,
    ItemResult,
    board_frames,
    item_board,
)

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
    registry = build_registry([*all_candidates(conn, aliases), *candidates], aliases)
    matched = {a.key: a.model_id for a in registry.aliases if a.source == SOURCE}
    return {
        key: matched.get(f"{organisation[key] or ''}\0{single[key]}") if key in single else None
        for key in tags
    }


def _org(tags: list[str]) -> str | None:
    orgs = [t[len(ORG_TAG) :].strip() for t in tags if t.startswith(ORG_TAG)]
    return orgs[0] if len(orgs) == 1 else None


def load_boards(conn: duckdb.DuckDBPyConnection, aliases: AliasFile) -> list[ItemBoard]:
    """One board per leaderboard that has per-item results, with all its entries."""
    entries = conn.execute(
        "SELECT leaderboard, folder, entry, resolved_percent, tags FROM swebench_entries "
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
