"""Page shaping: pure functions from a loaded release to what each template shows.

Nothing here renders, reads or writes files (`build.py` does). Ranks are the release's
published rank columns, titles and methodology figures its `schema.json`: a page never
recomputes what the release publishes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench_pipeline.ingest import freshness
from bench_pipeline.site import markup
from bench_pipeline.site.layout import Row, Schema
from bench_pipeline.site.navigator_v1 import navigator_v1_view
from bench_pipeline.site.release_view import Release as Release
from bench_pipeline.site.release_view import load_release as load_release
from bench_pipeline.site.release_view import safe_id as safe_id

MODEL_TABLES = (
    "known_good_index",
    "capability_indices",
    "market",
    "arena_elo",
    "provider_prices",
    "price_history",
    "index_lineage",
    "openness_evidence",
)
CHANGES_SHOWN = 200


@dataclass
class Model:
    """Every row of one model, gathered from the tables that mention it."""

    id: str
    name: str
    slug: str
    info: Row = field(default_factory=dict)
    kgi: Row | None = None
    rank: int | None = None
    capability: Row | None = None
    market: Row | None = None
    providers: list[Row] = field(default_factory=list)
    history: list[Row] = field(default_factory=list)
    arena: list[Row] = field(default_factory=list)
    lineage: list[Row] = field(default_factory=list)
    aliases: list[Row] = field(default_factory=list)  # "also listed as"
    openness: list[Row] = field(default_factory=list)  # every input weighed, in order
    boards: list[Row] = field(default_factory=list)  # every board it is on (`hub.py`)

    @property
    def href(self) -> str:
        """The model page, relative to the site root."""
        return f"models/{self.slug}.html"


def ranked(
    rows: Iterable[Row], rank_column: str | None, names: dict[str, str]
) -> list[tuple[int, Row]]:
    """The rows the board ranks, by their published rank (ties by model name)."""
    if rank_column is None:
        return []
    held = [r for r in rows if not markup.missing(r.get(rank_column))]
    held.sort(key=lambda r: (r[rank_column], names.get(r["model_id"], ""), r["model_id"]))
    return [(int(r[rank_column]), r) for r in held]


def collect_models(release: Release) -> dict[str, Model]:
    """Every model any table mentions, with all its rows gathered and its published rank."""
    registry = {r["model_id"]: r for r in release.rows("models")}
    ids = set(registry)
    given: dict[str, str] = {}
    for table in MODEL_TABLES:
        for row in release.rows(table):
            if row.get("model_id"):
                ids.add(row["model_id"])
                if row.get("model_name"):
                    given.setdefault(row["model_id"], row["model_name"])
    slugs = markup.model_slugs(sorted(ids))
    models = {
        i: Model(
            id=i,
            name=str(registry.get(i, {}).get("name") or given.get(i) or i),
            slug=slugs[i],
            info=registry.get(i, {}),
        )
        for i in ids
    }
    rank_column = release.schema.rank_column("known_good_index", "known_good_index")
    for row in release.rows("known_good_index"):
        models[row["model_id"]].kgi = row
        if rank_column and not markup.missing(row.get(rank_column)):
            models[row["model_id"]].rank = int(row[rank_column])
    for row in release.rows("capability_indices"):
        models[row["model_id"]].capability = row
    for row in release.rows("market"):
        models[row["model_id"]].market = row
    for table, attribute in (
        ("provider_prices", "providers"),
        ("price_history", "history"),
        ("arena_elo", "arena"),
        ("index_lineage", "lineage"),
        ("model_aliases", "aliases"),
        ("openness_evidence", "openness"),
    ):
        for row in release.rows(table):
            getattr(models[row["model_id"]], attribute).append(row)
    return models


def brief(value: Any) -> str:
    """Any JSON value as short text: a list joined by commas, an object as key=value."""
    if markup.missing(value):
        return markup.MISSING
    if isinstance(value, dict):
        if "run_id" in value:  # a source run: its id and source
            return f"{value['run_id']} ({value.get('source') or '?'})"
        return ", ".join(f"{k}={brief(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(brief(v) for v in value) or markup.MISSING
    if isinstance(value, float):  # a reader needs six figures, not a float's sixteen
        return f"{value:.6g}"
    return str(value)


def count(value: Any) -> int | None:
    """A diff's rows_added/rows_removed: a list of keys or a number."""
    return len(value) if isinstance(value, list) else value


