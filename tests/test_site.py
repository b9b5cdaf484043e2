"""The static site, built from a synthetic release folder (and once from a real `bench run`)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markupsafe import escape
from synthetic import (
    HOSTILE_NAME,
    PREVIOUS_ID,
    RELEASE_ID,
    copy_downloads,
    synthetic_tables,
    write_release,
    write_synthetic_release,
)

from bench_pipeline.site import build as site_build
from bench_pipeline.site import build_site, latest_release
from bench_pipeline.site.build import METHODOLOGY_ORDER, SiteResult
from bench_pipeline.site.charts import price_history_svg
from bench_pipeline.site.markup import markdown, usd

pytestmark = pytest.mark.unit

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
TOP_PAGES = (
    "index.html",
    "known-good-index.html",
    "capability-indices.html",
    "market.html",
    "arena.html",
    "models.html",
    "about.html",
    "attribution.html",
    "downloads.html",
    "changelog.html",
    "corrections.html",
    "changes.html",
)


@dataclass
class Built:
    releases: Path
    release: Path
    site: Path
    result: SiteResult

    def page(self, name: str) -> str:
        return (self.site / name).read_text("utf-8")

    def table(self, name: str) -> list[dict]:
        return json.loads((self.release / "data" / f"{name}.json").read_text("utf-8"))


def build(tmp_path: Path, models: int = 12) -> Built:
    releases, site = tmp_path / "releases", tmp_path / "site"
    release = write_synthetic_release(releases, models)
    copy_downloads(release, site)
    return Built(releases, release, site, build_site(release, site, releases))


@pytest.fixture
def built(tmp_path: Path) -> Built:
    return build(tmp_path)


class Links(HTMLParser):
    """Every href/src in a page, and whether it has a <script> element."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"
        self.targets += [v for k, v in attrs if k in ("href", "src") and v]


def parse(path: Path) -> Links:
    parser = Links()
    parser.feed(path.read_text("utf-8"))
    return parser


def broken_links(site: Path) -> list[str]:
    broken = []
    for page in site.rglob("*.html"):
        for target in parse(page).targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # external (http, mailto) or an anchor on the same page
            resolved = (page.parent / unquote(parts.path)).resolve()
            if not resolved.is_file() or not resolved.is_relative_to(site.resolve()):
                broken.append(f"{page.relative_to(site)} -> {target}")
    return broken


def model_page(built: Built, model_id: str) -> str:
    models = built.page("models.html")
    match = re.search(
        rf'href="(models/[^"]+)">[^<]*</a></td><td><code>{re.escape(model_id)}<', models
    )
    assert match, model_id
    return built.page(match.group(1))


def row_of(html: str, label: str) -> str:
    """The <tr> of a table row whose model link reads `label` (as the page escapes it)."""
    match = re.search(rf"<tr><td>[^\n]*?>{re.escape(str(escape(label)))}</a>.*?</tr>", html)
    assert match, label
    return match.group(0)


def test_every_page_is_generated_with_relative_links_only(built: Built) -> None:
    pages = {p.relative_to(built.site).as_posix() for p in built.result.pages}
    assert set(TOP_PAGES) <= pages
    assert {f"methodology/{name}.html" for name in METHODOLOGY_ORDER} <= pages
    assert len([p for p in pages if p.startswith("models/")]) == len(built.table("models"))
    assert all(p.is_file() for p in built.result.pages)
    assert built.result.release_id == RELEASE_ID
    for page in built.result.pages:
        for target in parse(page).targets:
            assert not target.startswith("/"), f"{page}: absolute link {target}"


def test_every_internal_link_resolves_to_a_file(built: Built) -> None:
    assert broken_links(built.site) == []


def test_every_script_is_the_sites_own_file(built: Built) -> None:
    """Pages read without scripts; every page loads only the site's own table script, and
    UseCaseRank adds its weight controls (a JSON data block and its own file), the compare
    page its own file and a model page its figures as JSON data for it; nothing is
    fetched from elsewhere and no page carries inline code."""
    scripted = {p.relative_to(built.site).as_posix(): parse(p).scripts for p in built.result.pages}
    assert set(scripted.values()) == {1, 2, 3}
    assert [name for name, count in scripted.items() if count == 3] == ["usecase-rank.html"]
    # the compare page's own script; a model page's figures as JSON data for it
    twice = sorted(name for name, count in scripted.items() if count == 2)
    assert twice == ["compare.html", *sorted(n for n in scripted if n.startswith("models/"))]
    assert '<script type="application/json" id="compare-data">' in model_page(built, "org3/model-3")
    assert '<script src="static/compare.js"></script>' in built.page("compare.html")
    for page in built.result.pages:
        html = page.read_text("utf-8")
        root = "../" * page.relative_to(built.site).as_posix().count("/")
        assert f'<script src="{root}static/tables.js" defer></script>' in html, page
    html = (built.site / "usecase-rank.html").read_text("utf-8")
    assert '<script src="static/usecase.js"></script>' in html
    assert '<script type="application/json" id="usecase-runs">' in html


