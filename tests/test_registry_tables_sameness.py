"""The registry tables are row for row what the code before indexed host lookups wrote.

The oracle is that code, kept here: host-id unwrapping remembered and with both suffix
passes always run, every host listing matched on its own, and the tables built from one dict
per row. It is compared on the recorded snapshots (and with what the asset stored), on the
recorded listings enlarged as `benchmarks.enlarge_snapshots` enlarges the sources, and on
random listings where many hosts list one model alike.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import shutil
from functools import lru_cache

import duckdb
import polars as pl
import pytest
from earlier_registry import entry_models, old_unwrap_host_id
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from bench_pipeline.core import settings as bench_settings
from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.ingest.catalog import evaluations
from bench_pipeline.registry import candidates as candidates_module
from bench_pipeline.registry import matching
from bench_pipeline.registry.candidates import all_candidates
from bench_pipeline.registry.entries import entry_tags
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.matching import (
    AliasEntry,
    AliasFile,
    Candidate,
    Registry,
    host_matches,
    registry_placing,
)
from bench_pipeline.registry.store import rebuild_registry, registry_frames
from benchmarks.enlarge_snapshots import renamed

pytestmark = pytest.mark.assets

TABLES = ("models", "model_aliases", "unmatched_models", "quarantined_models")


cached_old_unwrap_host_id = lru_cache(maxsize=1 << 18)(old_unwrap_host_id)


def old_build_registry(candidates: list[Candidate], aliases: AliasFile) -> Registry:
    registry, index = matching._founded(candidates, aliases)
    for candidate in sorted((c for c in candidates if c.role == "host"), key=lambda c: c.key):
        found = matching._match(candidate, aliases, index, strict=True)
        if found.model_id not in registry.models:
            reason = found.reason or f"the alias file names {found.model_id!r}, no model"
            registry.unmatched.append(matching._unmatched(candidate, None, reason))
            continue
        registry.aliases.append(matching._alias(candidate, found, aliases))
    matching._disambiguate_names(registry)
    return registry


def _old_frame(rows: list[dict], columns: list[str]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={c: pl.Utf8 for c in columns}, orient="row")


def old_frames(registry: Registry) -> dict[str, pl.DataFrame]:
    return {
        "models": _old_frame(
            [vars(m) for m in registry.models.values()],
            ["model_id", "name", "organization", "origin_source", "origin_key", "lab"],
        ),
        "model_aliases": _old_frame(
            [
                {
                    "source": a.source, "source_key": a.key, "model_id": a.model_id,
                    "method": a.method, "name": a.name,
                    "settings": json.dumps(dict(a.settings), sort_keys=True)
                    if a.settings else None,
                    "host": a.host, "evidence": a.evidence,
                }
                for a in registry.aliases
            ],
            ["source", "source_key", "model_id", "method", "name", "settings", "host",
             "evidence"],
        ),
        "unmatched_models": _old_frame(
            [
                {
                    "source": u.source, "source_key": u.key, "name": u.name,
                    "normalised_name": u.normalised_name, "model_id": u.model_id,
                    "reason": u.reason, "lab": u.lab,
                }
                for u in registry.unmatched
            ],
            ["source", "source_key", "name", "normalised_name", "model_id", "reason", "lab"],
        ),
        "quarantined_models": _old_frame(
            [
                {"source": q.source, "source_key": q.key, "name": q.name,
                 "resembles": q.resembles, "reason": q.reason}
                for q in registry.quarantined
            ],
            ["source", "source_key", "name", "resembles", "reason"],
        ),
    }  # fmt: skip


def _assert_same(new: dict[str, pl.DataFrame], old: dict[str, pl.DataFrame]) -> None:
    for table in TABLES:
        assert_frame_equal(new[table].select(old[table].columns), old[table], check_exact=True)


def _old_candidates(conn, aliases: AliasFile, monkeypatch: pytest.MonkeyPatch) -> list[Candidate]:
    with monkeypatch.context() as patch:
        patch.setattr(candidates_module, "unwrap_host_id", cached_old_unwrap_host_id)
        return all_candidates(conn, aliases)


@pytest.fixture(scope="module")
def aliases() -> AliasFile:
    return AliasFile.load(bench_settings.sources_dir() / "aliases.toml")


def test_the_recorded_registry_tables_are_the_old_codes(
    recorded_warehouse, aliases, monkeypatch
) -> None:
    listed = all_candidates(recorded_warehouse, aliases)
    assert listed == _old_candidates(recorded_warehouse, aliases, monkeypatch)
    old = old_frames(old_build_registry(listed, aliases))
    new, _ = registry_placing(listed, aliases, ())
    _assert_same(registry_frames(new), old)
    assert old["unmatched_models"].filter(pl.col("model_id").is_null()).height > 0  # hosts
    stored = {t: fetch_frame(recorded_warehouse, f"SELECT * FROM {t}") for t in TABLES}
    _assert_same(stored, old)  # what the asset wrote, in the order it wrote it
    tags = entry_tags(recorded_warehouse)
    placed = dict(
        recorded_warehouse.execute(
            "SELECT leaderboard || chr(0) || folder, model_id FROM swebench_entry_models"
        ).fetchall()
    )
    assert placed == entry_models(recorded_warehouse, aliases, tags)


def test_hosts_names_left_unread_change_no_candidate(
    recorded_warehouse, aliases, monkeypatch
) -> None:
    """`models_dev` reads names only of the providers that `may_own`: with every provider
    read, the candidates are the same."""
    listed = all_candidates(recorded_warehouse, aliases)
    assert any(c.role == "lab" and c.organization for c in listed)
    with monkeypatch.context() as patch:
        patch.setattr(Labs, "may_own", lambda self, provider: True)
        assert all_candidates(recorded_warehouse, aliases) == listed


def test_a_rebuild_writes_the_stored_tables_and_no_collection_walks_it(
    recorded_warehouse, aliases, tmp_path
) -> None:
    """`rebuild_registry` keeps the cycle collector paused until its build is freed: no
    collection runs while it builds and writes, and it writes what the asset stored."""
    (stored_file,) = recorded_warehouse.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    copy = tmp_path / "bench.duckdb"
    shutil.copyfile(stored_file, copy)
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    was_on = gc.isenabled()
    gc.enable()
    conn = duckdb.connect(str(copy))
    gc.callbacks.append(seen)
    try:
        rebuild_registry(conn, aliases, evaluations())
    finally:
        gc.callbacks.remove(seen)
        (gc.enable if was_on else gc.disable)()
    assert collections == []
    for table in (*TABLES, "evaluation_scores", "swebench_entry_models"):
        query = (
            f"SELECT * FROM {table} ORDER BY ALL"
            if table == "evaluation_scores"
            else (f"SELECT * FROM {table}")
        )
        assert_frame_equal(fetch_frame(conn, query), fetch_frame(recorded_warehouse, query))
    conn.close()


def enlarged(listed: list[Candidate], copies: int) -> list[Candidate]:
    """The listings `copies` times, each copy renamed as the enlarged snapshots rename them
    (the same suffix for one copy in every source, so copies still match across sources)."""
    return [
        dataclasses.replace(
            c,
            key=renamed(c.key, copy),
            name=renamed(c.name, copy),
            provider_ids=tuple(renamed(i, copy) for i in c.provider_ids),
            api_ids=tuple(renamed(i, copy) for i in c.api_ids),
        )
        for copy in range(copies)
        for c in listed
    ]


def test_an_enlarged_registry_is_the_old_codes(recorded_warehouse, aliases) -> None:
    recorded = all_candidates(recorded_warehouse, aliases)
    listed = enlarged(recorded, 6)
    old = old_build_registry(listed, aliases)
    new, _ = registry_placing(listed, aliases, ())
    _assert_same(registry_frames(new), old_frames(old))
    hosts = [c for c in listed if c.role == "host"]
    assert len({(c.lab, c.name, c.provider_ids, c.api_ids) for c in hosts}) < len(hosts)
    assert len(old.models) > 5 * len(old_build_registry(recorded, aliases).models)


IDS = ["openai/gpt-4o", "openai/gpt-4о", "anthropic/claude-opus-4.5", "x/y", "x/y-v1:0"]
API_IDS = ["gpt-4o", "gpt-4o-2024-05-13", "claude-opus-4-5", "nova-v1:0", "y@default"]
listing = st.builds(
    Candidate,
    source=st.sampled_from(["openrouter_models", "models_dev", "epoch", "arena"]),
    key=st.sampled_from([*IDS, "a", "b", "c", "d", "e"]),
    name=st.none() | st.sampled_from(["GPT-4o", "GPT-4o (EU)", "Claude Opus 4.5", "Y"]),
    provider_ids=st.lists(st.sampled_from(IDS), max_size=2).map(tuple),
    lab=st.none() | st.sampled_from(["openai", "anthropic", "x"]),
    role=st.sampled_from(["catalogue", "variant", "lab", "host", "host", "host", "score"]),
    api_ids=st.lists(st.sampled_from(API_IDS), max_size=2).map(tuple),
    host=st.none() | st.sampled_from(["bedrock", "vertex"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(listing, max_size=30, unique_by=lambda c: (c.source, c.key)),
    st.lists(st.sampled_from(["a", "b", "c", *IDS]), max_size=3),
    st.lists(listing.map(lambda c: dataclasses.replace(c, source="probe", role="host")),
             max_size=4, unique_by=lambda c: c.key),
)  # fmt: skip
def test_hosts_alike_get_the_old_answers(
    listed: list[Candidate], chosen: list[str], probes: list[Candidate]
) -> None:
    """Hosts listing one model alike (same lab, name and ids) share one lookup; a host the
    alias file names is still looked up on its own."""
    entries = {("models_dev", k): AliasEntry("models_dev", k, "openai/gpt-4o") for k in chosen}
    aliases = AliasFile(entries=entries, setting_suffixes={})
    new, placed = registry_placing(listed, aliases, probes)
    old = old_build_registry(listed, aliases)
    assert new == old
    _assert_same(registry_frames(new), old_frames(old))
    assert placed == host_matches(listed, aliases, probes)
