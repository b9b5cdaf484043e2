"""Build the static site from one dataset release, reading nothing else about the data.

`build_site(release_dir, out_dir, releases_root)` renders the jinja2 templates in
`site/templates/` (autoescaped: names from sources are untrusted) into `out_dir`, copies
`site/static/`, the release's own files and the older releases' manifests under
`out_dir/releases/`, and returns the pages it wrote. Every link is relative, so the site works
from `file://` and from any static host. `out_dir/data/` belongs to the release asset (the
stable download URLs); a download links there only when the file there is byte-identical to
the release's, else to the release's own copy. What each page shows is shaped by the pure
functions of `views.py`; this module only renders and copies files.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from bench_pipeline.core import settings
from bench_pipeline.core.files import sha256_file
from bench_pipeline.site import boards as board_views
from bench_pipeline.site import compare, hub, markup, pm_checks, views
from bench_pipeline.site.changes import upstream_view
from bench_pipeline.site.charts import price_history_svg
from bench_pipeline.site.disclosures import render_disclosures
from bench_pipeline.site.environment import PageEnvironment, remembered
from bench_pipeline.site.evidence import evidence_url, index_evidence
from bench_pipeline.site.item_boards import render_item_boards
from bench_pipeline.site.layout import Row, read_json
from bench_pipeline.site.paging import (
    CHART_ROWS,
    PAGE_ROWS,
    copy_if_changed,
    first_page,
    store,
    write_if_changed,
)
from bench_pipeline.site.receipts import render_receipts
from bench_pipeline.site.release_view import Release, load_release, safe_id
from bench_pipeline.site.reuse import (
    MODEL_GLOBALS,
    PageRecord,
    code_digest,
    inputs_digest,
    page_key,
    shared_key,
)
from bench_pipeline.site.views import Model
from bench_pipeline.site.workers import Split, default_workers, objects_frozen

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
RELEASE_PAGES = frozenset(
    {"index.html", "downloads.html", "about.html", "attribution.html", "changes.html"}
)
"""Pages whose footer names the release; the others point to Downloads, so that a page
whose figures did not change keeps its bytes from one release to the next. About and
Attribution state how old each source's data was when the release was made, so they are
the release's own."""
GENERATED_DIRS = (
    "models", "methodology", "releases", "static", "item-boards", "receipts", "compare",
)  # fmt: skip


@dataclass(frozen=True)
class SiteResult:
    pages: list[Path]
    release_id: str = ""