# ------------------------------------------------------------------------- methodology


def kgi_components(schema: Schema) -> list[tuple[str, str]]:
    """The Known Good Index's evaluations, as (column, title)."""
    components = schema.parameters("known_good_index").get("components", [])
    return [(c, schema.title("known_good_index", c)) for c in components]


def missing_domains(schema: Schema, row: Row) -> list[str]:
    """The domains the Known Good Index requires that `row` holds no evaluation of."""
    requirements = schema.parameters("known_good_index").get("requirements", {})
    return [
        domain
        for domain, ids in requirements.items()
        if all(markup.missing(row.get(c)) for c in ids)
    ]


def capabilities(schema: Schema) -> list[tuple[str, str, list[str], int]]:
    """Each capability index as (column, title, components, minimum components)."""
    return [
        (name, schema.title("capability_indices", name), list(d["components"]),
         int(d["min_components"]))
        for name, d in schema.parameters("capability_indices").items()
    ]  # fmt: skip


def usecase_weights(schema: Schema) -> list[tuple[str, str, float]]:
    """The UseCaseRank metric weights as (name, label, published default), in published
    order; each weighs the run column `metric_<name>`."""
    defaults = schema.parameters("usecase_runs").get("weights", {})
    return [
        (name, schema.title("usecase_runs", f"metric_{name}"), float(value))
        for name, value in defaults.items()
    ]


# ------------------------------------------------------------------------- page views


def leaderboards(release: Release, models: dict[str, Model]) -> dict[str, Any]:
    """The Known Good Index board, the unranked models and the capability boards."""
    names = {i: m.name for i, m in models.items()}
    schema = release.schema
    kgi_rows = release.rows("known_good_index")
    rank = schema.rank_column("known_good_index", "known_good_index")
    leaderboard = [(r, row, models[row["model_id"]]) for r, row in ranked(kgi_rows, rank, names)]
    unranked = sorted(
        (
            (row, models[row["model_id"]], missing_domains(schema, row))
            for row in kgi_rows
            if markup.missing(row.get("known_good_index"))
        ),
        key=lambda item: (item[1].name.lower(), item[1].id),
    )
    rows = release.rows("capability_indices")
    boards = [
        (column, title, components, minimum,
         [(r, row, models[row["model_id"]])
          for r, row in ranked(rows, schema.rank_column("capability_indices", column), names)],
         sum(markup.missing(r.get(column)) for r in rows))
        for column, title, components, minimum in capabilities(schema)
    ]  # fmt: skip
    return {"leaderboard": leaderboard, "unranked": unranked, "capability_boards": boards}


def provenance(model: Model, runs: dict[str, Row], sources: dict[str, Row]) -> list[Row]:
    """The source runs behind a model's numbers, with their publishers and what they gave."""
    uses: dict[str, set[str]] = defaultdict(set)
    for rows, what in (
        (model.lineage, "evaluation scores"),
        (model.providers, "host prices and telemetry"),
        (model.history, "price history"),
        (model.arena, "Arena ratings"),
    ):
        for row in rows:
            if row.get("source_run_id"):
                uses[row["source_run_id"]].add(what)
    out = []
    for run_id in sorted(uses):
        source = source_of(run_id, runs, sources)
        run = runs.get(run_id, {})
        out.append(
            {
                "run_id": run_id,
                "source": source,
                "publisher": sources.get(source or "", {}).get("publisher"),
                "status": run.get("status"),
                "finished_at": run.get("finished_at"),
                "data_as_of": run.get("data_as_of"),
                "uses": ", ".join(sorted(uses[run_id])),
            }
        )
    return out


