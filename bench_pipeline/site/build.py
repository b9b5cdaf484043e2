"""Build the static site from one dataset release, reading nothing else about the data.

`build_site(release_dir, out_dir, releases_root)` renders the jinja2 templates in
`site/templates/` (autoescaped: names from sources are untrusted) into `out_dir`, copies
`site/static/`, the release's own files and the older releases' manifests under
`out_dir/releases/`, and returns the pages it wrote. Every link is relative, so the site works
from `file://` and from any static host. `out_dir/data/` belongs to the release asset (the
stable download URLs); a download links there only when the file there is byte-identical to
the release's, else to the release's own copy.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from bench_pipeline.core import settings
from bench_pipeline.scores.usecase import DEFAULT_WEIGHTS
from bench_pipeline.site import markup
from bench_pipeline.site.charts import price_history_svg
from bench_pipeline.site.item_boards import render_item_boards
from bench_pipeline.site.layout import complete
from bench_pipeline.taskbank import NAVIGATOR_CATEGORIES

SITE_SOURCES = settings.REPO_ROOT / "site"
TEMPLATES = SITE_SOURCES / "templates"
STATIC = SITE_SOURCES / "static"
METHODOLOGY = SITE_SOURCES / "methodology"
DOCUMENTS = {"changelog": "CHANGELOG.md", "corrections": "CORRECTIONS.md"}
METHODOLOGY_ORDER = (
    "index",
    "indices",
    "market",
    "arena",
    "cost-per-task",
    "pm-suite",
    "usecase-rank",
    "navigator",
    "runs-and-grading",
    "ingestion",
    "model-matching",
    "releases",
)
GENERATED_DIRS = ("models", "methodology", "releases", "static")
KGI_COMPONENTS = (
    ("gpqa_diamond", "GPQA Diamond"),
    ("math_aime", "AIME (OTIS mock)"),
    ("swe_bench_verified", "SWE-bench Verified"),
    ("livebench", "LiveBench"),
    ("terminal_bench", "Terminal-Bench"),
    ("hle", "HLE"),
)
KGI_DOMAINS = (
    ("science", ("gpqa_diamond",)),
    ("mathematics", ("math_aime",)),
    ("coding", ("swe_bench_verified", "livebench", "terminal_bench")),
)
EVALUATIONS = dict(KGI_COMPONENTS) | {
    "math_level5": "MATH Level 5",
    "livebench_coding": "LiveBench coding",
    "livebench_reasoning": "LiveBench reasoning",
    "hle_calibration_error": "HLE calibration error",
}
USECASE_WEIGHTS = tuple(
    (name, label, getattr(DEFAULT_WEIGHTS, name))
    for name, label in (
        ("outcome", "Full success"),
        ("cost_efficiency", "Cost per success"),
        ("speed", "Speed"),
        ("autonomy", "Autonomy"),
        ("first_try", "First try"),
    )
)
"""The five UseCaseRank metric weights a reader can change on the page (published defaults)."""

CAPABILITIES = (
    ("coding_index", "Coding", ("swe_bench_verified", "livebench_coding", "terminal_bench"), 2),
    ("agentic_index", "Agentic", ("terminal_bench", "swe_bench_verified"), 2),
    ("mathematics_index", "Mathematics", ("math_aime", "math_level5"), 2),
    ("science_index", "Science", ("gpqa_diamond",), 1),
    ("reasoning_index", "Reasoning", ("hle", "livebench_reasoning", "gpqa_diamond"), 2),
)
MODEL_TABLES = (
    "known_good_index",
    "capability_indices",
    "market",
    "arena_elo",
    "provider_prices",
    "price_history",
    "index_lineage",
)
CHANGES_SHOWN = 200

Row = dict[str, Any]


@dataclass(frozen=True)
class SiteResult:
    pages: list[Path]
    release_id: str = ""


@dataclass(frozen=True)
class Release:
    directory: Path
    manifest: dict[str, Any]
    tables: dict[str, list[Row]]
    diff: dict[str, Any] | None

    @property
    def id(self) -> str:
        return str(self.manifest["release_id"])

    def rows(self, table: str) -> list[Row]:
        return self.tables.get(table, [])


@dataclass
class Model:
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

    @property
    def href(self) -> str:
        return f"models/{self.slug}.html"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _safe_id(release_id: str) -> str:
    if not release_id or Path(release_id).name != release_id or release_id in (".", ".."):
        raise ValueError(f"not a usable release id: {release_id!r}")
    return release_id


def load_release(directory: Path) -> Release:
    """The manifest, every table it lists (from its JSON file) and the diff, if any."""
    manifest = _read_json(directory / "manifest.json")
    _safe_id(str(manifest["release_id"]))
    tables = {
        entry["name"]: complete(
            entry["name"], _read_json(directory / entry["files"]["json"]["path"])
        )
        for entry in manifest.get("tables", [])
        if entry.get("files", {}).get("json")
    }
    diff_path = directory / "diff.json"
    diff = _read_json(diff_path) if diff_path.is_file() else None
    return Release(directory, manifest, tables, diff)


def ranked(rows: Iterable[Row], column: str, names: dict[str, str]) -> list[tuple[int, Row]]:
    """Rows holding `column`, best first, with competition ranks (1, 2, 2, 4)."""
    held = [r for r in rows if not markup.missing(r.get(column))]
    held.sort(key=lambda r: (-float(r[column]), names.get(r["model_id"], ""), r["model_id"]))
    out: list[tuple[int, Row]] = []
    for position, row in enumerate(held, 1):
        rank = out[-1][0] if out and out[-1][1][column] == row[column] else position
        out.append((rank, row))
    return out


def collect_models(release: Release) -> dict[str, Model]:
    """Every model any table mentions, with all its rows gathered."""
    registry = {r["model_id"]: r for r in release.rows("models")}
    ids = set(registry)
    given: dict[str, str] = {}
    for table in MODEL_TABLES:
        for row in release.rows(table):
            if row.get("model_id"):
                ids.add(row["model_id"])
                if row.get("model_name"):
                    given.setdefault(row["model_id"], row["model_name"])
    slugs = markup.unique_slugs(sorted(ids))
    models = {
        i: Model(
            id=i,
            name=str(registry.get(i, {}).get("name") or given.get(i) or i),
            slug=slugs[i],
            info=registry.get(i, {}),
        )
        for i in ids
    }
    for row in release.rows("known_good_index"):
        models[row["model_id"]].kgi = row
    for row in release.rows("capability_indices"):
        models[row["model_id"]].capability = row
    for row in release.rows("market"):
        models[row["model_id"]].market = row
    for table, attribute in (
        ("provider_prices", "providers"),
        ("price_history", "history"),
        ("arena_elo", "arena"),
        ("index_lineage", "lineage"),
    ):
        for row in release.rows(table):
            getattr(models[row["model_id"]], attribute).append(row)
    names = {i: m.name for i, m in models.items()}
    for rank, row in ranked(release.rows("known_good_index"), "known_good_index", names):
        models[row["model_id"]].rank = rank
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
    return str(value)


def count(value: Any) -> int | None:
    """A diff's rows_added/rows_removed: a list of keys or a number."""
    return len(value) if isinstance(value, list) else value


