"""An incremental site build: after one model's price changes, only the pages showing that
price are rewritten (new inode and mtime); every other page is the live version's file, and
the live version itself is never changed in place (the atomic swap stays honest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_pipeline.site import build_site
from bench_pipeline.site.build import RELEASE_PAGES
from bench_pipeline.site.paging import (
    CHART_ROWS,
    PAGE_ROWS,
    copy_if_changed,
    first_page,
    write_if_changed,
)
from bench_pipeline.site.swap import publish_site
from bench_pipeline.site.views import collect_models, load_release
from tests.synthetic import copy_downloads, synthetic_tables, write_release

pytestmark = pytest.mark.store


def _publish(site: Path, release: Path) -> Path:
    def build(folder: Path):
        copy_downloads(release, folder)
        return build_site(release, folder, release.parent)

    return publish_site(site, build)[0]


def _stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in folder.rglob("*.html")
    }


def test_a_price_change_rewrites_only_the_pages_showing_that_price(tmp_path: Path) -> None:
    releases, site = tmp_path / "releases", tmp_path / "build" / "site"
    tables = synthetic_tables(30)
    first = write_release(releases, "r-one", tables, created_at="2025-06-01T06:00:00Z")
    old_version = _publish(site, first)
    before = _stamps(old_version)
    old_bytes = {name: (old_version / name).read_bytes() for name in before}

    changed = next(r for r in tables["market"] if r.get("blended_price_usd_per_1m"))
    changed.update(input_usd_per_1m="123.45", blended_price_usd_per_1m="234.56")
    second = write_release(
        releases, "r-two", tables, created_at="2025-06-02T06:00:00Z", previous="r-one"
    )
    new_version = _publish(site, second)
    after = _stamps(new_version)

    assert new_version != old_version and set(after) == set(before)
    rewritten = {name for name in after if after[name] != before[name]}
    model_page = collect_models(load_release(second))[changed["model_id"]].href
    showing_price = {model_page, "market.html", "models.html"}
    assert rewritten == showing_price | set(RELEASE_PAGES), sorted(rewritten)
    assert "$234.56" in (new_version / model_page).read_text("utf-8")
    # The live version before the swap kept its own bytes: nothing was written in place.
    assert {name: (old_version / name).read_bytes() for name in before} == old_bytes
    assert "$234.56" not in (old_version / model_page).read_text("utf-8")


def test_a_rebuild_of_the_same_release_rewrites_nothing(tmp_path: Path) -> None:
    releases, site = tmp_path / "releases", tmp_path / "build" / "site"
    release = write_release(
        releases, "r-one", synthetic_tables(12), created_at="2025-06-01T06:00:00Z"
    )
    before = _stamps(_publish(site, release))
    assert _stamps(_publish(site, release)) == before


def test_a_page_no_longer_built_is_removed(tmp_path: Path) -> None:
    releases, site = tmp_path / "releases", tmp_path / "site"
    release = write_release(
        releases, "r-one", synthetic_tables(12), created_at="2025-06-01T06:00:00Z"
    )
    stale = site / "models" / "retired-model.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("an earlier build's page", "utf-8")
    (site / "data").mkdir()
    kept = site / "data" / "keep.txt"
    kept.write_text("the release asset's", "utf-8")
    build_site(release, site, releases)
    assert not stale.exists() and kept.exists()
    assert not list(site.rglob(".*.tmp"))


def test_a_large_table_renders_its_first_page_and_says_where_the_rest_is(
    tmp_path: Path,
) -> None:
    releases, site = tmp_path / "releases", tmp_path / "site"
    models = PAGE_ROWS + 7
    release = write_release(
        releases, "r-one", synthetic_tables(models), created_at="2025-06-01T06:00:00Z"
    )
    build_site(release, site, releases)
    page = (site / "models.html").read_text("utf-8")
    assert page.count('<tr><td><a href="models/') == PAGE_ROWS
    assert f"first {PAGE_ROWS:,} of {models:,} models" in page
    manifest = json.loads((release / "manifest.json").read_text("utf-8"))
    files = next(t["files"] for t in manifest["tables"] if t["name"] == "models")
    for kind in ("csv", "json"):
        assert f'releases/r-one/{files[kind]["path"]}">{kind.upper()}</a>' in page
    kgi = (site / "known-good-index.html").read_text("utf-8")
    chart = kgi.split('<div class="chart-box">')[1].split("</div>")[0]
    ranked = sum(1 for r in manifest_rows(release, "known_good_index") if r["known_good_index"])
    assert ranked > CHART_ROWS and f"The top {CHART_ROWS:,} of {ranked:,} ranked models" in kgi
    assert chart.count("<title>") <= CHART_ROWS + 1 and f"top {CHART_ROWS:,} of" in chart


def manifest_rows(release: Path, table: str) -> list[dict]:
    return json.loads((release / "data" / f"{table}.json").read_text("utf-8"))


def test_write_if_changed_leaves_equal_bytes_and_replaces_a_hard_link(tmp_path: Path) -> None:
    target, other = tmp_path / "page.html", tmp_path / "other.html"
    assert write_if_changed(target, b"one")
    inode = target.stat().st_ino
    assert not write_if_changed(target, b"one") and target.stat().st_ino == inode
    other.hardlink_to(target)
    assert write_if_changed(target, b"two")
    assert target.read_bytes() == b"two" and other.read_bytes() == b"one"
    assert first_page(list(range(5)), "t", 3).partial and not first_page([1], "t").partial


def test_copy_if_changed_leaves_an_equal_copy_and_replaces_a_hard_link(tmp_path: Path) -> None:
    source, target, shared = tmp_path / "a.duckdb", tmp_path / "site" / "a.duckdb", tmp_path / "b"
    source.write_bytes(b"x" * 70_000)
    assert copy_if_changed(source, target)
    inode = target.stat().st_ino
    assert not copy_if_changed(source, target) and target.stat().st_ino == inode
    shared.hardlink_to(target)
    source.write_bytes(b"y" * 70_000)
    assert copy_if_changed(source, target)
    assert target.read_bytes() == source.read_bytes() and shared.read_bytes() == b"x" * 70_000