def test_a_hostile_model_name_stays_text(built: Built) -> None:
    for page in built.result.pages:
        html = page.read_text("utf-8")
        assert HOSTILE_NAME not in html, page
    for name in ("known-good-index.html", "models.html", "market.html", "changes.html"):
        assert ESCAPED in built.page(name), name
    assert f"<h1>{ESCAPED}" in model_page(built, "org3/model-3")


def test_a_missing_value_is_an_em_dash_never_zero(built: Built) -> None:
    unpriced = next(r for r in built.table("market") if r["input_usd_per_1m"] is None)
    priced, without = built.page("market.html").split('id="unpriced"')
    assert f">{unpriced['model_name']}</a>" not in priced  # listed apart, not as $0
    row = row_of(without, unpriced["model_name"])
    assert "$0" not in row
    own = model_page(built, unpriced["model_id"])
    assert "<dd>— · —</dd>" in own and "per 1M tokens</dt><dd>—</dd>" in own
    no_livebench = next(
        r
        for r in built.table("known_good_index")
        if r["livebench"] is None and r["known_good_index"] is not None
    )
    leaderboard_row = row_of(built.page("known-good-index.html"), no_livebench["model_name"])
    assert "<td>—</td>" in leaderboard_row
    page = model_page(built, no_livebench["model_id"])
    assert '<td class="n">—</td>' in page


def test_every_index_value_says_how_many_of_six_evaluations(built: Built) -> None:
    html = built.page("known-good-index.html")
    ranked = [r for r in built.table("known_good_index") if r["known_good_index"] is not None]
    assert len(re.findall(r"based on \d of 6 evaluations", html)) == len(ranked)
    for row in ranked:
        expected = f"based on {row['index_components']} of 6 evaluations"
        assert expected in row_of(html, row["model_name"])
        assert expected in model_page(built, row["model_id"])


def test_ineligible_models_are_listed_separately_not_ranked(built: Built) -> None:
    html = built.page("known-good-index.html")
    ranked_part, unranked_part = html.split('id="not-ranked"')
    for row in built.table("known_good_index"):
        if row["known_good_index"] is None:
            assert f">{row['model_name']}</a>" in unranked_part
            assert f">{row['model_name']}</a>" not in ranked_part
    assert "mathematics" in unranked_part


def test_market_page_shows_the_price_flag_and_model_pages_the_hosts(built: Built) -> None:
    flagged = next(r for r in built.table("market") if r["price_flag"])
    assert "⚑ flagged" in row_of(built.page("market.html"), flagged["model_name"])
    hosts = [r for r in built.table("provider_prices") if r["model_id"] == flagged["model_id"]]
    page = model_page(built, flagged["model_id"])
    assert hosts and all(f"<td>{h['provider_name']}" in page for h in hosts)
    # Each row names its listing, so two listings of one host are told apart.
    assert all(f"<td><code>{h['tag']}</code></td>" in page for h in hosts)
    assert '<svg class="chart"' in page and "Where these numbers came from" in page
    assert "Epoch AI" in page  # the publisher of the evaluation scores


def test_arena_shows_intervals_votes_and_preliminary(built: Built) -> None:
    html = built.page("arena.html")
    assert "95% interval" in html and "preliminary" in html
    assert re.search(r"\d,\d{3}–\d,\d{3}", html)


def test_methodology_pages_exist_in_the_projects_words(built: Built) -> None:
    text = ""
    for name in METHODOLOGY_ORDER:
        html = built.page(f"methodology/{name}.html")
        assert "<h1" in html, name
        text += html
    for phrase in (
        "min-max",
        "eligible",
        "needs 2 of 3",
        "(3 × input + output) / 4",
        "price flag",
        "telemetry",
        "Openness",
        "quarantine",
        "rejected",
        "Command R+",
        "Phi-3-mini (4k)",
        "never enter the Known Good Index",
        "we do not publish it",
    ):
        assert phrase in text, phrase


