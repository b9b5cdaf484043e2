"""Traceable figures: "What changed" leads with what the publishers changed (a delisted model
is removed, not renamed), and every score whose data carries the publisher's log links it.

Two releases are written in the published layout, the newer one made from the older by the
real case the snapshots hold: OpenRouter stops listing `cohere/command-a`, so the registry
drops that id and other sources' listings make a model of the same name under a new id (a
reader saw a rename). The diff is the real `diff_releases` of the two; the site is built
from it."""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

import pytest
from synthetic import synthetic_item_boards, synthetic_tables, write_release

from bench_pipeline.core import settings
from bench_pipeline.ingest.parsers import swebench
from bench_pipeline.ingest.payload import RawFile
from bench_pipeline.release.diff import diff_releases
from bench_pipeline.site import build_site
from bench_pipeline.site.changes import upstream_view
from bench_pipeline.site.evidence import evidence_url

pytestmark = pytest.mark.unit

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
OLD_ID, NEW_ID = "r0000000000000001", "r0000000000000002"
DELISTED, NAMESAKE = "cohere/command-a", "cohere:command-a-03-2025"
LOG = "https://logs.epoch.ai/inspect-viewer/edc8bf64/viewer.html?log_file=https%3A%2F%2Flogs.epoch.ai%2Finspect_ai_logs%2F{}.eval"


def _tables() -> dict[str, list[dict]]:
    tables = synthetic_tables(6, 8)
    text = json.dumps(tables).replace("org1/model-1", DELISTED).replace("Model 1", "Command A")
    tables = json.loads(text)
    tables["model_aliases"] = [
        {"model_id": m["model_id"], "source": "openrouter_models", "source_key": m["model_id"],
         "name": m["name"], "host": None, "method": "origin", "evidence": None}
        for m in tables["models"]
    ] + [
        {"model_id": DELISTED, "source": "models_dev", "source_key": "azure/cohere-command-a",
         "name": "Command A", "host": "azure", "method": "normalised name", "evidence": None}
    ]  # fmt: skip
    for number, row in enumerate(tables["index_lineage"]):
        row["stderr"] = 1.5
        row["log_url"] = LOG.format(f"run{number}") if number % 2 == 0 else None
    tables["epoch_scores"] = []
    return tables


def _newer(old: dict[str, list[dict]]) -> dict[str, list[dict]]:
    new = json.loads(json.dumps(old).replace(f'"{DELISTED}"', f'"{NAMESAKE}"'))
    new["model_aliases"] = [
        a for a in new["model_aliases"] if a["source"] != "openrouter_models"
        or a["source_key"] != NAMESAKE
    ]  # fmt: skip
    market = new["market"][0]
    market["input_usd_per_1m"] = "9.500000000000"  # OpenRouter moved a rate
    new["epoch_scores"] = [
        {"evaluation_id": "gpqa_diamond", "row_key": "newrun", "model_version": "model-0-x",
         "model_id": market["model_id"], "agent": None, "score": 71.2, "stderr": 2.1,
         "run_at": "2025-06-01T10:00:00Z", "release_date": "2025-05-01",
         "log_url": LOG.format("newrun"), "source_file": "gpqa_diamond.csv",
         "source_run_id": "epoch-new-3"}
    ]  # fmt: skip
    boards = synthetic_item_boards()
    for number, row in enumerate(boards["item_boards"]):
        row["logs"] = f"s3://swe-bench-experiments/verified/{row['entry_key']}/logs" if (
            number % 3
        ) else None  # fmt: skip
    new |= boards
    for run in new["source_runs"]:
        if run["source"] in ("openrouter_models", "epoch"):
            run["run_id"] = f"{run['source']}-new-3"
            run["content_sha256"] = "f" * 64
            run["data_as_of"] = "2025-06-03T12:00:00"
    return new


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("traceable")
    releases = root / "releases"
    old = _tables()
    write_release(releases, OLD_ID, copy.deepcopy(old), created_at="2025-06-01T06:00:00Z")
    new_dir = write_release(
        releases, NEW_ID, _newer(old), created_at="2025-06-03T06:00:00Z", previous=OLD_ID
    )
    diff = diff_releases(releases / OLD_ID, new_dir)
    (new_dir / "diff.json").write_text(json.dumps(diff, indent=1) + "\n", "utf-8")
    out = root / "site"
    build_site(new_dir, out, releases, workers=1)
    return new_dir, out


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_a_delisted_model_is_named_removed_not_renamed(site: tuple[Path, Path]) -> None:
    release, out = site
    upstream = json.loads((release / "diff.json").read_text())["upstream"]
    delisted = [u for u in upstream if u["kind"] == "delisted"]
    assert delisted == [
        {"kind": "delisted", "source": "openrouter_models", "data_as_of": "2025-06-03T12:00:00",
         "listing": DELISTED, "model_id": DELISTED, "model_name": "Command A",
         "model_removed": True, "now_listed_as": [NAMESAKE]}
    ]  # fmt: skip
    page = (out / "changes.html").read_text("utf-8")
    text = _text(page)
    section = text[text.index("What changed upstream") : text.index("In short")]
    assert "Removed from OpenRouter: Command A: the listing cohere/command-a is gone" in section
    assert "the model is removed from this release" in section
    assert "not a rename" in section and "renamed" not in section.replace("not a rename", "")
    assert "data of 2025-06-03" in section
    # the upstream change leads; the run ids come below it
    assert page.index('id="upstream"') < page.index('id="summary"')
    assert page.index('id="upstream"') < page.index("openrouter_models-new-3")


