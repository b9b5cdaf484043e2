"""The whole-board path of item boards against the per-pair path it replaced.

The oracle is the per-pair path kept in `benchmarks.item_boards` (`paired_comparisons`, one
`sign_flip_pvalue` call per pair, set intersections, frames row by row); the stats pieces are
checked against `sign_flip_pvalue`, `clopper_pearson` and a plain Holm loop.
"""

from __future__ import annotations

import dataclasses
import json
import random
from decimal import Decimal

import numpy as np
import pytest
from earlier_registry import entry_models
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from bench_pipeline.core import settings
from bench_pipeline.core.stats import (
    holm,
    holm_rejected,
    rank_bounds,
    sign_flip_pvalue,
    sign_test_pvalues,
)
from bench_pipeline.registry.matching import AliasFile
from bench_pipeline.scores.board_matrix import ItemResults, pair_counts
from bench_pipeline.scores.item_boards import (
    BoardEntry,
    ItemResult,
    board_frames,
    clopper_pearson,
    clopper_pearson_many,
    item_board,
)
from bench_pipeline.scores.item_boards_store import load_boards
from benchmarks.item_boards import per_pair_board, per_pair_frames

HOSTILE = (
    "Entry A", "entry a", "<script>alert(1)</script>", "名前; 其他", 'a "quote" \'too\'',
    "semi; colon", " ", "", "Entry A", "tab\there", "ZZZ", "🙂 emoji",
)  # fmt: skip
COSTS = (None, Decimal("0.1"), Decimal("0.10"), Decimal("0.25"), Decimal("1"), Decimal("0"))


# The stats pieces ---------------------------------------------------------------------------


@pytest.mark.unit
def test_sign_test_pvalues_are_sign_flip_pvalue_bit_for_bit() -> None:
    rng = random.Random(20)
    grid = [(a, b) for a in range(41) for b in range(41)]
    grid += [(rng.randrange(300), rng.randrange(300)) for _ in range(40)]
    grid += [(250, 250), (0, 500), (372, 128), (1147, 1147), (1200, 1094)]
    wins_a, wins_b = np.array(grid).T
    vector = sign_test_pvalues(wins_a, wins_b)
    for (a, b), p in zip(grid, vector.tolist(), strict=True):
        differences = [1] * a + [-1] * b + [0] * rng.randrange(4)
        rng.shuffle(differences)
        assert p == sign_flip_pvalue(differences), (a, b)
    assert sign_test_pvalues([], []).size == 0
    with pytest.raises(ValueError, match="non-negative"):
        sign_test_pvalues([1], [-1])
    with pytest.raises(ValueError, match="shape"):
        sign_test_pvalues([1, 2], [1])


def _plain_holm(pvalues: list[float], alpha: float) -> list[bool]:
    """Holm as a loop: sorted ascending (stable), reject while p_(k) <= alpha / (m - k)."""
    m = len(pvalues)
    rejected = [False] * m
    for rank, index in enumerate(sorted(range(m), key=pvalues.__getitem__)):
        if pvalues[index] > alpha / (m - rank):
            break
        rejected[index] = True
    return rejected


@pytest.mark.unit
@hypothesis_settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(0.0, 1.0),
            st.sampled_from([0.0, 0.05 / 3, 0.05 / 2, 0.025, 0.05, 1.0, 0.01, 0.0125]),
        ),
        max_size=40,
    ),
    st.sampled_from([0.05, 0.01, 0.5]),
)
def test_holm_on_arrays_is_the_plain_loop(pvalues: list[float], alpha: float) -> None:
    expected = _plain_holm(pvalues, alpha)
    assert holm(pvalues, alpha) == expected
    assert holm_rejected(np.array(pvalues, dtype=np.float64), alpha).tolist() == expected
    assert holm(np.array(pvalues), alpha) == expected


@pytest.mark.unit
def test_holm_still_names_a_bad_p_value() -> None:
    with pytest.raises(ValueError, match=r"got nan"):
        holm([0.1, float("nan")])
    with pytest.raises(ValueError, match=r"got -0.5"):
        holm_rejected(np.array([0.2, -0.5, 2.0]))


@pytest.mark.unit
def test_rank_bounds_count_who_beats_whom() -> None:
    rng = random.Random(3)
    size = 9
    pairs = {(a, b) for a in range(size) for b in range(a + 1, size) if rng.random() < 0.4}
    pairs = {(b, a) if rng.random() < 0.5 else (a, b) for a, b in pairs}
    winners = np.array([w for w, _ in sorted(pairs)], dtype=np.int64)
    losers = np.array([loser for _, loser in sorted(pairs)], dtype=np.int64)
    best, worst = rank_bounds(size, winners, losers)
    for model in range(size):
        assert best[model] == 1 + sum(1 for _, loser in pairs if loser == model)
        assert worst[model] == size - sum(1 for w, _ in pairs if w == model)