def source_of(run_id: str, runs: dict[str, Row], sources: dict[str, Row]) -> str | None:
    """The source of a run: as recorded, else the longest source name its id starts with."""
    if run_id in runs:
        return runs[run_id].get("source")
    prefixes = [s for s in sources if run_id.startswith(f"{s}-")]
    return max(prefixes, key=len) if prefixes else None


def reference(key: Any, models: dict[str, Model]) -> Row:
    """A diff row key as text, with its model when the key names one."""
    model_id = key.get("model_id") if isinstance(key, dict) else key
    model = models.get(model_id) if isinstance(model_id, str) else None
    return {"model": model, "text": brief(key)}


def diff_view(release: Release, models: dict[str, Model], titles: dict[str, str]) -> Row | None:
    """diff.json shaped for the page (keys resolved, long lists cut to CHANGES_SHOWN)."""
    diff = release.diff
    if not diff or diff.get("from") is None:
        return None
    caused = diff.get("caused_by") or {}
    tables = []
    for name, table in (diff.get("tables") or {}).items():
        changed, moves = table.get("changed") or [], table.get("rank_moves") or []
        tables.append(
            {
                "name": name,
                "title": titles.get(name, name),
                "rows_added": count(table.get("rows_added")),
                "rows_removed": count(table.get("rows_removed")),
                "note": "new table" if table.get("added_table") else
                "table removed" if table.get("removed_table") else "",
                "changed_count": len(changed),
                "moves_count": len(moves),
                "changed": [
                    {"ref": reference(c.get("key"), models), "column": brief(c.get("column")),
                     "old": brief(c.get("old")), "new": brief(c.get("new")),
                     "lineage": brief(c.get("lineage"))}
                    for c in changed[:CHANGES_SHOWN]
                ],
                "moves": [
                    {"old_rank": None, "new_rank": None, "column": None}
                    | m
                    | {"ref": reference(m.get("key"), models)}
                    for m in moves[:CHANGES_SHOWN]
                ],
            }
        )  # fmt: skip
    return {
        "source": diff.get("from"),
        "target": diff.get("to"),
        "source_runs": [brief(r) for r in caused.get("source_runs") or []],
        "case_versions": [brief(c) for c in caused.get("case_versions") or []],
        "added": [reference(i, models) for i in diff.get("models_added") or []],
        "removed": [reference(i, models) for i in diff.get("models_removed") or []],
        "tables": tables,
    }


def data_dates(release: Release, sources: dict[str, Row]) -> list[Row]:
    """Per source, the date of the data this release holds (the newest date its payload
    states, from the `sources` table), how it was derived, and its age when the release was
    made judged against the source's cadence (`ingest.freshness`): the same rule as
    `bench status` and the `fresh` check, at the release's own time, so a page says the same
    on every build of the release."""
    made = _naive(release.manifest.get("created_at"))
    out = []
    for name in sorted(sources):
        source = sources[name]
        as_of = _naive(source.get("data_as_of"))
        hours = source.get("freshness_hours")
        judged = (
            freshness.judge(as_of, int(hours), made)
            if made is not None and isinstance(hours, int)
            else None
        )
        out.append(
            {
                "source": name,
                "title": source.get("title") or name,
                "as_of": f"{as_of:%Y-%m-%d}" if as_of else None,
                "basis": source.get("data_as_of_basis"),
                "run_id": source.get("data_run_id"),
                "cadence": freshness.cadence_words(str(source.get("cadence_cron") or "")),
                "allowed": freshness.days_or_hours(judged.allowed) if judged else None,
                "age": freshness.days_or_hours(judged.age)
                if judged and judged.age is not None
                else None,
                "verdict": judged.verdict if judged else None,
            }
        )
    return out


def footer_date(dated: Row) -> Row:
    """What every page's footer shows of a source's `data_dates` row."""
    return {key: dated[key] for key in ("source", "title", "as_of", "verdict")}


def _naive(value: Any) -> datetime | None:
    """An ISO timestamp (with or without offset) as naive UTC, or None."""
    if markup.missing(value):
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


