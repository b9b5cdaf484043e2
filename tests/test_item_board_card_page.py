"""An item board's page draws and reads its reporting card (`site.item_boards`: `tier_bands`,
`card_reading`, `card_facts`): the tiers as bands, each entry's rank sets over items and over
groups side by side, and sentences that follow the card, so a different card draws and
reads differently. Built through a real release and `build_site`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from synthetic import synthetic_item_boards, write_release

from bench_pipeline.site import build_site
from bench_pipeline.site.item_boards import card_reading, tier_bands

BOARD = "small"  # five entries, by score: s3 80.0, s4 76.7, s2 53.3, s1 40.0, s0 23.3


def _card(**changes: Any) -> dict[str, Any]:
    card = {
        "board": BOARD, "systems": 5, "items": 30, "data_type": "binary",
        "matrix_sha256": "ab" * 32, "missing_cells": 0, "groups": 3, "draws": 1000,
        "seed": 20260101, "pairs_total": 10, "pairs_established": 4,
        "established_share": 0.4, "tiers_height": 2, "largest_antichain": 3,
        "discordance": 9.0, "discordance_top_decile": 4.0, "resolution_gap_50": 0.3,
        "resolution_gap_80": 0.4, "alpha": 0.05, "adjacent_pairs": 4,
        "adjacent_undecided": 3, "top_decile_entries": 2, "discordance_share": 0.3,
        "discordance_top_decile_share": 4 / 30, "pair_test": "exact binomial",
        "resolution_threshold": 0.0083, "resolution_replicates": 400,
        "self_checks": "copy never established: p = 1", "software": "bench-pipeline 0.1.0, card 2",
        "command": "bench run",
    }  # fmt: skip
    return card | changes


# Tiers: s3, s4 on top (tier 1); s2, s1, s0 under them (tier 2). Rank sets over items and,
# wider, over the three groups.
SETS = {
    "s3": (1, 2, 1, 3, 1), "s4": (1, 2, 1, 3, 1), "s2": (3, 4, 2, 5, 2),
    "s1": (3, 5, 3, 5, 2), "s0": (4, 5, 3, 5, 2),
}  # fmt: skip


def _sets(changed: dict[str, tuple[int, ...]] | None = None) -> list[dict[str, Any]]:
    chosen = SETS | (changed or {})
    return [
        {"board": BOARD, "entry_key": key, "rank_set_low": low, "rank_set_high": high,
         "group_rank_set_low": glow, "group_rank_set_high": ghigh, "tier": tier}
        for key, (low, high, glow, ghigh, tier) in chosen.items()
    ]  # fmt: skip


def _page(tmp_path: Path, card: dict[str, Any], sets: list[dict[str, Any]]) -> str:
    tables = synthetic_item_boards(11) | {"item_board_cards": [card], "item_board_rank_sets": sets}
    release = write_release(tmp_path / "releases", "r-card", tables,
                            created_at="2026-12-01T06:00:00Z")  # fmt: skip
    build_site(release, tmp_path / "site", release.parent)
    return (tmp_path / "site" / "item-boards" / "small.html").read_text("utf-8")


def _bands(page: str) -> dict[int, list[str]]:
    """Tier → the entry keys drawn in its band, in order."""
    return {
        int(tier): re.findall(r'<li data-entry="([^"]+)"', band)
        for tier, band in re.findall(
            r'<section class="tier" data-tier="(\d+)">(.*?)</section>', page
        )
    }


def _reading(page: str) -> list[str]:
    block = page[page.index('class="reading card-reading"') :].split("</ul>")[0]
    return re.findall(r"<li>(.*?)</li>", block)


@pytest.mark.store
def test_the_page_draws_and_reads_the_card(tmp_path: Path) -> None:
    page = _page(tmp_path / "first", _card(), _sets())
    assert _bands(page) == {1: ["s3", "s4"], 2: ["s2", "s1", "s0"]}
    # Both rank sets side by side for each entry, as the card gives them.
    s1 = page[page.index('<li data-entry="s1">') :].split("</li>")[0]
    assert '<span class="set items" data-low="3" data-high="5">' in s1
    assert '<span class="set groups" data-low="3" data-high="5">' in s1
    assert "items: ranks 3–5" in s1 and "3 groups: ranks 3–5" in s1
    reading = _reading(page)
    assert reading[0].startswith("The top 2 are one tier")
    assert reading[1] == (
        "The data resolves 2 tiers; the largest set of entries no two of which are "
        "established apart holds 3 of 5."
    )
    assert reading[2].startswith("Most adjacent ranks are not separable: 3 of 4")
    assert reading[3].startswith("The board separates gaps of about 40 points")
    # Widths over items 2, 2, 2, 3, 2 (mean 2.2), over groups 3, 3, 4, 3, 3 (3.2): +45%.
    assert (
        "widens the rank sets by 45%: they are 3.2 ranks wide on average, against 2.2"
        in (reading[4])
    )
    assert reading[5] == (
        "Two entries disagree on 30% of the items they share, on average; 13% among the top "
        "decile&#39;s 2 entries."
    )
    assert "<dd>ab" in page and "bench-pipeline 0.1.0, card 2; bench run" in page

    # Another card: s4 established under s3 (three tiers), every adjacent pair separable, a
    # finer resolution, group sets as narrow as the item sets.
    narrow = {k: (lo, hi, lo, hi, t) for k, (lo, hi, _, _, t) in SETS.items()}
    changed = _page(
        tmp_path / "second",
        _card(tiers_height=3, adjacent_undecided=0, resolution_gap_80=0.052),
        _sets(narrow | {"s4": (2, 2, 2, 2, 2), "s2": (3, 4, 3, 4, 3), "s1": (3, 5, 3, 5, 3),
                        "s0": (4, 5, 4, 5, 3)}),
    )  # fmt: skip
    assert _bands(changed) == {1: ["s3"], 2: ["s4"], 3: ["s2", "s1", "s0"]}
    reading = _reading(changed)
    assert reading[0] == "Small 3 alone makes up the top tier: no entry is established better."
    assert reading[1].startswith("The data resolves 3 tiers")
    assert reading[2].startswith("Every adjacent rank is separable: 0 of 4")
    assert reading[3].startswith("The board separates gaps of about 5.2 points")
    assert "leaves the rank sets as wide" in reading[4]


@pytest.mark.unit
def test_no_card_no_drawing_and_a_tier_not_at_the_top() -> None:
    rows = [
        {"entry_key": k, "entry": f"E{k}", "items": 10, "score": s, "rank_best": 1}
        for k, s in (("a", 90.0), ("b", 80.0), ("c", 70.0))
    ]
    assert card_reading(rows, None, {}) == [] and tier_bands(rows, None, {}) == ""
    # The second by score in tier 2 while the third is in tier 1: the top tier is not the
    # top by score, and the reading names its members instead.
    sets = {k: {"rank_set_low": 1, "rank_set_high": 3, "tier": t, "group_rank_set_low": None}
            for k, t in (("a", 1), ("b", 2), ("c", 1))}  # fmt: skip
    card = _card(systems=3, tiers_height=2, largest_antichain=2, adjacent_pairs=2,
                 adjacent_undecided=1, resolution_gap_80=None)  # fmt: skip
    reading = card_reading(rows, card, sets)
    assert reading[0] == (
        "2 entries make up the top tier (no entry is established better than any of them): Ea, Ec."
    )
    assert reading[2].startswith("Half the adjacent ranks are not separable: 1 of 2")
    assert not any("separates gaps" in s for s in reading)
    drawn = str(tier_bands(rows, card, sets))
    assert 'class="set groups"' not in drawn  # ungrouped: one rank set per entry


@pytest.mark.unit
def test_each_board_names_its_own_publisher() -> None:
    # A per-item results source's board is named by its definition's benchmark; the rest are
    # SWE-bench's leaderboards. The inspect board must not carry SWE-bench's licence.
    from bench_pipeline.site.item_boards import board_sources

    sources = {
        "swebench": {"name": "swebench", "licence": "CC BY-NC 4.0"},
        "inspect_popularity": {"name": "inspect_popularity", "licence": "MIT"},
    }
    found = board_sources(["Verified", "inspect_ai popularity"], sources)
    assert found["Verified"] is sources["swebench"]
    assert found["inspect_ai popularity"] is sources["inspect_popularity"]
    assert board_sources(["Verified"], {}) == {"Verified": None}