def test_about_lists_the_last_run_of_every_source(built: Built) -> None:
    html = built.page("about.html")
    for run in built.table("source_runs"):
        assert run["run_id"] in html
    assert "rejected" in html and "fewer rows than 0.5" in html


def test_attribution_names_every_publisher_licence_and_text(built: Built) -> None:
    html = built.page("attribution.html")
    for source in built.table("sources"):
        for field in ("publisher", "licence", "attribution"):
            assert source[field].replace("'", "&#39;") in html, source[field]


def test_downloads_link_every_file_and_prefer_identical_stable_copies(tmp_path: Path) -> None:
    releases, site = tmp_path / "releases", tmp_path / "site"
    release = write_synthetic_release(releases)
    copy_downloads(release, site)
    (site / "data" / "market.csv").write_text("stale\n")  # not the release's file
    build_site(release, site, releases)
    html = (site / "downloads.html").read_text()
    manifest = json.loads((release / "manifest.json").read_text())
    for table in manifest["tables"]:
        for kind in ("csv", "json", "parquet"):
            stable = f'href="data/{table["name"]}.{kind}"'
            copy = f'href="releases/{RELEASE_ID}/data/{table["name"]}.{kind}"'
            expected = (
                copy
                if kind == "parquet" or (table["name"] == "market" and kind == "csv")
                else stable
            )
            assert expected in html, (table["name"], kind)
    assert (site / "data" / "market.csv").read_text() == "stale\n"  # data/ is left alone
    assert f'href="releases/{PREVIOUS_ID}/manifest.json"' in html
    assert broken_links(site) == []


def test_a_download_that_is_the_release_file_itself_is_linked_without_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    releases, site = tmp_path / "releases", tmp_path / "site"
    release = write_synthetic_release(releases)
    copy_downloads(release, site)
    manifest = json.loads((release / "manifest.json").read_text())
    for table in manifest["tables"]:  # hard links, as the release asset places them
        for kind in ("csv", "json"):
            if (table["name"], kind) != ("market", "csv"):  # that one stays a plain copy
                stable = site / "data" / f"{table['name']}.{kind}"
                stable.unlink()
                os.link(release / table["files"][kind]["path"], stable)
    hashed: list[str] = []
    real = site_build.sha256_file
    monkeypatch.setattr(site_build, "sha256_file", lambda p: hashed.append(p.name) or real(p))
    build_site(release, site, releases)
    assert hashed == ["market.csv"]  # only the copy is hashed: it is identical, so linked
    html = (site / "downloads.html").read_text()
    for table in manifest["tables"]:
        for kind in ("csv", "json"):
            assert f'href="data/{table["name"]}.{kind}"' in html, (table["name"], kind)


def test_what_changed_renders_the_diff(built: Built) -> None:
    html = built.page("changes.html")
    assert PREVIOUS_ID in html and "epoch-" in html and "retired/model-x" in html
    assert "Rank moves" in html and "New table" in html and "leaderboard=text" in html


def test_first_release_has_nothing_to_compare(tmp_path: Path) -> None:
    releases = tmp_path / "releases"
    release = write_release(releases, "r1", synthetic_tables(6), created_at="2025-01-01T00:00Z")
    (release / "diff.json").write_text(json.dumps({"from": None, "to": "r1", "tables": {}}))
    build_site(release, tmp_path / "site", releases)
    assert "no earlier release" in (tmp_path / "site" / "changes.html").read_text()
    assert "This is the first release" in (tmp_path / "site" / "downloads.html").read_text()
    assert broken_links(tmp_path / "site") == []


def test_no_page_labels_simulated_data_unless_a_row_says_so(tmp_path: Path) -> None:
    plain = build(tmp_path / "plain")
    assert not any('class="badge simulated"' in p.read_text() for p in plain.result.pages)
    tables = synthetic_tables(8)
    tables["market"][0]["simulated"] = True
    releases = tmp_path / "sim"
    release = write_release(releases, "r1", tables, created_at="2025-01-01T00:00Z")
    build_site(release, tmp_path / "sim-site", releases)
    market = (tmp_path / "sim-site" / "market.html").read_text()
    assert "Simulated data:" in market and market.count('class="badge simulated"') == 2
    assert "Simulated data:" not in (tmp_path / "sim-site" / "arena.html").read_text()
    pages = {p.name: p.read_text() for p in (tmp_path / "sim-site" / "models").glob("*.html")}
    labelled = [name for name, html in pages.items() if "Simulated data:" in html]
    assert labelled == ["org0-model-0.html"]


