"""Real submitted runs beside the offline demo's simulated ones: one rank rule, one grouping.

Five valid runs of a real model on a use case the demo also covers used to stop every
release ("published table usecase_groups, row 13: rank is 1 but the rank rule gives 6"): the
board ranked real and simulated groups apart, the release's check ranked them together. Now
the board, the release's check and the page all take the one `scores.usecase.GROUP_RANK`:
within each use case, real groups and simulated groups are two boards. Through the
pipeline's own assets (submitted runs with the demo's, the board, the release) and the site.
"""

from __future__ import annotations

import hashlib
import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from signing import register, signed_json
from stages import bench_home, materialize_in, materialize_recorded
from test_submissions import EVIDENCE, for_bank, valid

from bench_pipeline.assets.release import release_dataset
from bench_pipeline.assets.runs import submitted_runs
from bench_pipeline.assets.scores import usecase_board_asset
from bench_pipeline.core import settings
from bench_pipeline.release.verify import verify_latest
from bench_pipeline.scores.ranking import rank_rows
from bench_pipeline.scores.usecase import GROUP_RANK, MIN_RUNS_FOR_RANK
from bench_pipeline.site.build import build_site, latest_release
from bench_pipeline.site.views import load_release
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.assets

USE_CASE = "uc-csv-dedupe"
REAL_GROUP = "anthropic/claude-opus-4.6 · thinking=high"


def real_runs(count: int) -> list[dict]:
    """`count` valid, distinct runs of one real model on the demo's use case (different
    days, token counts and evidence, so none is a duplicate of another)."""
    bank = load_bank()
    now = datetime.now(UTC)
    runs = []
    for n in range(count):
        evidence = f"run {n}\n{EVIDENCE}"
        runs.append(
            for_bank(
                bank,
                valid(
                    started_at=(now - timedelta(days=n + 1)).isoformat(timespec="seconds"),
                    tokens={"total": {"input_tokens": 20_000 + 1_000 * n, "output_tokens": 900}},
                    claimed_cost_usd=None,
                    wall_time_seconds=150.0 + 10 * n,
                    evidence_log=evidence,
                    evidence_sha256=hashlib.sha256(evidence.encode()).hexdigest(),
                ),
            )
        )
    return runs


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict:
    home = tmp_path_factory.mktemp("ranks") / "home"
    materialize_recorded(home)
    register(home)
    inbox = home / "inbox" / "submissions"
    inbox.mkdir(parents=True)
    for n, run in enumerate(real_runs(MIN_RUNS_FOR_RANK)):
        (inbox / f"real-{n}.json").write_text(signed_json(run))
    result = materialize_in(home, [submitted_runs, usecase_board_asset, release_dataset])
    with bench_home(home):
        releases = settings.releases_dir()
        named, problems = verify_latest(releases)
        release_dir = latest_release(releases)
        build_site(release_dir, home / "site", releases, workers=1)
    return {
        "result": result,
        "named": named,
        "problems": problems,
        "release": load_release(release_dir),
        "page": (home / "site" / "usecase-rank.html").read_text("utf-8"),
    }


def test_the_release_is_published_with_both_boards_ranked_by_the_one_rule(published) -> None:
    assert published["result"].success
    assert published["named"] is not None and not published["problems"]
    release = published["release"]
    rows = [r for r in release.rows("usecase_groups") if r["use_case"] == USE_CASE]
    real = [r for r in rows if not r["simulated"]]
    simulated = [r for r in rows if r["simulated"]]
    assert [(r["group"], r["runs"], r["rank"]) for r in real] == [(REAL_GROUP, 5, 1)]
    assert len(simulated) > 1 and {r["rank"] for r in simulated} >= {1, 2}
    # The rule the release states is the board's own, and it gives the published ranks.
    (stated,) = release.schema.rank_rules("usecase_groups")
    assert stated.document() == GROUP_RANK.document()
    assert stated.within == ("use_case", "simulated")
    everything = release.rows("usecase_groups")
    assert GROUP_RANK.ranks(everything) == [r["rank"] for r in everything]
    # Ranked together, the real group would not be first: the case that stopped releases.
    together = rank_rows(everything, "score", ("use_case",), GROUP_RANK.eligible)
    assert [t for t, r in zip(together, everything, strict=True) if r is real[0]] != [1]


def _boards(page: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Each board table of the page: (use case, simulated) -> [(group, published rank)]
    (the cell's `data-rank`; the text shows the range its intervals allow)."""
    boards = {}
    for use_case, simulated, body in re.findall(
        r'<table class="usecase-board"[^>]*? data-use-case="([^"]+)" data-simulated="(\w+)">'
        r"(.*?)</table>",
        page,
        re.S,
    ):
        boards[(use_case, simulated)] = [
            (html.unescape(group), rank)
            for group, rank in re.findall(
                r'<tr data-group="([^"]*)"><td class="n rank" data-rank="([^"]*)"', body
            )
        ]
    return boards


def test_the_page_shows_the_two_boards_with_the_published_ranks(published) -> None:
    boards = _boards(published["page"])
    assert boards[(USE_CASE, "false")] == [(REAL_GROUP, "1")]
    shown = boards[(USE_CASE, "true")]
    rows = [
        r
        for r in published["release"].rows("usecase_groups")
        if r["use_case"] == USE_CASE and r["simulated"]
    ]
    assert shown == [(r["group"], str(r["rank"]) if r["rank"] else "") for r in rows]
    assert "Simulated demo runs" in published["page"]