@pytest.mark.unit
def test_clopper_pearson_many_is_the_scalar_interval_bit_for_bit() -> None:
    cases = [(k, n) for n in range(1, 61) for k in range(n + 1)]
    cases += [(372, 500), (0, 2294), (2294, 2294), (1, 1147), (499, 500)]
    k, n = np.array(cases).T
    low, high = clopper_pearson_many(k, n)
    assert list(zip(low.tolist(), high.tolist(), strict=True)) == [
        clopper_pearson(*case) for case in cases
    ]
    with pytest.raises(ValueError, match="3/2"):
        clopper_pearson_many(np.array([1, 3]), np.array([2, 2]))


@pytest.mark.unit
def test_pair_counts_refuse_two_results_on_one_item() -> None:
    results = ItemResults(
        entry=np.array([0, 0, 1]), item=np.array([5, 5, 5]), resolved=np.array([1, 0, 1], bool)
    )
    with pytest.raises(ValueError, match="two results on the same item"):
        pair_counts(results, [0, 1])


# Whole boards against the per-pair path ---------------------------------------------------------


def _entry(rng: random.Random, key: str, items: list[str], rate: float) -> BoardEntry:
    missing_cost = rng.random() < 0.15
    cost = rng.choice(COSTS[1:])
    return BoardEntry(
        key=key,
        entry=rng.choice(HOSTILE),
        model_id=rng.choice([None, f"lab/{key}"]),
        published_percent=rng.choice([None, 12.5, 50.0]),
        items={
            item: ItemResult(
                rng.random() < rate,
                None if missing_cost and rng.random() < 0.3 else cost,
            )
            for item in items
        },
    )


def random_board(seed: int) -> list[BoardEntry]:
    """A board with hostile names, missing items and costs, ties and unranked entries."""
    rng = random.Random(seed)
    universe = [f"repo__issue-{i}" for i in range(rng.choice([1, 5, 30, 120]))]
    entries: list[BoardEntry] = []
    for number in range(rng.randrange(0, 28)):
        key = rng.choice(["k", "K", "<k>", "k;", "é"]) + str(number)
        if rng.random() < 0.15:
            entries.append(BoardEntry(key, rng.choice(HOSTILE), None, rng.random() * 100))
            continue
        items = [i for i in universe if rng.random() < rng.choice([1.0, 0.9, 0.5])]
        if not items:
            entries.append(BoardEntry(key, rng.choice(HOSTILE), None, None))
            continue
        entries.append(_entry(rng, key, items, rng.choice([0.02, 0.3, 0.5, 0.9, 1.0])))
        if rng.random() < 0.2:  # a tie: the same results under another key
            twin = entries[-1]
            entries.append(BoardEntry(key + "-twin", twin.entry, None, None, dict(twin.items)))
    rng.shuffle(entries)
    return entries


def _assert_same(board: str, entries: list[BoardEntry]) -> None:
    ours = item_board(board, entries)
    rows, pairs = per_pair_board(board, entries)
    assert list(ours.rows) == rows
    assert list(ours.pairs) == pairs
    expected = per_pair_frames([(board, entries)])
    got = board_frames([ours])
    for name in ("item_boards", "item_board_pairs"):
        assert_frame_equal(got[name], expected[name], check_exact=True)


@pytest.mark.unit
@pytest.mark.parametrize("seed", range(40))
def test_random_boards_publish_what_the_per_pair_path_did(seed: int) -> None:
    _assert_same(f"board {seed}; <b>", random_board(seed))


@pytest.mark.unit
def test_a_board_with_many_significant_pairs_and_dominance() -> None:
    rng = random.Random(7)
    items = [f"i{n}" for n in range(200)]
    entries = [
        dataclasses.replace(_entry(rng, f"e{n:02d}", items, n / 40), published_percent=None)
        for n in range(41)
    ]  # no published score to disagree with: every entry is ranked
    ours = item_board("strong", entries)
    assert sum(p.significant for p in ours.pairs) > 300
    assert any(p.dominates for p in ours.pairs) and any(r.dominated_by for r in ours.rows)
    _assert_same("strong", entries)


