"""The SWE-bench item boards publish their reporting card (`item_board_cards`,
`item_board_rank_sets`), computed from the recorded per-item results."""

from __future__ import annotations

import math

import polars as pl
import pytest

from bench_pipeline.release.published import PUBLISHED_BY_NAME
from bench_pipeline.scores.item_boards_store import card_frames, item_board_frames, load_boards

pytestmark = pytest.mark.assets
ESTABLISHED = 164
"""Pairs Holm separates on each recorded board once parity holds back 3 entries (222 of 300
before)."""


def test_the_recorded_boards_publish_their_cards(recorded_warehouse) -> None:
    frames = card_frames(recorded_warehouse)
    cards = {row["board"]: row for row in frames["item_board_cards"].to_dicts()}
    boards = {b.board: b for b in load_boards(recorded_warehouse)}
    assert set(cards) == set(boards) == {"bash-only", "Verified"}
    for name, row in cards.items():
        board = boards[name]
        # 25 entries with per-item results × 500 instances from 12 repositories, less the 3
        # whose results disagree with their published score (parity before rank: no rank
        # set either); the card's Holm count is the board's own.
        assert (row["systems"], row["items"], row["groups"]) == (22, 500, 12)
        assert row["data_type"] == "binary" and len(row["matrix_sha256"]) == 64
        assert row["pairs_total"] == len(board.pairs) == 231
        assert row["pairs_established"] == sum(p.significant for p in board.pairs) == ESTABLISHED
        assert 1 <= row["tiers_height"] <= 22 and 1 <= row["largest_antichain"] <= 22
        assert 0 < row["resolution_gap_50"] <= row["resolution_gap_80"] < 1
        assert row["adjacent_pairs"] == 21 and 0 <= row["adjacent_undecided"] <= 21
        assert row["pair_test"] == "exact binomial" and row["alpha"] == 0.05
        assert row["software"].endswith("card 2") and row["command"].startswith("bench run")
        assert "copy never established" in row["self_checks"]
        assert 2 <= row["top_decile_entries"] < 25
        assert 0 < row["discordance_share"] < 1
        sets = frames["item_board_rank_sets"].filter(board=name)
        ranked = {r.key for r in board.rows if r.rank_best is not None}
        assert set(sets["entry_key"]) == ranked
        for entry in sets.to_dicts():
            assert 1 <= entry["rank_set_low"] <= entry["rank_set_high"] <= 22
            assert 1 <= entry["group_rank_set_low"] <= entry["group_rank_set_high"] <= 22
            assert 1 <= entry["tier"] <= row["tiers_height"]
        assert sets["tier"].max() == row["tiers_height"]
    # The pairs carry the card's per-pair figures, signed for their order: on pass/fail
    # items the difference is (wins_a − wins_b) / items and Σd² the discordant count.
    pairs = item_board_frames(recorded_warehouse)["item_board_pairs"].filter(
        pl.col("board").is_in(["bash-only", "Verified"])
    )
    assert pairs["difference"].null_count() == 0
    for pair in pairs.sample(40, seed=1).to_dicts():
        n, wins_a, wins_b = pair["items"], pair["wins_a"], pair["wins_b"]
        gap = (wins_a - wins_b) / n
        assert pair["difference"] == pytest.approx(gap)
        assert pair["sd"] == pytest.approx(math.sqrt((wins_a + wins_b - n * gap * gap) / (n - 1)))
        assert pair["smallest_separable_gap"] == pytest.approx(
            2.8016 * pair["sd"] / math.sqrt(n), rel=1e-4
        )
        assert 0 <= pair["kappa"]
    declared = [c.name for c in PUBLISHED_BY_NAME["item_board_pairs"].columns]
    assert declared == pairs.columns
    # Both tables are declared for release with every column the frames have.
    frames.pop("pair_statistics")
    for table in ("item_board_cards", "item_board_rank_sets"):
        declared = [c.name for c in PUBLISHED_BY_NAME[table].columns]
        assert declared == frames[table].columns