def test_a_rebuild_replaces_old_pages_and_keeps_data(tmp_path: Path) -> None:
    built = build(tmp_path)
    stale = built.site / "models" / "gone.html"
    stale.write_text("old")
    build_site(built.release, built.site, built.releases)
    assert not stale.exists()
    assert (built.site / "data" / "market.json").is_file()


def test_titles_and_ranks_come_from_the_release(built: Built) -> None:
    schema = json.loads((built.release / "schema.json").read_text("utf-8"))
    titles = {e["id"]: e["title"] for e in schema["evaluations"]}
    board = built.page("known-good-index.html")
    assert f'<th class="n">{escape(titles["math_aime"])}</th>' in board  # evaluations.toml's
    ranks = [r["rank"] for r in built.table("known_good_index") if r["rank"] is not None]
    shown = [int(r) for r in re.findall(r"<tr><td>(\d+)</td><td><a href=\"models/", board)]
    assert shown == sorted(ranks)


def test_a_broken_schema_json_is_refused_naming_the_file(tmp_path: Path) -> None:
    release = write_synthetic_release(tmp_path / "releases")
    (release / "schema.json").write_text("{", "utf-8")
    with pytest.raises(ValueError, match=r"schema\.json: not valid JSON"):
        build_site(release, tmp_path / "site", tmp_path / "releases")
    (release / "schema.json").write_text('{"tables": 3}', "utf-8")
    with pytest.raises(ValueError, match=r"schema\.json: field 'tables' is missing or not a list"):
        build_site(release, tmp_path / "site", tmp_path / "releases")


def test_markdown_escapes_and_refuses_script_links() -> None:
    html = str(markdown("# T\n\n<b>x</b> [a](javascript:alert(1)) [b](x.html) `<i>`"))
    assert "<b>" not in html and "&lt;b&gt;" in html and "javascript" not in html
    assert '<a href="x.html">b</a>' in html and "<code>&lt;i&gt;</code>" in html


def test_price_chart_and_formatting() -> None:
    assert usd("3.437500") == "$3.44" and usd(None) == "—" and usd("20") == "$20.00"
    point = {"observed_at": "2025-01-01T00:00:00", "input_usd_per_1m": "1"}
    svg = str(price_history_svg([point | {"output_usd_per_1m": None}], "<x>"))
    assert svg.startswith("<svg") and "&lt;x&gt;" in svg and "<circle" in svg
    assert str(price_history_svg([], "none")) == ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.integration