@pytest.mark.unit
def test_edge_boards_publish_what_the_per_pair_path_did() -> None:
    rng = random.Random(11)
    items = [f"i{n}" for n in range(25)]
    same = {i: ItemResult(rng.random() < 0.5, Decimal("0.5")) for i in items}
    cases = {
        "empty": [],
        "only percentages": [BoardEntry("a", "A", None, 10.0), BoardEntry("b", "B")],
        "single": [_entry(rng, "solo", items, 0.5)],
        "all equal": [BoardEntry(f"k{n}", f"E{n}", None, None, dict(same)) for n in range(6)],
        "nothing shared": [
            _entry(rng, f"d{n}", [f"only-{n}-{i}" for i in range(12)], 0.1 + 0.2 * n)
            for n in range(5)
        ],
        "nothing resolved": [_entry(rng, f"z{n}", items, 0.0) for n in range(4)],
        "one item": [_entry(rng, f"o{n}", items[:1], 0.5) for n in range(5)],
    }
    for board, entries in cases.items():
        _assert_same(board, entries)


@pytest.mark.unit
def test_two_entries_with_one_key_are_refused() -> None:
    entries = [BoardEntry("k", "A"), BoardEntry("k", "B")]
    with pytest.raises(ValueError, match="an entry key appears twice"):
        item_board("dup", entries)


# The store reads the warehouse as the per-pair path did -----------------------------------------


def _details(rng: random.Random, universe: list[str]) -> dict:
    return {
        item: {
            "resolved": rng.random() < 0.6,
            "cost": rng.choice([None, 0.1, 0.22785100000000003, 1.5, 0.0]),
            "api_calls": 3,
        }
        for item in universe
        if rng.random() < 0.85
    }


@pytest.mark.store
def test_the_store_gives_the_per_pair_tables(warehouse) -> None:
    rng = random.Random(5)
    universe = [f"x__y-{n}" for n in range(40)]
    boards = []
    for board in ("bash-only", "Verified 'quoted'"):
        results = []
        for n in range(14):
            record = {
                "name": rng.choice([name for name in HOSTILE if name.strip()]),
                "folder": f"{n:02d}_{board}",
                "date": "2025-11-24",
                "resolved": 50.0,
                "cost": 1.5,
                "checked": True,
                "tags": ["Org: Someone", "System: Attempts - 1"],
            }
            if n % 5:
                details = _details(rng, universe)
                record["per_instance_details"] = details
                if details:  # as published: the share its per-item results give
                    solved = sum(1 for d in details.values() if d.get("resolved") is True)
                    record["resolved"] = 100.0 * solved / len(details)
            results.append(record)
        boards.append({"name": board, "results": results})
    payload = json.dumps({"leaderboards": boards}).encode()
    run = warehouse.ingest("swebench", files={"leaderboards.json": payload})
    assert run.status == "accepted", run.reason
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    with warehouse.connect() as conn:
        got = board_frames(load_boards(conn))
        expected = per_pair_frames(_boards_as_the_old_store_read_them(conn, aliases))
    ranked = [sum(1 for r in b["results"] if r.get("per_instance_details")) for b in boards]
    assert got["item_board_pairs"].height == sum(r * (r - 1) // 2 for r in ranked) > 0
    for name in ("item_boards", "item_board_pairs"):
        assert_frame_equal(got[name], expected[name], check_exact=True)


def _boards_as_the_old_store_read_them(conn, aliases) -> list[tuple[str, list[BoardEntry]]]:
    """The per-item results as the store read them before: one `ItemResult` per row."""
    entries = conn.execute(
        "SELECT leaderboard, folder, entry, resolved_percent, tags FROM swebench_entries "
        "WHERE leaderboard IN (SELECT DISTINCT leaderboard FROM swebench_item_results) "
        "ORDER BY leaderboard, folder"
    ).fetchall()
    items: dict[tuple[str, str], dict[str, ItemResult]] = {}
    for board, folder, instance, resolved, cost in conn.execute(
        "SELECT leaderboard, folder, instance_id, resolved, cost_usd FROM swebench_item_results "
        "ORDER BY leaderboard, folder, instance_id"
    ).fetchall():
        items.setdefault((board, folder), {})[instance] = ItemResult(bool(resolved), cost)
    models = entry_models(conn, aliases, {f"{b}\0{f}": json.loads(t) for b, f, _, _, t in entries})
    by_board: dict[str, list[BoardEntry]] = {}
    for board, folder, name, percent, _ in entries:
        by_board.setdefault(board, []).append(
            BoardEntry(
                folder, name, models[f"{board}\0{folder}"], percent,
                items.get((board, folder), {}),
            )
        )  # fmt: skip
    return sorted(by_board.items())


@pytest.mark.assets
def test_the_recorded_boards_are_what_the_per_pair_path_published(recorded_warehouse) -> None:
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    got = board_frames(load_boards(recorded_warehouse))
    expected = per_pair_frames(_boards_as_the_old_store_read_them(recorded_warehouse, aliases))
    assert got["item_board_pairs"]["significant"].any()
    for name in ("item_boards", "item_board_pairs"):
        assert_frame_equal(got[name], expected[name], check_exact=True)
