"""SWE-bench's board entries placed on registry models, as a host's listings are.

Entries name their model only in `Model: …` tags. An entry naming exactly one model is
matched as a host's listing is: against the models every source's candidates make, strictly,
and never founding a model; an entry naming several models, or one the rules cannot place,
gets none. The registry asset places them while it builds the registry (one index for both)
and stores the answer in `swebench_entry_models`, which the item boards read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import duckdb

from bench_pipeline.ingest.parsers.swebench import model_tags
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.matching import Candidate

SOURCE = "swebench"
ORG_TAG = "Org: "


def entry_tags(conn: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Every entry of a leaderboard with per-item results, by `leaderboard NUL folder`:
    its tags (the entries the item boards rank)."""
    rows = conn.execute(
        "SELECT leaderboard, folder, tags FROM swebench_entries "
        "WHERE leaderboard IN (SELECT DISTINCT leaderboard FROM swebench_item_results) "
        "ORDER BY leaderboard, folder"
    ).fetchall()
    return {f"{board}\0{folder}": json.loads(tags or "[]") for board, folder, tags in rows}


def entry_listings(
    tags: Mapping[str, list[str]], labs: Labs
) -> tuple[list[Candidate], dict[str, str]]:
    """The host listings the entries' tags make (one per distinct model and organisation),
    and the listing key of each entry that names exactly one model."""
    listing_of = {}
    for key, listed in tags.items():
        found = model_tags(listed)
        if len(found) == 1:
            listing_of[key] = f"{_org(listed) or ''}\0{found[0]}"
    probes = sorted(set(listing_of.values()))
    listings = []
    for probe in probes:
        org, _, name = probe.partition("\0")
        listings.append(
            Candidate(
                source=SOURCE, key=probe, name=name,
                provider_ids=(name,) if "/" in name else (), organization=org or None,
                lab=labs.lab(org or None), role="host", host=SOURCE, api_ids=(name,),
            )
        )  # fmt: skip
    return listings, listing_of


def entries_placed(
    tags: Mapping[str, list[str]], listing_of: Mapping[str, str], matched: Mapping[str, str | None]
) -> dict[str, str | None]:
    """Each entry key's model, from its listing's match (None: no single model, or none)."""
    return {key: matched.get(listing_of[key]) if key in listing_of else None for key in tags}


def stored_entry_models(conn: duckdb.DuckDBPyConnection) -> dict[str, str | None]:
    """The entries' models the registry asset stored, by `leaderboard NUL folder`."""
    rows = conn.execute(
        "SELECT leaderboard, folder, model_id FROM swebench_entry_models"
    ).fetchall()
    return {f"{board}\0{folder}": model_id for board, folder, model_id in rows}


def _org(tags: Sequence[str]) -> str | None:
    orgs = [t[len(ORG_TAG) :].strip() for t in tags if t.startswith(ORG_TAG)]
    return orgs[0] if len(orgs) == 1 else None
