"""Each source's listings as matching candidates, read from the live tables.

Every candidate says which lab made the model (OpenRouter's author, models.dev's family or
provider, Epoch AI's or LMArena's organisation) and what role the listing plays: OpenRouter's
own listing of a model (`catalogue`), a variant of one (`variant`), the lab's own listing on
models.dev (`lab`), a host's or reseller's copy (`host`), or a publisher of scores (`score`).
"""

from __future__ import annotations

from collections import defaultdict

import duckdb

from bench_pipeline.core.allocation import without_collector
from bench_pipeline.registry.forms import LATEST, id_forms, unwrap_host_id
from bench_pipeline.registry.labs import Labs
from bench_pipeline.registry.matching import AliasFile, Candidate
from bench_pipeline.registry.text import normalise_name, split_name

SOURCE = "openrouter_models"
MIRROR = "openrouter"
"""models.dev's provider that mirrors OpenRouter: every listing of it is a host's."""


def _display_name(name: str | None) -> str | None:
    """OpenRouter writes "Author: Model"; the author is not part of the model's name."""
    if name and ": " in name:
        return name.split(": ", 1)[1]
    return name


def catalogue_labs(conn: duckdb.DuckDBPyConnection, aliases: AliasFile) -> Labs:
    """The lab table with OpenRouter's authors and models.dev's family → author pairs."""
    authors = [
        row[0]
        for row in conn.execute(
            "SELECT DISTINCT split_part(ltrim(model_id, '~'), '/', 1) FROM openrouter_models"
        ).fetchall()
    ]
    mirror = conn.execute(
        "SELECT family, split_part(model_id, '/', 1) FROM modelsdev_models "
        "WHERE provider_id = ? AND contains(model_id, '/')",
        [MIRROR],
    ).fetchall()
    return aliases.labs.with_catalogue(authors, mirror)


def openrouter(
    conn: duckdb.DuckDBPyConnection, labs: Labs, aliases: AliasFile | None = None
) -> list[Candidate]:
    """Plain ids are catalogue listings; `:free`/`:batch` and `~…-latest` are variants, and so
    is an id that is another listed id with a declared effort suffix (`openai/o3-mini-high`
    is `openai/o3-mini` at high effort: the one rule for effort in every source).

    A catalogue listing carries the ids OpenRouter states for it: its own, its
    `canonical_slug` (often the lab's dated id) and the repository name of the
    `hugging_face_id` weights it serves (`Qwen/Qwen2.5-72B-Instruct`), which a lab-scoped
    listing of the same weights names."""
    rows = conn.execute(
        "SELECT model_id, canonical_slug, name, alias_target, created_at, hugging_face_id "
        "FROM openrouter_models ORDER BY model_id"
    ).fetchall()
    listed = {row[0] for row in rows}
    candidates = []
    for model_id, canonical, name, alias_target, created, weights in rows:
        base = model_id.split(":", 1)[0]
        variant = base != model_id or model_id.startswith("~")
        author = model_id.lstrip("~").split("/", 1)[0]
        targets = [base] if base != model_id else []
        targets += [i for i in (alias_target, canonical) if i and i != model_id]
        setup, settings = (
            aliases.split_settings(SOURCE, model_id) if aliases and not variant else (base, {})
        )
        if settings and setup in listed:  # the listed model at an effort: its variant
            variant, targets = True, [setup, model_id]
        api_ids = (
            ()
            if variant
            else one_date(
                tuple(
                    dict.fromkeys(i.split("/", 1)[-1] for i in (model_id, canonical, weights) if i)
                )
            )
        )
        candidates.append(
            Candidate(
                source="openrouter_models",
                key=model_id,
                name=_display_name(name),
                provider_ids=tuple(dict.fromkeys(targets)) if variant else (model_id,),
                organization=author,
                lab=labs.lab(author),
                settings=settings,
                role="variant" if variant else "catalogue",
                api_ids=api_ids,
                listed_at=created.isoformat() if created else None,
            )
        )
    return candidates


def models_dev(conn: duckdb.DuckDBPyConnection, labs: Labs, hosts: bool = True) -> list[Candidate]:
    """A lab's own listing, or (unless not `hosts`) a host's copy whose id names the lab's
    model."""
    providers = conn.execute("SELECT DISTINCT provider_id FROM modelsdev_models").fetchall()
    # Only a lab's own listing reads its provider's name, and only a provider that `may_own`
    # has one: the hosts' (most rows) are never turned into Python text.
    owners = [p for (p,) in providers if p != MIRROR and labs.may_own(p)]
    rows = conn.execute(
        "SELECT provider_id, model_id, name, family, "
        "CASE WHEN own THEN provider_name END "
        "FROM (SELECT *, list_contains(?::VARCHAR[], provider_id) AS own FROM modelsdev_models) "
        "ORDER BY provider_id, model_id",
        [owners],
    ).fetchall()
    candidates = []
    for provider, model, name, family, provider_name in rows:
        lab, own = labs.listing_lab(provider, model, family)
        if provider == MIRROR:
            lab, own = labs.lab(model.split("/", 1)[0]) if "/" in model else lab, False
        if not (own or hosts):
            continue
        unwrapped = (model,) if own else _unwrap(model, provider, lab)
        # Fields by position (keywords cost as much as making the candidate, for every
        # models.dev row).
        candidates.append(
            Candidate(
                "models_dev",  # source
                f"{provider}/{model}",  # key
                _display_name(name),  # name
                (model,) if "/" in model else (),  # provider_ids
                provider_name if own else None,  # organization
                {},  # settings
                lab,  # lab
                "lab" if own else "host",  # role
                unwrapped,  # api_ids
                None if own else provider,  # host
            )
        )
    return _pointed(candidates)