def test_prices_and_scores_lead_with_source_date_and_evidence(site: tuple[Path, Path]) -> None:
    _, out = site
    page = (out / "changes.html").read_text("utf-8")
    section = page[page.index('id="upstream"') : page.index('id="summary"')]
    kinds = re.findall(r'data-kind="([a-z_]+)"', section)
    assert kinds == ["delisted", "price", "score_added"]
    text = _text(section)
    assert "Price moved" in text and "→ $9.50 per 1M tokens" in text
    assert "Score added" in text and "GPQA Diamond: 71.20" in text
    assert f'href="{html.escape(LOG.format("newrun"))}"' in section


def test_every_score_with_a_log_links_it(site: tuple[Path, Path]) -> None:
    release, out = site
    lineage = json.loads((release / "data" / "index_lineage.json").read_text())
    board = (out / "known-good-index.html").read_text("utf-8")
    published = json.loads((release / "data" / "known_good_index.json").read_text())
    ranked = {r["model_id"] for r in published if r["known_good_index"]}
    components = {"gpqa_diamond", "math_aime", "swe_bench_verified", "livebench",
                  "terminal_bench", "hle"}  # fmt: skip
    logged = [r for r in lineage if r.get("log_url")]
    assert logged
    for row in logged:
        href = f'href="{html.escape(row["log_url"])}"'
        if row["model_id"] in ranked and row["evaluation_id"] in components:
            assert href in board, row
        pages = [p for p in (out / "models").glob("*.html") if href in p.read_text("utf-8")]
        assert len(pages) == 1, row  # the model's own page, in its scores table
    unlogged = [r for r in lineage if not r.get("log_url")]
    assert unlogged and board.count('class="evidence"') == sum(
        1 for r in logged if r["model_id"] in ranked and r["evaluation_id"] in components
    )


def test_a_diff_from_before_the_upstream_list_says_so() -> None:
    assert upstream_view({"from": "a", "to": "b", "tables": {}}, {}, {}, {})["known"] is False


def test_every_swebench_entry_with_logs_links_them(site: tuple[Path, Path]) -> None:
    release, out = site
    rows = json.loads((release / "data" / "item_boards.json").read_text())
    pages = {p: p.read_text("utf-8") for p in (out / "item-boards").glob("*.html")}
    logged = [r for r in rows if r.get("logs")]
    assert logged and len(logged) < len(rows)
    for row in logged:
        href = f'href="{html.escape(evidence_url(row["logs"]) or "")}"'
        assert sum(href in page for page in pages.values()) == 1, row
    assert sum(page.count('class="evidence"') for page in pages.values()) == len(logged)


def test_evidence_addresses_become_links_a_reader_can_open() -> None:
    viewer = LOG.format("abc")
    assert evidence_url(viewer) == viewer
    # SWE-bench states its logs as a public S3 folder: linked as the bucket's listing of it
    assert evidence_url(
        "s3://swe-bench-experiments/bash-only/20251124_mini-v1.16.0_claude-opus-4-5-20251101/logs"
    ) == (
        "https://swe-bench-experiments.s3.amazonaws.com/?prefix="
        "bash-only/20251124_mini-v1.16.0_claude-opus-4-5-20251101/logs/"
    )
    for hostile in ("javascript:alert(1)", "http://x.test/log", 'https://x.test/"><b', None, 3):
        assert evidence_url(hostile) is None


def test_swebench_entries_carry_their_logs_from_the_real_file() -> None:
    """Hand-checked in the recorded leaderboards file: the bash-only entry of Claude 4.5 Opus
    states its logs; GUIRepair's Multimodal entry states none (`"logs": null`)."""
    path = SNAPSHOTS / "swebench" / "leaderboards.json"
    entries = swebench.parse([RawFile("leaderboards.json", path.read_bytes())])["swebench_entries"]
    logs = {(r["leaderboard"], r["folder"]): r["logs"] for r in entries.iter_rows(named=True)}
    assert logs[("bash-only", "20251124_mini-v1.16.0_claude-opus-4-5-20251101")] == (
        "s3://swe-bench-experiments/bash-only/20251124_mini-v1.16.0_claude-opus-4-5-20251101/logs"
    )
    assert logs[("Multimodal", "20250701_GUIRepair_o3")] is None
    # One Verified entry states a relative path: kept as stated (the entry is not quarantined
    # for it), and never linked
    relative = logs[("Verified", "20250118_codeshellagent_gemini_2.0_flash_experimental")]
    assert (
        relative == "evaluation/verified/20250118_codeshellagent_gemini_2.0_flash_experimental/logs"
    )
    assert evidence_url(relative) is None