def missing_domains(row: Row) -> list[str]:
    return [d for d, ids in KGI_DOMAINS if all(markup.missing(row.get(c)) for c in ids)]


class SiteBuilder:
    """Renders one release into `out_dir`; `pages` lists what it wrote."""

    def __init__(self, release: Release, out_dir: Path, releases_root: Path) -> None:
        self.release, self.out, self.releases_root = release, out_dir, releases_root
        self.pages: list[Path] = []
        self.models = collect_models(release)
        self.names = {i: m.name for i, m in self.models.items()}
        self.simulated = {
            t: any(markup.is_simulated(r) for r in rows) for t, rows in release.tables.items()
        }
        self.titles = {t["name"]: t.get("title") or t["name"] for t in release.manifest["tables"]}
        sources = {r["name"]: r for r in release.rows("sources")}
        runs = {r["run_id"]: r for r in release.manifest.get("source_runs", [])}
        runs |= {r["run_id"]: r for r in release.rows("source_runs")}
        self.sources, self.runs = sources, runs
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(
            num=markup.number, usd=markup.usd, text=markup.text, when=markup.when, q=quote
        )
        self.env.tests["simulated"] = markup.is_simulated
        self.env.globals.update(
            release=release.manifest,
            kgi_components=KGI_COMPONENTS,
            evaluations=EVALUATIONS,
            capabilities=CAPABILITIES,
            MISSING=markup.MISSING,
        )

    # -- output -----------------------------------------------------------------------
    def render(self, path: str, template: str, shows: Sequence[str] = (), **context: Any) -> None:
        target = self.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        root = "../" * path.count("/")
        simulated = [self.titles.get(t, t) for t in shows if self.simulated.get(t)]
        context.setdefault("simulated", simulated)
        html = self.env.get_template(template).render(
            root=root, page=path, present=set(self.release.tables), **context
        )
        target.write_text(html, "utf-8")
        self.pages.append(target)

    def clear(self) -> None:
        """Remove what an earlier build generated; `data/` (the release asset's) stays."""
        self.out.mkdir(parents=True, exist_ok=True)
        for name in GENERATED_DIRS:
            shutil.rmtree(self.out / name, ignore_errors=True)
        for page in self.out.glob("*.html"):
            page.unlink()

    def copy_files(self) -> list[Row]:
        """Static assets and the older releases' manifests; the older manifests, newest first."""
        shutil.copytree(STATIC, self.out / "static")
        older = []
        for manifest_path in sorted(self.releases_root.glob("*/manifest.json")):
            release_id = manifest_path.parent.name
            if release_id.startswith("."):  # a release still being written
                continue
            manifest = _read_json(manifest_path)
            if manifest.get("release_id") == release_id != self.release.id:
                self.copy(manifest_path, f"releases/{release_id}/manifest.json")
                older.append(manifest)
        return sorted(older, key=lambda m: str(m.get("created_at", "")), reverse=True)

    def copy(self, source: Path, target: str) -> None:
        path = self.out / target
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, path)  # not the mode: release files are read-only

    def downloads(self) -> list[Row]:
        """Per table, a link for each file: to `data/` when the file there is identical,
        else to a copy under `releases/<id>/`. Also copies the manifest and the diff there."""
        release, base = self.release, f"releases/{self.release.id}/"
        for name in ("manifest.json", "diff.json"):
            if (release.directory / name).is_file():
                self.copy(release.directory / name, base + name)
        sizes = {f["path"]: f.get("bytes") for f in release.manifest.get("files", [])}
        entries = []
        for table in release.manifest.get("tables", []):
            links = []
            for kind, described in sorted(table.get("files", {}).items()):
                stable = f"data/{table['name']}.{kind}"
                digest = described.get("sha256", "")
                if not (self.out / stable).is_file() or sha256_file(self.out / stable) != digest:
                    self.copy(release.directory / described["path"], base + described["path"])
                    stable = quote(base + described["path"])
                links.append({"kind": kind, "href": stable, "sha256": digest,
                              "bytes": sizes.get(described["path"])})  # fmt: skip
            entries.append(table | {"links": links})
        return entries

    # -- provenance ---------------------------------------------------------------------
    def source_of(self, run_id: str) -> str | None:
        if run_id in self.runs:
            return self.runs[run_id].get("source")
        prefixes = [s for s in self.sources if run_id.startswith(f"{s}-")]
        return max(prefixes, key=len) if prefixes else None

    def provenance(self, model: Model) -> list[Row]:
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
            source = self.source_of(run_id)
            run = self.runs.get(run_id, {})
            out.append(
                {
                    "run_id": run_id,
                    "source": source,
                    "publisher": self.sources.get(source or "", {}).get("publisher"),
                    "status": run.get("status"),
                    "finished_at": run.get("finished_at"),
                    "uses": ", ".join(sorted(uses[run_id])),
                }
            )
        return out

    def reference(self, key: Any) -> Row:
        """A diff row key as text, with its model when the key names one."""
        model_id = key.get("model_id") if isinstance(key, dict) else key
        model = self.models.get(model_id) if isinstance(model_id, str) else None
        return {"model": model, "text": brief(key)}

    def diff_view(self) -> Row | None:
        """diff.json shaped for the page (keys resolved, long lists cut to CHANGES_SHOWN)."""
        diff = self.release.diff
        if not diff or diff.get("from") is None:
            return None
        caused = diff.get("caused_by") or {}
        tables = []
        for name, table in (diff.get("tables") or {}).items():
            changed, moves = table.get("changed") or [], table.get("rank_moves") or []
            tables.append(
                {
                    "name": name,
                    "title": self.titles.get(name, name),
                    "rows_added": count(table.get("rows_added")),
                    "rows_removed": count(table.get("rows_removed")),
                    "note": "new table" if table.get("added_table") else
                    "table removed" if table.get("removed_table") else "",
                    "changed_count": len(changed),
                    "moves_count": len(moves),
                    "changed": [
                        {"ref": self.reference(c.get("key")), "column": brief(c.get("column")),
                         "old": brief(c.get("old")), "new": brief(c.get("new")),
                         "lineage": brief(c.get("lineage"))}
                        for c in changed[:CHANGES_SHOWN]
                    ],
                    "moves": [
                        {"old_rank": None, "new_rank": None}
                        | m
                        | {"ref": self.reference(m.get("key"))}
                        for m in moves[:CHANGES_SHOWN]
                    ],
                }
            )  # fmt: skip
        return {
            "source": diff.get("from"),
            "target": diff.get("to"),
            "source_runs": [brief(r) for r in caused.get("source_runs") or []],
            "case_versions": [brief(c) for c in caused.get("case_versions") or []],
            "added": [self.reference(i) for i in diff.get("models_added") or []],
            "removed": [self.reference(i) for i in diff.get("models_removed") or []],
            "tables": tables,
        }

    def last_runs(self) -> list[Row]:
        latest: dict[str, Row] = {}
        for run in self.release.rows("source_runs"):
            key = str(run.get("started_at") or run.get("finished_at") or "")
            current = latest.get(run["source"])
            if current is None or key >= str(current.get("started_at") or ""):
                latest[run["source"]] = run
        names = sorted(set(latest) | set(self.sources))
        return [{"source": n, "run": latest.get(n), "info": self.sources.get(n, {})} for n in names]

    # -- pages --------------------------------------------------------------------------
    def build(self) -> SiteResult:
        self.clear()
        older = self.copy_files()
        release, models = self.release, self.models
        by_name = sorted(models.values(), key=lambda m: (m.name.lower(), m.id))
        kgi_rows = release.rows("known_good_index")
        leaderboard = [
            (rank, row, models[row["model_id"]])
            for rank, row in ranked(kgi_rows, "known_good_index", self.names)
        ]
        unranked = sorted(
            (
                (row, models[row["model_id"]], missing_domains(row))
                for row in kgi_rows
                if markup.missing(row.get("known_good_index"))
            ),
            key=lambda item: (item[1].name.lower(), item[1].id),
        )
        self.render(
            "index.html",
            "index.html",
            ("known_good_index",),
            top=leaderboard[:10],
            counts={
                "models": len(models),
                "ranked": len(leaderboard),
                "market": len(release.rows("market")),
                "arena": len(release.rows("arena_elo")),
            },
        )
        self.render(
            "known-good-index.html",
            "known_good_index.html",
            ("known_good_index",),
            leaderboard=leaderboard,
            unranked=unranked,
        )
        capability_rows = release.rows("capability_indices")
        self.render(
            "capability-indices.html",
            "capability_indices.html",
            ("capability_indices",),
            boards=[
                (column, title, components, minimum,
                 [(rank, row, models[row["model_id"]])
                  for rank, row in ranked(capability_rows, column, self.names)],
                 sum(markup.missing(r.get(column)) for r in capability_rows))
                for column, title, components, minimum in CAPABILITIES
            ],
        )  # fmt: skip
        self.render(
            "market.html",
            "market.html",
            ("market",),
            rows=sorted(
                ((row, models[row["model_id"]]) for row in release.rows("market")),
                key=lambda item: (item[1].name.lower(), item[1].id),
            ),
        )
        boards: dict[str, list[tuple[Row, Model]]] = defaultdict(list)
        for row in sorted(release.rows("arena_elo"), key=lambda r: -float(r.get("rating") or 0)):
            boards[str(row.get("leaderboard"))].append((row, models[row["model_id"]]))
        self.render("arena.html", "arena.html", ("arena_elo",), boards=sorted(boards.items()))
        self.render("models.html", "models.html", ("models",), models=by_name)
        for model in by_name:
            history = [r for r in model.history if markup.missing(r.get("host"))]
            own = {
                "market": [model.market or {}],
                "known_good_index": [model.kgi or {}],
                "capability_indices": [model.capability or {}],
                "provider_prices": model.providers,
                "price_history": model.history,
                "arena_elo": model.arena,
                "index_lineage": model.lineage,
            }
            self.render(
                model.href,
                "model.html",
                simulated=[
                    self.titles.get(t, t)
                    for t, rows in own.items()
                    if any(markup.is_simulated(r) for r in rows)
                ],
                model=model,
                chart=price_history_svg(history, f"Price history of {model.name}"),
                history=sorted(history, key=lambda r: str(r["observed_at"])),
                lineage=sorted(model.lineage, key=lambda r: str(r.get("evaluation_id"))),
                provenance=self.provenance(model),
                domains_missing=missing_domains(model.kgi) if model.kgi else [],
            )
        self.methodology()
        for name, filename in DOCUMENTS.items():
            source = (SITE_SOURCES / filename).read_text("utf-8")
            self.render(
                f"{name}.html",
                "document.html",
                title=markup.first_heading(source, name.title()),
                body=markup.markdown(source),
            )
        self.boards()
        render_item_boards(self, release.rows("item_boards"), release.rows("item_board_pairs"))
        self.render(
            "about.html", "about.html", ("source_runs",), runs=self.last_runs(),
            failures=self.release.rows("pipeline_failures"),
        )  # fmt: skip
        publishers: dict[str, list[Row]] = defaultdict(list)
        for source in release.rows("sources"):
            publishers[str(source.get("publisher"))].append(source)
        self.render("attribution.html", "attribution.html", publishers=sorted(publishers.items()))
        self.render("downloads.html", "downloads.html", tables=self.downloads(), older=older)
        self.render("changes.html", "changes.html", diff=self.diff_view())
        return SiteResult(pages=self.pages, release_id=release.id)

    def boards(self) -> None:
        """The PM suite, Navigator Index and UseCaseRank pages."""
        release = self.release
        setups = release.rows("pm_setups")
        labels = {str(r["setup_id"]): str(r.get("setup") or r["setup_id"]) for r in setups}
        by_category: dict[str, dict[str, Any]] = defaultdict(dict)
        for row in release.rows("pm_categories"):
            by_category[labels.get(str(row["setup_id"]), str(row["setup_id"]))][
                str(row["category"])
            ] = row.get("score")
        pm_runs = release.rows("pm_runs")
        self.render(
            "pm-suite.html", "pm_suite.html", ("pm_setups", "pm_runs"),
            setups=setups, labels=labels, drops=release.rows("pm_drops"),
            categories=sorted({c for scores in by_category.values() for c in scores}),
            by_category=sorted(by_category.items()),
            pending=sum(1 for r in pm_runs if r.get("status") != "complete"),
        )  # fmt: skip
        fits: dict[tuple[Any, Any], list[Row]] = defaultdict(list)
        for row in release.rows("navigator_v1_fit"):
            fits[(row["monthly_volume"], row["monthly_budget_usd"])].append(row)
        self.render(
            "navigator.html", "navigator.html", ("navigator_models",),
            models=release.rows("navigator_models"), pairs=release.rows("navigator_pairs"),
            categories=list(NAVIGATOR_CATEGORIES), fits=sorted(fits.items()),
        )  # fmt: skip
        groups: dict[str, list[Row]] = defaultdict(list)
        for row in release.rows("usecase_groups"):
            groups[str(row["use_case"])].append(row)
        runs = release.rows("usecase_runs")
        metric_columns = [f"metric_{name}" for name, _label, _value in USECASE_WEIGHTS]
        self.render(
            "usecase-rank.html", "usecase_rank.html", ("usecase_runs",),
            groups=sorted(groups.items()), weights=USECASE_WEIGHTS,
            review=[r for r in runs if r.get("under_review")],
            runs_json=markup.script_json([
                {k: r.get(k) for k in ("use_case", "group", "weight", "under_review",
                                       *metric_columns)}
                for r in runs
            ]),
        )  # fmt: skip

    def methodology(self) -> None:
        sources = {path.stem: path.read_text("utf-8") for path in METHODOLOGY.glob("*.md")}
        order = [n for n in METHODOLOGY_ORDER if n in sources]
        order += sorted(n for n in sources if n not in order)
        contents = [(n, markup.first_heading(sources[n], n)) for n in order]
        for name in order:
            self.render(
                f"methodology/{name}.html",
                "methodology.html",
                name=name,
                contents=contents,
                title=markup.first_heading(sources[name], name),
                body=markup.markdown(sources[name]),
            )


def build_site(release_dir: Path, out_dir: Path, releases_root: Path) -> SiteResult:
    """Render the release in `release_dir` into `out_dir` (see the module docstring)."""
    return SiteBuilder(load_release(release_dir), out_dir, releases_root).build()


def latest_release(releases_root: Path) -> Path:
    """The folder of the release `releases_root/latest` names."""
    latest = releases_root / "latest"
    if not latest.is_file():
        raise FileNotFoundError(f"no release yet: {latest} is missing")
    return releases_root / _safe_id(latest.read_text("utf-8").strip())