class SiteBuilder:
    """Renders one release into `out_dir`; `pages` lists what it wrote."""

    def __init__(
        self, release: Release, out_dir: Path, releases_root: Path, workers: int | None = None
    ) -> None:
        self.release, self.out, self.releases_root = release, out_dir, releases_root
        self.out_text = str(out_dir)
        self.workers = default_workers() if workers is None else workers
        self.pages: list[Path] = []
        self.written: set[Path] = set()
        self.written_text: set[str] = set()
        """More files written, named by text: the model pages (40,000 at 50x the data), whose
        `Path`s would only be hashed into `written` and turned back into text by `prune`."""
        self.stored: dict[str, tuple[int, int]] = {}
        """Size and mtime of each page this process wrote, by path (for the reuse record)."""
        self.models = views.collect_models(release)
        self.present = release.present
        """The release's tables, as every page is given them (made once, not per page)."""
        self.titles = {t["name"]: t.get("title") or t["name"] for t in release.manifest["tables"]}
        self.sources = {r["name"]: r for r in release.rows("sources")}
        runs = {r["run_id"]: r for r in release.manifest.get("source_runs", [])}
        self.runs = runs | {r["run_id"]: r for r in release.rows("source_runs")}
        self.data_dates = views.data_dates(release, self.sources)
        """Each source's data date and its age when the release was made (every footer)."""
        self.source_dates = {d["source"]: d["as_of"] for d in self.data_dates}
        """Each source's data date, as every footer shows it (a model page's keyed value)."""
        for model_id, entries in hub.board_entries(release, self.source_dates).items():
            if model_id in self.models:  # every board it is on, listed on its page (hub.py)
                self.models[model_id].boards = entries
        hrefs = {i: m.href for i, m in self.models.items()}
        self.env: jinja2.Environment = PageEnvironment(
            loader=jinja2.FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            auto_reload=False,  # one build, fixed templates: no stat of each file per page
        )
        self.env.filters.update(
            num=remembered(markup.number), usd=remembered(markup.usd), text=markup.text,
            when=remembered(markup.when), q=quote, evidence=evidence_url,
        )  # fmt: skip
        self.env.tests["simulated"] = markup.is_simulated
        self.env.globals.update(
            release=release.manifest,
            kgi_components=views.kgi_components(release.schema),
            evaluations=release.schema.evaluations,
            capabilities=views.capabilities(release.schema),
            MISSING=markup.MISSING,
            RELEASE_PAGES=RELEASE_PAGES,
            # what the footer shows, no more: a model page's reuse key holds it (ages at each
            # release would render every model page again for a footer that reads the same)
            data_dates=[views.footer_date(d) for d in self.data_dates],
            board_chart=board_views.board_chart,
            simulated_label=lambda table: board_views.simulated_label(
                table, release.tables, release.large
            ),
            model_link=lambda root, model_id, name: hub.model_link(root, hrefs, model_id, name),
            usecase_models=hub.usecase_model(release),
        )
        # Model pages see only the release-wide values their reuse key holds (reuse.py).
        self.model_env = self.env.overlay()
        self.model_env.globals = {name: self.env.globals[name] for name in MODEL_GLOBALS}

    @cached_property
    def simulated(self) -> dict[str, bool]:
        """Whether each table holds a row marked simulated. Read by the pages that name
        tables (`shows`), never by a model page: a look at every row of the release, made
        when first asked, so after the model pages' workers have started, not before."""
        release = self.release
        return {
            t: any(markup.is_simulated(r) for r in rows) for t, rows in release.tables.items()
        } | {t: large.simulated[1] > 0 for t, large in release.large.items()}

    # -- output -----------------------------------------------------------------------
    def render(
        self,
        path: str,
        template: str,
        shows: Sequence[str] = (),
        env: jinja2.Environment | None = None,
        **context: Any,
    ) -> None:
        """Render `template` into `path` (relative to the site root), by `env` if given."""
        self.render_file(path, template, shows, env, **context)
        self.written.add(target := self.out / path)
        self.pages.append(target)

    def render_file(
        self,
        path: str,
        template: str,
        shows: Sequence[str] = (),
        env: jinja2.Environment | None = None,
        **context: Any,
    ) -> None:
        """`render`, without recording the page as written (a worker process's part). The
        file is named by text, not by a `Path`: building one and turning it back into text
        for `open` cost 2% of a model page."""
        root = "../" * path.count("/")
        simulated = [self.titles.get(t, t) for t in shows if self.simulated.get(t)]
        context.setdefault("simulated", simulated)
        template_ = (env or self.env).get_template(template)
        html = template_.render(root=root, page=path, present=self.present, **context)
        stored = store(f"{self.out_text}/{path}", html.encode("utf-8"))
        self.stored[path] = (stored.size, stored.mtime_ns)

    def write(self, target: Path, content: bytes) -> None:
        """Write a site file (left alone when its bytes are already there)."""
        write_if_changed(target, content)
        self.written.add(target)

    def prune(self) -> None:
        """Remove what an earlier build generated and this one did not write; `data/` (the
        release asset's) stays. Files this build wrote with unchanged bytes keep their inode
        and mtime, so an incremental build touches only the pages that changed. The folders
        are read with `os.scandir`, whose entries know their type: no look-up per file."""
        # a str hashes much faster than a Path
        written = {str(p) for p in self.written} | self.written_text
        for name in GENERATED_DIRS:
            _prune_folder(str(self.out / name), written)
        try:
            top = list(os.scandir(self.out))
        except FileNotFoundError:
            return
        for entry in top:
            ours = entry.name.endswith(".html") or (
                entry.name.startswith(".") and entry.name.endswith(".tmp")
            )
            if ours and _plain_file(entry) and entry.path not in written:
                os.unlink(entry.path)

    def copy_files(self) -> list[Row]:
        """Static assets and the older releases' manifests; the older manifests, newest first."""
        for asset in sorted(STATIC.rglob("*")):
            if asset.is_file():
                self.copy(asset, f"static/{asset.relative_to(STATIC).as_posix()}")
        older = []
        for manifest_path in sorted(self.releases_root.glob("*/manifest.json")):
            release_id = manifest_path.parent.name
            if release_id.startswith("."):  # a release still being written
                continue
            manifest = read_json(manifest_path)
            if manifest.get("release_id") == release_id != self.release.id:
                self.copy(manifest_path, f"releases/{release_id}/manifest.json")
                older.append(manifest)
        return sorted(older, key=lambda m: str(m.get("created_at", "")), reverse=True)

    def copy(self, source: Path, target: str) -> None:
        """Copy a file into the site (not its mode: release files are read-only)."""
        copy_if_changed(source, self.out / target)
        self.written.add(self.out / target)

    def downloads(self) -> list[Row]:
        """Per table, a link for each file: to `data/` when the file there is identical,
        else to a copy under `releases/<id>/`. Also copies the manifest, the schema and the
        diff there, and the datapackage and DuckDB file."""
        release, base = self.release, f"releases/{self.release.id}/"
        for name in (
            "manifest.json",
            "schema.json",
            "diff.json",
            "datapackage.json",
            "bench.duckdb",
        ):
            if (release.directory / name).is_file():
                self.copy(release.directory / name, base + name)
        sizes = {f["path"]: f.get("bytes") for f in release.manifest.get("files", [])}
        entries = []
        for table in release.manifest.get("tables", []):
            links = []
            for kind, described in sorted(table.get("files", {}).items()):
                stable = f"data/{table['name']}.{kind}"
                digest = described.get("sha256", "")
                if not _identical(self.out / stable, release.directory / described["path"], digest):
                    self.copy(release.directory / described["path"], base + described["path"])
                    stable = quote(base + described["path"])
                links.append({"kind": kind, "href": stable, "sha256": digest,
                              "bytes": sizes.get(described["path"])})  # fmt: skip
            entries.append(table | {"links": links})
        return entries

    # -- pages --------------------------------------------------------------------------
    def build(self) -> SiteResult:
        """Render every page; return what was written."""
        self.out.mkdir(parents=True, exist_ok=True)
        by_name = sorted(self.models.values(), key=lambda m: (m.name.lower(), m.id))
        # The model pages render in forked workers from the start, while this process
        # writes the rest of the site, then takes its own share of what is left.
        shared = self.shared_inputs()
        record = PageRecord(self.out, inputs_digest(shared, self.release.digests))
        split = self.start_model_pages(by_name, record, shared)
        try:
            older = self.copy_files()
            tables = self.downloads()
            self.board_pages(tables, by_name)
            at = len(self.pages)  # where a one-process build lists the model pages
            self.site_pages(tables, older)
        except BaseException:
            split.stop()
            raise
        self.finish_model_pages(split, by_name, record, at)
        self.prune()
        return SiteResult(pages=self.pages, release_id=self.release.id)

    def board_pages(self, tables: list[dict[str, Any]], by_name: list[Model]) -> None:
        """The home page and the large boards: Known Good Index, capability indices,
        market, Arena and the models list."""
        self.env.globals["table_downloads"] = {
            t["name"]: {link["kind"]: link["href"] for link in t["links"]} for t in tables
        }
        release, models = self.release, self.models
        boards = views.leaderboards(release, models)
        ranked = boards["leaderboard"]
        counts = {
            "models": len(models),
            "ranked": len(boards["leaderboard"]),
            "market": len(release.rows("market")),
            "arena": len(release.rows("arena_elo")),
        }
        kgi = ("known_good_index",)
        self.render("index.html", "index.html", kgi, top=boards["leaderboard"][:10], counts=counts)
        self.render(
            "known-good-index.html", "known_good_index.html", kgi,
            leaderboard=first_page(ranked, "known_good_index"),
            unranked=first_page(boards["unranked"], "known_good_index"),
            charted=min(len(ranked), CHART_ROWS),
            evidence=index_evidence(release.rows("index_lineage")),
            bars=board_views.kgi_bars(ranked[:CHART_ROWS], len(views.kgi_components(
                release.schema)), len(ranked)),
        )  # fmt: skip
        self.render(
            "capability-indices.html", "capability_indices.html", ("capability_indices",),
            boards=boards["capability_boards"],
            table=first_page(board_views.capability_table(
                release.rows("capability_indices"), models, views.capabilities(release.schema),
                {c: release.schema.rank_column("capability_indices", c)
                 for c, *_ in views.capabilities(release.schema)}), "capability_indices"),
        )  # fmt: skip
        points = board_views.price_index_points(models.values())
        market = board_views.market_rows(release.rows("market"), models)
        self.render(
            "market.html", "market.html", ("market",),
            priced=first_page(market["priced"], "market"),
            unpriced=first_page(market["unpriced"], "market"),
            scatter=board_views.price_index_chart(board_views.top_points(points, PAGE_ROWS)),
            points=points, charted=min(len(points), PAGE_ROWS),
        )  # fmt: skip
        arena = board_views.arena_boards(release.rows("arena_elo"), models, self.runs)
        self.render(
            "arena.html", "arena.html", ("arena_elo",),
            boards=[b | {"page": first_page(b["entries"], "arena_elo")} for b in arena],
        )  # fmt: skip
        self.render("models.html", "models.html", ("models",), models=first_page(by_name, "models"))
        compare.render_compare(self, by_name)

    def site_pages(self, tables: list[dict[str, Any]], older: list[Row]) -> None:
        """Every page after the models' own: methodology, documents, receipts, the suites'
        boards, about, attribution, downloads and what changed."""
        release, models = self.release, self.models
        self.methodology()
        for name, filename in DOCUMENTS.items():
            source = (SITE_SOURCES / filename).read_text("utf-8")
            self.render(
                f"{name}.html",
                "document.html",
                title=markup.first_heading(source, name.title()),
                body=markup.markdown(source),
            )
        render_receipts(self)  # before the boards: they link to receipts
        render_disclosures(self)
        self.render("pm-suite.html", "pm_suite.html", ("pm_setups", "pm_runs"),
                    **views.pm_view(release), **pm_checks.board_context(release))  # fmt: skip
        pm_checks.render_pm_checks(self, release)
        self.render("navigator.html", "navigator.html", ("navigator_models",),
                    **views.navigator_view(release))  # fmt: skip
        usecase = views.usecase_view(release)
        usecase["boards"] = [  # the rank shown follows the overlap of the 90% intervals
            board | {"rows": board_views.overlap_rank_rows(board["rows"], "ci_low", "ci_high")}
            for board in usecase["boards"]
        ]
        self.render("usecase-rank.html", "usecase_rank.html", ("usecase_runs",), **usecase)
        if "item_boards" in release.tables:  # the home page links them only then
            pairs = release.large.get("item_board_pairs") or release.rows("item_board_pairs")
            render_item_boards(self, release.rows("item_boards"), pairs,
                               release.rows("item_board_cards"),
                               release.rows("item_board_rank_sets"), self.sources)  # fmt: skip
        self.render(
            "about.html", "about.html", ("source_runs",),
            runs=views.last_runs(release, self.sources),
            dates=self.data_dates,
            failures=release.rows("pipeline_failures"),
        )  # fmt: skip
        publishers: dict[str, list[Row]] = defaultdict(list)
        for listed in release.rows("sources"):
            publishers[str(listed.get("publisher"))].append(listed)
        dated = {d["source"]: d for d in self.data_dates}
        self.render(
            "attribution.html", "attribution.html", publishers=sorted(publishers.items()),
            dated=dated,
        )  # fmt: skip
        self.render("downloads.html", "downloads.html", tables=tables, older=older)
        self.render(
            "changes.html", "changes.html", diff=views.diff_view(release, models, self.titles),
            summary=board_views.change_summary(release.diff, models),
            upstream=upstream_view(release.diff, models, self.sources,
                                   release.schema.evaluations),
            titles_of=self.titles,
        )  # fmt: skip

    def shared_inputs(self) -> str:
        """The key of what every model page may read besides its model's rows: the code,
        the keyed globals, and what `model_context` reads of the release (`reuse.py`)."""
        values = {name: self.model_env.globals[name] for name in MODEL_GLOBALS}
        read = {"present": self.present, "titles": self.titles, "runs": self.runs,
                "sources": self.sources, "schema": self.release.schema.document}  # fmt: skip
        return shared_key(code_digest(TEMPLATES), values | read)

    def start_model_pages(
        self, models: Sequence[Model], record: PageRecord, shared: str
    ) -> Split[Model, list[Any]]:
        """Begin every model's page in `self.workers` processes; a page whose inputs are
        those `record` holds for the page already there is kept (`reuse.py`).
        `finish_model_pages` ends it."""
        return Split(models, lambda model: self.model_page(model, record, shared),
                     lambda model: model.href, self.workers).start()  # fmt: skip

    def finish_model_pages(
        self, split: Split[Model, list[Any]], models: Sequence[Model], record: PageRecord, at: int
    ) -> None:
        """Render what is left of the model pages here, gather the workers', and list the
        pages at `at` (where a one-process build lists them) with the record of their keys."""
        entries = split.finish()
        self.pages[at:at] = [self.out / model.href for model in models]  # 40,000 at 50x
        self.written_text.update(os.path.join(self.out_text, model.href) for model in models)
        self.written.add(record.save(dict(zip([m.href for m in models], entries, strict=True))))

    def model_page(
        self, model: Model, record: PageRecord | None = None, shared: str = ""
    ) -> list[Any]:
        """Render one model's page unless `record` holds it from the same inputs; returns
        the page's key, then its file's size and mtime (see `reuse.py`). The key is of the
        model's rows (`model_context` is a function of them and of `shared`), so a kept
        page is never shaped, and its key is not even computed when no input changed."""
        if record is not None and (kept := record.kept(model.href)) is not None:
            return kept
        key = page_key(shared, model)
        held = record.reusable(model.href, key) if record is not None else None
        if held is None:
            self.render_model((model, self.model_context(model)))
            held = list(self.stored.pop(model.href))
        return [key, *held]

    def render_model(self, item: tuple[Model, dict[str, Any]]) -> None:
        """Write a model's page from its `model_context` (the chart is drawn here): every
        figure, its hosts, price history and provenance."""
        model, context = item
        history = [r for r in model.history if markup.missing(r.get("host"))]
        chart = price_history_svg(history, f"Price history of {model.name}")
        self.render_file(model.href, "model.html", env=self.model_env, chart=chart, **context)

    def model_context(self, model: Model) -> dict[str, Any]:
        """What a model's page shows besides its chart (a function of `model.history`): a
        function of `model` and of the release values `shared_inputs` keys, nothing else."""
        history = [r for r in model.history if markup.missing(r.get("host"))]
        own = {
            "market": [model.market or {}],
            "known_good_index": [model.kgi or {}],
            "capability_indices": [model.capability or {}],
            "provider_prices": model.providers,
            "price_history": model.history,
            "arena_elo": model.arena,
            "index_lineage": model.lineage,
            "openness_evidence": model.openness,
        }
        return dict(
            simulated=[
                self.titles.get(t, t)
                for t, rows in own.items()
                if any(markup.is_simulated(r) for r in rows)
            ],
            model=model,
            history=sorted(history, key=lambda r: str(r["observed_at"])),
            lineage=sorted(model.lineage, key=lambda r: str(r.get("evaluation_id"))),
            provenance=views.provenance(model, self.runs, self.sources),
            domains_missing=(
                views.missing_domains(self.release.schema, model.kgi) if model.kgi else []
            ),
            compare_data=compare.model_data(  # for the compare page (compare.py)
                model, self.source_dates, views.kgi_components(self.release.schema)
            ),
        )

    def methodology(self) -> None:
        """The methodology pages, from `site/methodology/*.md`."""
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


