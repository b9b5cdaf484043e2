"""Each source's models as matching candidates, read from the live tables, strongest first."""

from __future__ import annotations

import duckdb

from bench_pipeline.registry.matching import AliasFile, Candidate


def _display_name(name: str | None) -> str | None:
    """OpenRouter writes "Author: Model"; the author is not part of the model's name."""
    if name and ": " in name:
        return name.split(": ", 1)[1]
    return name


def _slug(model_id: str) -> str:
    return model_id.split("/", 1)[-1]


def openrouter(conn: duckdb.DuckDBPyConnection) -> list[Candidate]:
    """Plain ids first, so that `:free`/`:batch` variants and `~…-latest` aliases find them."""
    rows = conn.execute(
        "SELECT model_id, canonical_slug, name, alias_target FROM openrouter_models "
        "ORDER BY (contains(model_id, ':') OR starts_with(model_id, '~')), model_id"
    ).fetchall()
    candidates = []
    for model_id, canonical, name, alias_target in rows:
        base = model_id.split(":", 1)[0]
        ids = [model_id] if base == model_id else [model_id, base]
        ids += [i for i in (canonical, alias_target) if i]
        if not model_id.startswith("~"):
            ids.append(_slug(base))
        candidates.append(
            Candidate(
                source="openrouter_models",
                key=model_id,
                name=_display_name(name),
                provider_ids=tuple(dict.fromkeys(ids)),
                organization=model_id.lstrip("~").split("/", 1)[0],
            )
        )
    return candidates


def models_dev(conn: duckdb.DuckDBPyConnection) -> list[Candidate]:
    """models.dev's own OpenRouter entries first (their ids are OpenRouter ids)."""
    rows = conn.execute(
        "SELECT provider_id, model_id, name FROM modelsdev_models "
        "ORDER BY provider_id <> 'openrouter', provider_id, model_id"
    ).fetchall()
    return [
        Candidate(
            source="models_dev",
            key=f"{provider}/{model}",
            name=name,
            provider_ids=(model,) if provider == "openrouter" else (f"{provider}/{model}", model),
        )
        for provider, model, name in rows
    ]


def epoch(conn: duckdb.DuckDBPyConnection, aliases: AliasFile) -> list[Candidate]:
    """Model versions that hold scores, named by Epoch's display name where it has one."""
    rows = conn.execute(
        "SELECT DISTINCT r.model_version, coalesce(m.display_name, m.model_name), "
        "coalesce(r.organization, m.organization) FROM evaluation_rows r "
        "LEFT JOIN epoch_models m USING (model_version) ORDER BY r.model_version"
    ).fetchall()
    candidates = []
    for version, display, organization in rows:
        base, settings = aliases.split_settings("epoch", version)
        candidates.append(
            Candidate(
                source="epoch",
                key=version,
                name=display or base,
                provider_ids=(base,),
                organization=organization,
                settings=settings,
            )
        )
    return candidates


def arena(conn: duckdb.DuckDBPyConnection) -> list[Candidate]:
    rows = conn.execute(
        "SELECT r.model_key, any_value(m.name), "
        "any_value(coalesce(r.organization, m.organization)) "
        "FROM arena_ratings r LEFT JOIN arena_models m USING (model_key) "
        "GROUP BY r.model_key ORDER BY r.model_key"
    ).fetchall()
    return [
        Candidate(source="arena", key=key, name=name or key, provider_ids=(key,), organization=org)
        for key, name, org in rows
    ]


def all_candidates(conn: duckdb.DuckDBPyConnection, aliases: AliasFile) -> list[Candidate]:
    """OpenRouter leads (freshest, exact ids); then models.dev, Epoch AI and LMArena."""
    return [*openrouter(conn), *models_dev(conn), *epoch(conn, aliases), *arena(conn)]