def one_date(api_ids: tuple[str, ...]) -> tuple[str, ...]:
    """A listing's ids without any that would give one of them a second date (an id dated
    one day and a canonical slug dated another): the first-named date stands."""
    dates: dict[str, str] = {}
    kept = []
    for api_id in api_ids:
        forms = id_forms(api_id)
        if forms.undated is not None and forms.date != LATEST:
            if dates.setdefault(forms.undated, forms.date or "") != (forms.date or ""):
                continue
        kept.append(api_id)
    return tuple(kept)


def _pointed(candidates: list[Candidate]) -> list[Candidate]:
    """A lab's own `(latest)` listing with the one dated id it points at.

    models.dev names a lab's moving pointer "N (latest)" (`claude-opus-4-5`, "Claude Opus
    4.5 (latest)") and the dated snapshot it serves "N" (`claude-opus-4-5-20251101`). Where
    the lab's own listings hold exactly one dated id named N, the pointer's listing carries
    that id too: the lab's word that the two are one model. Never more than one date."""
    dated: dict[tuple[str, str], list[str]] = defaultdict(list)
    for candidate in candidates:
        if candidate.role == "lab" and candidate.name and id_forms(candidate.key).undated:
            if id_forms(candidate.key).date != LATEST and not split_name(candidate.name)[1]:
                provider = candidate.key.split("/", 1)[0]
                dated[(provider, normalise_name(candidate.name))].append(candidate.api_ids[0])
    pointed = []
    for candidate in candidates:
        base, tail = split_name(candidate.name or "")
        if candidate.role == "lab" and tail == LATEST:
            found = dated.get((candidate.key.split("/", 1)[0], normalise_name(base)), [])
            if len(found) == 1 and found[0] not in candidate.api_ids:
                ids = (*candidate.api_ids, *found)
                candidate = Candidate(**{**vars(candidate), "api_ids": ids})
        pointed.append(candidate)
    return pointed


def _unwrap(model: str, provider: str | None, lab: str | None) -> tuple[str, ...]:
    if provider and lab:  # most listings: no generator to build the prefixes
        return unwrap_host_id(model, (provider, lab))
    return unwrap_host_id(model, tuple(p for p in (provider, lab) if p))


def epoch(conn: duckdb.DuckDBPyConnection, aliases: AliasFile, labs: Labs) -> list[Candidate]:
    """Model versions that hold scores, named by Epoch's display name where it has one, else
    by the version itself. Epoch's "Model name" is a family ("Gemini 1.5 Pro" for `-001` and
    `-002`): kept as the listing's family, never its name."""
    rows = conn.execute(
        "SELECT DISTINCT r.model_version, m.display_name, m.model_name, "
        "coalesce(r.organization, m.organization) FROM evaluation_rows r "
        "LEFT JOIN epoch_models m USING (model_version) ORDER BY r.model_version"
    ).fetchall()
    candidates = []
    for version, display, family, organization in rows:
        base, settings = aliases.split_settings("epoch", version)
        candidates.append(
            Candidate(
                source="epoch",
                key=version,
                name=display or base,
                provider_ids=(base,) if "/" in base else (),
                organization=organization,
                settings=settings,
                lab=labs.lab(organization),
                role="score",
                api_ids=(base, *_unwrap(base, None, labs.lab(organization))),
                family=family,
            )
        )
    return candidates


def arena(conn: duckdb.DuckDBPyConnection, aliases: AliasFile, labs: Labs) -> list[Candidate]:
    """Rated models; a declared suffix (a thinking budget) is a setting of the model."""
    # A model's rating rows (one per board) may name different organisations: take the one
    # most rows name (then the first by name), never an arbitrary one, so the lab a model is
    # matched under cannot change between two runs on the same data.
    rows = conn.execute(
        """
        WITH named AS (
            SELECT r.model_key, coalesce(r.organization, m.organization) AS org, count(*) AS n
            FROM arena_ratings r LEFT JOIN arena_models m USING (model_key)
            GROUP BY ALL
        )
        SELECT model_key,
               (SELECT min(a.name) FROM arena_models a WHERE a.model_key = named.model_key),
               first(org ORDER BY org IS NULL, n DESC, org)
        FROM named GROUP BY model_key ORDER BY model_key
        """
    ).fetchall()
    candidates = []
    for key, name, org in rows:
        base, settings = aliases.split_settings("arena", key)
        candidates.append(
            Candidate(
                source="arena",
                key=key,
                name=name or key,
                organization=org,
                settings=settings,
                lab=labs.lab(org),
                role="score",
                api_ids=(base,),
            )
        )
    return candidates


@without_collector
def all_candidates(
    conn: duckdb.DuckDBPyConnection,
    aliases: AliasFile,
    hosts: bool = True,
    labs: Labs | None = None,
) -> list[Candidate]:
    """Every listing of every source; the order carries no meaning (matching sorts by role).

    Args:
        conn: The warehouse.
        aliases: The alias file.
        hosts: Whether to list hosts' listings (role `host`) too; without them, for matching
            more host listings (`matching.host_matches` sets them aside), the models.dev hosts
            (most of its rows) are never made.
        labs: `catalogue_labs(conn, aliases)` where the caller has it already.
    """
    labs = labs if labs is not None else catalogue_labs(conn, aliases)
    return [
        *openrouter(conn, labs, aliases),
        *models_dev(conn, labs, hosts),
        *epoch(conn, aliases, labs),
        *arena(conn, aliases, labs),
    ]