def _identical(stable: Path, published: Path, digest: str) -> bool:
    """Whether the download `stable` holds the bytes of the release file `published`, whose
    SHA-256 the manifest gives as `digest`: at once when it is that very file (the release
    asset hard-links them: at 50 times today's data, hashing them cost 3 s a build), else by
    hashing it."""
    try:
        if os.path.samefile(stable, published):
            return True
    except OSError:  # either is missing
        pass
    return stable.is_file() and sha256_file(stable) == digest


def _plain_file(entry: os.DirEntry[str]) -> bool:
    """A file or a symbolic link (to anything), by the type the folder listing gave."""
    return entry.is_file(follow_symlinks=False) or entry.is_symlink()


def _prune_folder(folder: str, written: set[str]) -> None:
    """Unlink every file under `folder` that is not in `written`, then every folder left
    empty (the deepest first); `folder` itself stays."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            _prune_folder(entry.path, written)
            with os.scandir(entry.path) as left:
                empty = next(left, None) is None
            if empty:
                os.rmdir(entry.path)
        elif _plain_file(entry) and entry.path not in written:
            os.unlink(entry.path)


def build_site(
    release_dir: Path, out_dir: Path, releases_root: Path, workers: int | None = None
) -> SiteResult:
    """Render the release in `release_dir` into `out_dir` (see the module docstring), the
    model pages in `workers` processes (default: `workers.default_workers()`)."""
    release = load_release(release_dir)
    with objects_frozen():  # the release lives as long as the build (see `objects_frozen`)
        return SiteBuilder(release, out_dir, releases_root, workers).build()


def latest_release(releases_root: Path) -> Path:
    """The folder of the release `releases_root/latest` names."""
    latest = releases_root / "latest"
    if not latest.is_file():
        raise FileNotFoundError(f"no release yet: {latest} is missing")
    return releases_root / safe_id(latest.read_text("utf-8").strip())
