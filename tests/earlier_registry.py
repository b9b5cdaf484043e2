"""The registry's rules as they were before their fast paths, kept as oracles: the host-id rule
the sameness tests compare `forms.unwrap_host_id` and the registry tables with, and the
placing of SWE-bench entries by a registry rebuilt without hosts (the item boards did this
before the registry asset stored its own answer)."""

from __future__ import annotations

import duckdb

from bench_pipeline.registry.candidates import all_candidates, catalogue_labs
from bench_pipeline.registry.entries import entries_placed, entry_listings
from bench_pipeline.registry.forms import HOST_SUFFIX, REVISION
from bench_pipeline.registry.matching import AliasFile, host_matches


def old_unwrap_host_id(identifier: str, prefixes: tuple[str, ...]) -> tuple[str, ...]:
    text = identifier
    changed = True
    while changed:
        changed = False
        for prefix in prefixes:
            for joiner in ("/", ".", "-"):
                if text.lower().startswith(prefix.lower() + joiner) and len(text) > len(prefix) + 1:
                    text, changed = text[len(prefix) + 1 :], True
    forms = [text, REVISION.sub("", text), HOST_SUFFIX.sub("", text)]
    return tuple(dict.fromkeys(f for f in forms if f))


def entry_models(
    conn: duckdb.DuckDBPyConnection, aliases: AliasFile, tags: dict[str, list[str]]
) -> dict[str, str | None]:
    """Each entry key's registry model from its tags (`Model: …`, `Org: …`), by the
    registry's own rules, with the registry rebuilt (deterministically: its model ids are
    the stored ones) without the hosts' listings (`host_matches`). The registry asset gets
    the same answer from its own build (`matching.registry_placing`)."""
    listings, listing_of = entry_listings(tags, catalogue_labs(conn, aliases))
    if not listings:
        return dict.fromkeys(tags)
    matched = host_matches(all_candidates(conn, aliases, hosts=False), aliases, listings)
    return entries_placed(tags, listing_of, matched)
