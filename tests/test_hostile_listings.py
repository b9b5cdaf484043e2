"""Hostile OpenRouter listings through the whole `bench run`: registry, release and site.

The recorded snapshots with ten listings changed as an upstream (or an impostor) could send
them: a path as an id, ids with a NUL, a zero-width space, full-width letters, a trailing
space or a lone surrogate, a 5,000-character id, a megabyte-long name and markup as a name.
The run succeeds; each bad listing is quarantined or held back as an impostor with its
reason; the markup is escaped; nothing published carries the oversized text.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from stages import bench_env

from bench_pipeline.core import settings

pytestmark = pytest.mark.integration

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
MARKUP = "<script>alert(1)</script>"
LONG_ID = "lab/" + "x" * 5_000
HOSTILE = [  # (record, field, raw JSON)
    (0, "id", '"../../../etc/passwd"'),
    (1, "id", json.dumps(LONG_ID)),
    (2, "name", json.dumps("y" * 1_000_000)),
    (3, "id", '"openai/gpt-4o\\u0000"'),
    (4, "name", json.dumps(MARKUP)),
    (5, "id", '"a\\ud800b/c"'),
    (7, "id", '"openai/gpt-4o "'),
    (8, "id", '"\\uff2f\\uff30\\uff25\\uff2e\\uff21\\uff29/\\uff27\\uff30\\uff34-4o"'),
    (9, "id", '"openai/gpt-4o\\u200b"'),
]


def hostile_snapshots(root: Path) -> Path:
    shutil.copytree(SNAPSHOTS, root)
    path = root / "openrouter_models" / "models.json"
    document = json.loads(path.read_bytes())
    for number, field, _ in HOSTILE:
        document["data"][number][field] = f"\x01{number}\x01"
    text = json.dumps(document)
    for number, _, raw in HOSTILE:
        text = text.replace(json.dumps(f"\x01{number}\x01"), raw, 1)
    path.write_text(text)
    return root


def test_hostile_listings_are_held_back_and_nothing_oversized_is_published(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "bench_pipeline.cli", "run"],
        env=bench_env(home, hostile_snapshots(tmp_path / "snapshots")),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        quarantined = dict(
            conn.execute(
                "SELECT record_number, field FROM quarantine WHERE source = 'openrouter_models'"
            ).fetchall()
        )
        impostors = dict(
            conn.execute(
                "SELECT source_key, reason FROM quarantined_models "
                "WHERE source = 'openrouter_models'"
            ).fetchall()
        )
    assert quarantined == {
        1: "model_id",
        2: "model_id",
        3: "name",
        6: "model_id",
        8: "model_id",
        9: "model_id",
    }
    assert "control characters" in impostors["openai/gpt-4o\x00"]
    assert "invisible characters" in impostors["openai/gpt-4o\u200b"]

    published = [home / "build" / "site", home / "build" / "releases"]
    files = [p for root in published for p in root.rglob("*") if p.is_file()]
    assert files
    escaped = b"&lt;script&gt;alert(1)&lt;/script&gt;"
    seen_escaped = False
    for path in files:
        content = path.read_bytes()
        assert b"y" * 5_000 not in content and b"x" * 5_000 not in content, path
        if path.suffix == ".html":
            assert MARKUP.encode() not in content, path
            seen_escaped = seen_escaped or escaped in content
    assert seen_escaped  # the listing with markup as its name is published, as text


IMAGE = "![x](http://attacker/p.gif)"
HTML_IMAGE = "<img src=http://attacker/q.gif onerror=alert(1)>"


def _metadata_texts(result) -> list[tuple[str, str, str]]:
    """(asset, label, text) of every Markdown and text value the run's materialisations carry."""
    import dagster as dg

    found = []
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        for label, value in materialization.metadata.items():
            if isinstance(value, dg.MarkdownMetadataValue | dg.TextMetadataValue):
                text = value.md_str if isinstance(value, dg.MarkdownMetadataValue) else value.text
                found.append((materialization.asset_key.to_user_string(), label, text or ""))
    return found


def test_markup_in_outside_data_is_escaped_in_every_dagster_metadata_value(tmp_path: Path):
    """A model named `![x](http://…)` was an image in the Dagster UI's table preview, which
    fetched it. Every Markdown and text value of the ingestion assets, rendered as CommonMark
    (with raw HTML on), now shows the names as text: no image, no tag, no link."""
    from markdown_it import MarkdownIt
    from stages import materialize_in

    from bench_pipeline.assets.sources import source_assets
    from bench_pipeline.ingest.catalog import source_definitions

    assets = source_assets(source_definitions()["openrouter_models"])
    render = MarkdownIt("commonmark").enable("table").render
    snapshots = tmp_path / "snapshots" / "openrouter_models"
    snapshots.mkdir(parents=True)
    document = json.loads((SNAPSHOTS / "openrouter_models" / "models.json").read_bytes())
    document["data"][0]["name"] = IMAGE
    document["data"][1]["name"] = HTML_IMAGE
    (snapshots / "models.json").write_text(json.dumps(document))
    accepted = materialize_in(tmp_path / "home", assets, snapshots=snapshots.parent)
    # and a payload that is an HTML page: the rejection's reason quotes its first bytes
    (snapshots / "models.json").write_text(HTML_IMAGE + "<p>502</p>")
    rejected = materialize_in(tmp_path / "home", assets, snapshots=snapshots.parent)
    texts = _metadata_texts(accepted) + _metadata_texts(rejected)
    previews = [t for _, label, t in texts if label == "openrouter_models preview"]
    assert previews and all("attacker/p.gif" in t and "attacker/q.gif" in t for t in previews)
    assert any("attacker/q.gif" in t for _, label, t in texts if label == "reason")
    for asset, label, text in texts:
        html = render(text)
        assert "<img" not in html and "<a " not in html, (asset, label, html[:500])
    shown = render(previews[0])
    assert "![x](http://attacker/p.gif)" in shown  # as text, readable
    assert "<td>&lt;img src=http://attacker/q.gif onerror=…</td>" in shown  # cut at 40