def last_runs(release: Release, sources: dict[str, Row]) -> list[Row]:
    """The last run of every source (and every source without one)."""
    latest: dict[str, Row] = {}
    for run in release.rows("source_runs"):
        key = str(run.get("started_at") or run.get("finished_at") or "")
        current = latest.get(run["source"])
        if current is None or key >= str(current.get("started_at") or ""):
            latest[run["source"]] = run
    names = sorted(set(latest) | set(sources))
    return [{"source": n, "run": latest.get(n), "info": sources.get(n, {})} for n in names]


def pm_view(release: Release) -> dict[str, Any]:
    """The PM suite page: leaderboard (published ranks), categories, drops, pending runs."""
    setups = release.rows("pm_setups")
    labels = {str(r["setup_id"]): str(r.get("setup") or r["setup_id"]) for r in setups}
    by_category: dict[str, dict[str, Any]] = defaultdict(dict)
    for row in release.rows("pm_categories"):
        label = labels.get(str(row["setup_id"]), str(row["setup_id"]))
        by_category[label][str(row["category"])] = row.get("score")
    return {
        "setups": setups,
        "labels": labels,
        "setup_models": {labels[str(r["setup_id"])]: r.get("model_id") for r in setups},
        "drops": release.rows("pm_drops"),
        "categories": sorted({c for scores in by_category.values() for c in scores}),
        "by_category": sorted(by_category.items()),
        "pending": sum(1 for r in release.rows("pm_runs") if r.get("status") != "complete"),
    }


def navigator_view(release: Release) -> dict[str, Any]:
    """The Navigator page: the Index board, its pairs and the v1 fit tables."""
    fits: dict[tuple[Any, Any], list[Row]] = defaultdict(list)
    for row in release.rows("navigator_v1_fit"):
        fits[(row["monthly_volume"], row["monthly_budget_usd"])].append(row)
    categories = release.schema.parameters("navigator_models").get("categories", [])
    return {
        "models": release.rows("navigator_models"),
        "pairs": release.rows("navigator_pairs"),
        "resolution": next(iter(release.rows("navigator_resolution")), None),  # power figure
        "categories": list(categories),
        "fits": sorted(fits.items()),
        **navigator_v1_view(release),  # judge splits waiting, classic v1 (site/navigator_v1.py)
    }


def _board_order(row: Row) -> tuple[str, bool]:
    return str(row["use_case"]), bool(row.get("simulated"))


def usecase_view(release: Release) -> dict[str, Any]:
    """The UseCaseRank page: its boards as published, and what its script needs to
    recompute them with a reader's weights (the runs, and the board's published rules).

    A board is one use case's groups within one value of every column but `use_case` the
    published rank rule ranks within (`simulated`): real submissions first, then the
    offline demo's simulated groups as a board of their own, so each table's ranks are the
    published ones and the script ranks each table apart, as the rule does."""
    rule = release.schema.rank_rules("usecase_groups")
    within = rule[0].within if rule else ("use_case",)
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in release.rows("usecase_groups"):
        groups[tuple(row.get(c) for c in within)].append(row)
    boards = [
        {
            "use_case": str(rows[0]["use_case"]),
            "simulated": bool(rows[0].get("simulated")),
            "rows": rows,
        }
        for _key, rows in sorted(groups.items(), key=lambda item: _board_order(item[1][0]))
    ]
    runs = release.rows("usecase_runs")
    weights = usecase_weights(release.schema)
    metrics = [name for name, _label, _value in weights]
    metric_columns = [f"metric_{name}" for name in metrics]
    parameters = release.schema.parameters("usecase_groups")
    return {
        "boards": boards,
        "weights": weights,
        "review": [r for r in runs if r.get("under_review")],
        "runs_json": markup.script_json(
            {
                "runs": [
                    {k: r.get(k) for k in ("use_case", "group", "weight", "under_review",
                                           *metric_columns)}
                    for r in runs
                ],
                "groups": [
                    {k: g.get(k) for k in ("use_case", "group", "blended", "bt_win_probability")}
                    for g in release.rows("usecase_groups")
                ],
                "metrics": metrics,
                "blend_score_share": parameters.get("blend_score_share"),
                "min_runs_for_rank": parameters.get("min_runs_for_rank"),
            }
        ),
    }  # fmt: skip