def test_bench_serve_serves_the_built_site(tmp_path: Path) -> None:
    build(tmp_path / "home" / "build")  # releases/ and site/ under BENCH_HOME/build
    port = free_port()
    env = os.environ | {"BENCH_HOME": str(tmp_path / "home")}
    server = subprocess.Popen(
        [sys.executable, "-m", "bench_pipeline.cli", "serve", "--port", str(port)],
        # A parent that ignores TERM passes that on; serve must stop on TERM all the same.
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline, body = time.monotonic() + 30, ""
        while time.monotonic() < deadline and not body:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html") as response:
                    body = response.read().decode()
            except OSError:
                time.sleep(0.2)
        assert RELEASE_ID in body
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0, f"bench serve did not stop on SIGTERM ({server.returncode})"


@pytest.mark.integration
def test_bench_run_builds_the_site_from_the_latest_release(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "BENCH_SNAPSHOTS")}
    env["BENCH_HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "bench_pipeline.cli", "run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    releases, site = tmp_path / "build" / "releases", tmp_path / "build" / "site"
    release = latest_release(releases)
    assert "site__static_site" in result.stdout
    index = (site / "index.html").read_text()
    assert release.name in index
    assert broken_links(site) == []
    models = json.loads((release / "data" / "models.json").read_text())
    assert len(list((site / "models").glob("*.html"))) == len(models)
    downloads = (site / "downloads.html").read_text()
    assert 'href="data/known_good_index.csv"' in downloads  # the release asset's copy is used
    ranked = json.loads((release / "data" / "known_good_index.json").read_text())
    ranked = [r for r in ranked if r["known_good_index"] is not None]
    kgi = (site / "known-good-index.html").read_text()
    assert len(re.findall(r"based on \d of 6 evaluations", kgi)) == len(ranked) > 0
    # Every figure is dated by its data, hand-checked in the recorded snapshots: each capture is
    # months older than its cadence allows, so the about page calls every source STALE.
    about = (site / "about.html").read_text()
    table = about[about.index('id="data-dates-table"') : about.index('id="source-runs"')]
    for title, as_of in RECORDED_DATA_DATES.items():
        row = re.search(rf"<tr><td>{re.escape(title)}</td><td>([^<]*)</td>.*?</tr>", table)
        assert row, title
        assert row.group(1) == as_of, title
        assert '<span class="status stale">STALE</span>' in row.group(0), row.group(0)
    sources = {r["name"]: r for r in json.loads((release / "data" / "sources.json").read_text())}
    assert sources["epoch"]["data_as_of"].startswith("2026-04-15T14:17:38")
    package = json.loads((release / "datapackage.json").read_text())
    assert package["data_as_of"]["swebench"].startswith("2025-12-09")
    assert all(r.get("data_as_of") == package["data_as_of"] for r in package["resources"]
               if r["profile"] == "tabular-data-resource")  # fmt: skip
    history = json.loads((release / "data" / "price_history.json").read_text())
    assert history and {r["observed_at"][:10] for r in history} <= {"2026-08-14", "2026-09-10"}
    arena = (site / "arena.html").read_text()
    assert "fetched 20" not in arena and "Data as of: 2026-01-16" in arena


RECORDED_DATA_DATES = {
    "OpenRouter model listing": "2026-08-14",
    "models.dev catalogue": "2026-06-12",
    "OpenRouter per-provider endpoints": "2026-09-10",
    "Epoch AI Benchmarking Hub": "2026-04-15",
    "LMArena leaderboards": "2026-01-16",
    "SWE-bench leaderboards": "2025-12-09",
}


def test_every_page_says_when_each_sources_data_is_from(built: Built) -> None:
    """The footer of every page, model pages included, dates each source by its data (the
    synthetic release: made 2025-06-02 06:00, each source's data allowed 48 h)."""
    pages = sorted(built.site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        html = page.read_text("utf-8")
        footer = html[html.index('<p class="data-dates">') :]
        assert "OpenRouter endpoints 2025-06-01; OpenRouter model listing 2025-06-01." in footer
        assert 'Epoch AI Benchmarking Hub 2025-01-15 <span class="status stale">STALE' in footer
        assert 'LMArena leaderboards not stated <span class="status stale">UNDATED' in footer


def test_about_judges_each_source_by_the_age_of_its_data(built: Built) -> None:
    html = built.page("about.html")
    table = html[html.index('id="data-dates-table"') : html.index('id="source-runs"')]
    rows = dict(re.findall(r"<tr><td>([^<]+)</td>(.*?)</tr>", table))
    assert "<td>2025-01-15</td>" in rows["Epoch AI Benchmarking Hub"]
    assert "138 days" in rows["Epoch AI Benchmarking Hub"]  # at the release, not at the fetch
    assert "STALE" in rows["Epoch AI Benchmarking Hub"]
    assert "STALE" in rows["models.dev catalogue"]  # 13 days old, fetched minutes before
    assert (
        "10 h" in rows["OpenRouter model listing"] and "fresh" in rows["OpenRouter model listing"]
    )
    assert (
        "not stated" in rows["LMArena leaderboards"] and "UNDATED" in rows["LMArena leaderboards"]
    )
    assert "no publication date stated in the payload" in rows["LMArena leaderboards"]
    attribution = built.page("attribution.html")
    assert "Refreshed" not in attribution
    assert "daily at 04:00 UTC when the pipeline reads the source live" in attribution
    assert "as of 2025-01-15 (newest run date" in attribution and "138 days old" in attribution


def test_no_page_gives_a_fetch_time_for_the_datas_date(built: Built) -> None:
    """The runs were fetched on 2025-06-02 05:0x: that time never stands where a page means the
    data's date, and no page speaks of an observation or a fetch as the data's date."""
    fetched = [r["finished_at"][:10] for r in built.table("source_runs")]
    assert set(fetched) == {"2025-06-02"}
    for page in sorted(built.site.rglob("*.html")):
        html = page.read_text("utf-8")
        assert ">Observed<" not in html and "fetched 20" not in html, page
        footer = html[html.index('<p class="data-dates">') :].split("</p>")[0]
        assert "2025-06-02" not in footer, page
    about = built.page("about.html")
    table = about[about.index('id="data-dates-table"') : about.index('id="source-runs"')]
    assert "2025-06-02" not in table.replace("2025-06-02 06:00", "")  # the release's own time
    arena = built.page("arena.html")
    assert "Data as of: 2025-05-30 (LMArena" in arena and "fetched 20" not in arena
