"""An incremental build renders only the model pages whose inputs changed: after one
source's rows change, exactly the pages of the models it touched are rendered and rewritten,
every other page keeps its file (inode and mtime), and the site is byte-identical to a fresh
build of the new release. An edited page, a damaged record or changed code renders again."""

from __future__ import annotations

import copy
import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from bench_pipeline.site import build as site_build
from bench_pipeline.site import build_site
from bench_pipeline.site.build import SiteBuilder
from bench_pipeline.site.reuse import RECORD, page_key
from bench_pipeline.site.swap import publish_site
from bench_pipeline.site.views import collect_models, load_release
from tests.synthetic import copy_downloads, synthetic_tables, write_release

pytestmark = pytest.mark.store

MODELS = 30


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model pages rendered (one process, so every call is seen here)."""
    seen: list[str] = []
    render = SiteBuilder.render_model

    def spy(builder: SiteBuilder, item) -> None:
        seen.append(item[0].href)
        render(builder, item)

    monkeypatch.setattr(SiteBuilder, "render_model", spy)
    return seen


def _build(release: Path, site: Path) -> None:
    copy_downloads(release, site)
    build_site(release, site, release.parent, workers=1)


def _publish(site: Path, release: Path) -> Path:
    def build(folder: Path):
        copy_downloads(release, folder)
        return build_site(release, folder, release.parent, workers=1)

    return publish_site(site, build)[0]


def _stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in folder.rglob("*.html")}  # fmt: skip


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.html")}


def test_one_source_change_renders_only_the_models_it_touched(
    tmp_path: Path, rendered: list[str]
) -> None:
    releases, site = tmp_path / "releases", tmp_path / "build" / "site"
    tables = synthetic_tables(MODELS)
    first = write_release(releases, "r-one", tables, created_at="2025-06-01T06:00:00Z")
    old_version = _publish(site, first)
    every_model = {m.href for m in collect_models(load_release(first)).values()}
    assert set(rendered) == every_model  # a fresh site renders every model page
    before = _stamps(old_version)

    # One source (the Arena) publishes new ratings for two models.
    touched_ids = sorted({r["model_id"] for r in tables["arena_elo"]})[:2]
    for row in tables["arena_elo"]:
        if row["model_id"] in touched_ids:
            row.update(rating=row["rating"] + 25.0, votes=123_456)
    second = write_release(
        releases, "r-two", tables, created_at="2025-06-02T06:00:00Z", previous="r-one"
    )
    models = collect_models(load_release(second))
    touched = {models[i].href for i in touched_ids}
    rendered.clear()
    new_version = _publish(site, second)
    after = _stamps(new_version)

    assert sorted(rendered) == sorted(touched)
    rewritten_models = {n for n in after if n.startswith("models/") and after[n] != before[n]}
    assert rewritten_models == touched
    assert all("123,456" in (new_version / href).read_text("utf-8") for href in touched)
    fresh = tmp_path / "fresh"
    _build(second, fresh)
    assert _bytes(new_version) == _bytes(fresh)


def test_a_rebuild_renders_no_model_page_and_keeps_the_files(
    tmp_path: Path, rendered: list[str]
) -> None:
    release = write_release(tmp_path / "releases", "r-one", synthetic_tables(MODELS),
                            created_at="2025-06-01T06:00:00Z")  # fmt: skip
    site = tmp_path / "site"
    _build(release, site)
    before, rendered[:] = _stamps(site), []
    _build(release, site)
    assert rendered == [] and _stamps(site) == before


def test_an_unchanged_rebuild_neither_shapes_nor_keys_a_model_page(
    tmp_path: Path, rendered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    release = write_release(tmp_path / "releases", "r-one", synthetic_tables(MODELS),
                            created_at="2025-06-01T06:00:00Z")  # fmt: skip
    site = tmp_path / "site"
    _build(release, site)
    before, expected = _stamps(site), _bytes(site)
    edited = sorted(set(rendered))[0]
    rendered.clear()

    def refuse(*_: object) -> None:
        raise AssertionError("a model page was shaped or keyed")

    with monkeypatch.context() as refusing:
        refusing.setattr(site_build, "page_key", refuse)
        refusing.setattr(SiteBuilder, "model_context", refuse)
        _build(release, site)
    assert rendered == [] and _stamps(site) == before

    (site / edited).write_text("edited", "utf-8")  # every input the same, but not this file
    _build(release, site)
    assert rendered == [edited] and _bytes(site) == expected


def test_a_changed_source_publisher_renders_every_page_citing_it(
    tmp_path: Path, rendered: list[str]
) -> None:
    """A release-wide value a model page shows (its provenance's publisher) is in the key."""
    releases, site = tmp_path / "releases", tmp_path / "site"
    tables = synthetic_tables(MODELS)
    _build(write_release(releases, "r-one", tables, created_at="2025-06-01T06:00:00Z"), site)
    for row in tables["sources"]:
        if row["name"] == "arena":
            row["publisher"] = "Arena & Co <renamed>"
    second = write_release(releases, "r-two", tables, created_at="2025-06-02T06:00:00Z")
    rendered.clear()
    _build(second, site)
    citing = {m.href for m in collect_models(load_release(second)).values() if m.arena}
    assert citing and citing <= set(rendered)
    assert all("Arena &amp; Co &lt;renamed&gt;" in (site / href).read_text() for href in citing)
    fresh = tmp_path / "fresh"
    _build(second, fresh)
    assert _bytes(site) == _bytes(fresh)


def test_an_edited_page_a_damaged_record_or_new_code_render_again(
    tmp_path: Path, rendered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    release = write_release(tmp_path / "releases", "r-one", synthetic_tables(MODELS),
                            created_at="2025-06-01T06:00:00Z")  # fmt: skip
    site = tmp_path / "site"
    _build(release, site)
    expected = _bytes(site)
    pages = sorted(set(rendered))

    edited, removed = site / pages[0], site / pages[1]
    edited.write_text(edited.read_text("utf-8").replace("Model id", "Model ID"), "utf-8")
    removed.unlink()
    rendered.clear()
    _build(release, site)
    assert sorted(rendered) == sorted(pages[:2]) and _bytes(site) == expected

    (site / RECORD).write_text("{not json", "utf-8")
    rendered.clear()
    _build(release, site)
    assert sorted(rendered) == pages and _bytes(site) == expected
    assert json.loads((site / RECORD).read_text("utf-8"))["pages"].keys() == set(pages)

    monkeypatch.setattr(site_build, "code_digest", lambda templates: "another version")
    rendered.clear()
    _build(release, site)
    assert sorted(rendered) == pages and _bytes(site) == expected


def test_a_model_page_may_read_only_the_keyed_release_values(tmp_path: Path) -> None:
    """A template reading a release-wide value the reuse key lacks fails the build."""
    release = write_release(tmp_path / "releases", "r-one", synthetic_tables(8),
                            created_at="2025-06-01T06:00:00Z")  # fmt: skip
    builder = SiteBuilder(load_release(release), tmp_path / "site", release.parent, workers=1)
    template = builder.model_env.from_string("{{ release.release_id }}")
    with pytest.raises(Exception, match="release"):
        template.render()
    assert builder.env.from_string("{{ release.release_id }}").render() == "r-one"


def test_a_page_key_is_a_function_of_the_values_alone(tmp_path: Path) -> None:
    """Equal inputs key alike however their objects are shared or interned; a change of
    value or of type (`1`, `1.0`, `True`; `-0.0`, `0.0`) changes the key; inputs the fast
    serialisation cannot write (a `Decimal`) are keyed too, and apart."""
    name = "".join(["model", "-", "one"])  # equal to, not the same object as, the literal
    shared = {"model_id": "model-one", "price": 1.5}
    first = [shared, shared, {"n": [1, 2]}]
    second = [{"model_id": name, "price": 1.5}, {"model_id": sys.intern(name), "price": 1.5},
              {"n": [1, 2]}]  # fmt: skip
    assert page_key("s", first) == page_key("s", second)
    assert page_key("s", first) != page_key("t", first)
    variants = [1, 1.0, True, -0.0, 0.0, "1", None, [1], {"1": 1}, Decimal("1"), Decimal("1.0")]
    keys = {page_key("s", [{"v": value}]) for value in variants}
    assert len(keys) == len(variants)
    release = write_release(tmp_path / "releases", "r-one", synthetic_tables(4),
                            created_at="2025-06-01T06:00:00Z")  # fmt: skip
    model = max(collect_models(load_release(release)).values(), key=lambda m: len(m.providers))
    key = page_key("s", model)
    assert model.providers and page_key("s", copy.deepcopy(model)) == key
    model.providers[0] = model.providers[0] | {"input_usd_per_1m": "0.5000001"}
    assert page_key("s", model) != key
