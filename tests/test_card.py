"""The reporting card (`scores.card`) and `bench card`, on matrices worked by hand.

Two 4-entry × 12-item matrices, one pass/fail and one continuous, each with three groups of
four items (g1 = items 1–4, g2 = 5–8, g3 = 9–12). Every figure asserted below is worked out
in the comments next to it, from the definitions (RANKS: methodology "The reporting card").
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as scipy_stats

from bench_pipeline.cli.main import main
from bench_pipeline.scores.card import (
    POWER_FACTOR,
    CardRefused,
    Matrix,
    Resolution,
    card,
    matrix_from_cells,
    matrix_sha256,
    pair_statistics,
    paired_pvalue,
    rank_sets,
    resolution,
    resolution_check,
    resolution_continuous,
)

pytestmark = pytest.mark.unit

ITEMS = tuple(f"i{k:02d}" for k in range(1, 13))
GROUPS = {item: f"g{(k // 4) + 1}" for k, item in enumerate(ITEMS)}

# Pass/fail. A passes everything; B everything but i11, i12; C only i01, i02; D only i03, i04.
BINARY = {
    "A": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],  # 12/12 = 1.0
    "B": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0],  # 10/12
    "C": [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # 2/12
    "D": [0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0],  # 2/12: level with C
}
# Continuous. base = 5 6 7 8 5 6 7 8 5 6 7 8 (mean 6.5); A = base + 2, B = base + 1, C = base,
# D = base + 0.5 on items 1–6 and base − 0.5 on items 7–12 (mean 6.5: level with C).
BASE = [5, 6, 7, 8] * 3
CONTINUOUS = {
    "A": [v + 2 for v in BASE],
    "B": [v + 1 for v in BASE],
    "C": [float(v) for v in BASE],
    "D": [v + (0.5 if k < 6 else -0.5) for k, v in enumerate(BASE)],
}


def _matrix(rows: dict[str, list[float]], grouped: bool = False) -> Matrix:
    cells = [(s, i, float(v)) for s, row in rows.items() for i, v in zip(ITEMS, row, strict=True)]
    return matrix_from_cells(cells, GROUPS if grouped else None)


def _pair(computed, a: str, b: str):
    return next(p for p in computed.pairs if (p.a, p.b) == (a, b))


def test_binary_card_by_hand() -> None:
    computed = card(_matrix(BINARY, grouped=True))
    assert (computed.systems, computed.items, computed.data_type) == (4, 12, "binary")
    assert computed.groups == 3
    # Entries by score; C and D level (2/12), so by name.
    assert [e.system for e in computed.entries] == ["A", "B", "C", "D"]
    assert [e.score for e in computed.entries] == [1.0, 10 / 12, 2 / 12, 2 / 12]
    # Discordant items (wins of a, wins of b) and exact binomial p = 2·Σ_{j≤min} C(n,j) / 2^n:
    #   A–B: i11, i12 for A (2, 0): p = 2·1/4 = 0.5
    #   A–C: i03..i12 for A (10, 0): p = 2/1024;  A–D: i01, i02, i05..i12 (10, 0): 2/1024
    #   B–C: i03..i10 (8, 0): p = 2/256;  B–D: i01, i02, i05..i10 (8, 0): 2/256
    #   C–D: i01, i02 for C, i03, i04 for D (2, 2): p = 1
    expected = {
        ("A", "B"): (2, 0.5), ("A", "C"): (10, 2 / 1024), ("A", "D"): (10, 2 / 1024),
        ("B", "C"): (8, 2 / 256), ("B", "D"): (8, 2 / 256), ("C", "D"): (4, 1.0),
    }  # fmt: skip
    for (a, b), (carrying, p) in expected.items():
        pair = _pair(computed, a, b)
        assert pair.carrying_items == carrying
        assert pair.p_value == p
        assert pair.test == "exact binomial"
    # Holm over 6 pairs: sorted p 2/1024, 2/1024, 2/256, 2/256, 0.5, 1 against 0.05/6, /5,
    # /4, /3, /2: the first four pass (0.0078125 < 0.0167), 0.5 > 0.025 stops.
    established = {(p.a, p.b) for p in computed.pairs if p.established}
    assert established == {("A", "C"), ("A", "D"), ("B", "C"), ("B", "D")}
    assert (computed.pairs_total, computed.pairs_established) == (6, 4)
    assert computed.established_share == pytest.approx(4 / 6)
    # Holm ranks: best = 1 + established better, worst = 4 − established worse.
    ranks = {e.system: (e.rank_best, e.rank_worst) for e in computed.entries}
    assert ranks == {"A": (1, 2), "B": (1, 2), "C": (3, 4), "D": (3, 4)}
    # A–B: d = 0 ×10, 1 ×2; gap 1/6; Σd² = 2, var = (2 − 12/36)/11 = 5/33. var(A) = 0,
    # var(B) = (10 − 12·(5/6)²)/11 = 5/33, so κ = √(5/33)/√(5/33) = 1.
    ab = _pair(computed, "A", "B")
    assert ab.difference == pytest.approx(1 / 6)
    assert ab.sd == pytest.approx(math.sqrt(5 / 33))
    assert ab.kappa == pytest.approx(1.0)
    assert ab.items == 12
    assert ab.smallest_separable_gap == pytest.approx(
        2.8016 * math.sqrt(5 / 33) / math.sqrt(12), rel=1e-4
    )
    # C–D: d = +1, +1, −1, −1, 0 ×8: gap 0, var = 4/11; var(C) = var(D) = 5/33:
    # κ = √(4/11) / √(10/33) = √1.2 (above 1: they fail on each other's passes).
    cd = _pair(computed, "C", "D")
    assert cd.difference == 0.0
    assert cd.sd == pytest.approx(math.sqrt(4 / 11))
    assert cd.kappa == pytest.approx(math.sqrt(1.2))
    # Tiers: longest chain A > C (2); established order A,B above C,D: a maximum matching
    # of 2 (A–C, B–D), so the largest antichain is 4 − 2 = 2 ({A, B}).
    assert (computed.tiers.height, computed.tiers.largest_antichain) == (2, 2)
    # Each entry's tier: 1 + the longest established chain above it. Nobody is established
    # above A or B (tier 1); C and D sit under A (tier 2). Neighbours in score order: A–B
    # and C–D undecided, B–C established: 2 of 3 adjacent pairs undecided.
    assert [(e.system, e.tier) for e in computed.entries] == [
        ("A", 1), ("B", 1), ("C", 2), ("D", 2)
    ]  # fmt: skip
    assert (computed.adjacent_pairs, computed.adjacent_undecided) == (3, 2)
    # Discordance: (2 + 10 + 10 + 8 + 8 + 4) / 6 = 7 items, 7/12 of the items. Top decile:
    # at least two systems, A and B; their one pair carries 2.
    d = computed.discordance
    assert d.mean_carrying_items == pytest.approx(7.0)
    assert d.mean_share == pytest.approx(7 / 12)
    assert d.top_decile_systems == 2
    assert d.top_decile_mean_carrying_items == pytest.approx(2.0)
    # Rank sets over items: A passes everything, so it is first in every draw. B passes a
    # superset of C's and D's items: rank 1 when neither i11 nor i12 is drawn
    # ((10/12)^12 = 11% of draws), else 2. C and D are below A and B (barring a draw of only
    # i01/i02, p ≈ 5e-10) and share rank 3 when level, so each is 3 or 4.
    sets = {e.system: (e.rank_set_low, e.rank_set_high) for e in computed.entries}
    assert sets == {"A": (1, 1), "B": (1, 2), "C": (3, 4), "D": (3, 4)}
    # Over groups: within g1 C and D pass two items each, g2 and g3 neither: C = D in every
    # draw, both rank 3. B is first when g3 is not drawn ((2/3)^3 = 30%), else second.
    grouped = {e.system: (e.group_rank_set_low, e.group_rank_set_high) for e in computed.entries}
    assert grouped == {"A": (1, 1), "B": (1, 2), "C": (3, 3), "D": (3, 3)}
    assert all(check.passed for check in computed.self_checks)


def test_continuous_card_by_hand() -> None:
    computed = card(_matrix(CONTINUOUS, grouped=True))
    assert computed.data_type == "continuous"
    # Means: A 8.5, B 7.5, C 6.5, D 6.5 (C and D level, by name).
    assert [(e.system, e.score) for e in computed.entries] == [
        ("A", 8.5), ("B", 7.5), ("C", 6.5), ("D", 6.5)
    ]  # fmt: skip
    # Every pair but C–D has all 12 differences of one sign, so the exact sign-flip p is the
    # least there is, 2/2^12; C–D's differences (−0.5 ×6, +0.5 ×6) sum to 0: p = 1.
    for pair in computed.pairs:
        assert pair.p_value == (1.0 if (pair.a, pair.b) == ("C", "D") else 2 / 4096)
        assert pair.carrying_items == 12
        assert pair.test == "exact sign-flip"
    # Holm: five p of 2/4096 < 0.05/6 are all established; 1 is not.
    assert computed.pairs_established == 5
    ranks = {e.system: (e.rank_best, e.rank_worst) for e in computed.entries}
    assert ranks == {"A": (1, 1), "B": (2, 2), "C": (3, 4), "D": (3, 4)}
    # A–B: d = 1 everywhere: gap 1, sd 0, κ 0, smallest separable gap 0.
    ab = _pair(computed, "A", "B")
    assert (ab.difference, ab.sd, ab.kappa, ab.smallest_separable_gap) == (1.0, 0.0, 0.0, 0.0)
    # B–D: d = 0.5 ×6, 1.5 ×6: gap 1, Σ(d − 1)² = 3, sd = √(3/11).
    bd = _pair(computed, "B", "D")
    assert bd.difference == pytest.approx(1.0)
    assert bd.sd == pytest.approx(math.sqrt(3 / 11))
    assert bd.smallest_separable_gap == pytest.approx(POWER_FACTOR * math.sqrt(3 / 11 / 12))
    # C–D: sd √(3/11); var(C) = 15/11 (base: deviations ±1.5, ±0.5), var(D) = 14/11
    # (deviations −1 0 1 2 −1 0 0 1 −2 −1 0 1): κ = √(3/29).
    cd = _pair(computed, "C", "D")
    assert cd.kappa == pytest.approx(math.sqrt(3 / 29))
    # Tiers: A > B > C is a chain of 3; A, B and one of C/D are pairwise ordered, so a
    # maximum matching has 2 edges (A–B, B–C) and the largest antichain is {C, D}: 2.
    assert (computed.tiers.height, computed.tiers.largest_antichain) == (3, 2)
    # Tiers per entry: A 1, B 2 (under A), C and D 3 (under A > B). Adjacent pairs: A–B and
    # B–C established, C–D not: 1 of 3 undecided.
    assert [(e.system, e.tier) for e in computed.entries] == [
        ("A", 1), ("B", 2), ("C", 3), ("D", 3)
    ]  # fmt: skip
    assert (computed.adjacent_pairs, computed.adjacent_undecided) == (3, 1)
    # Every pair differs on all 12 items: discordance 12 (share 1), top decile (A, B) 12.
    assert computed.discordance.mean_carrying_items == 12.0
    assert computed.discordance.mean_share == 1.0
    assert computed.discordance.top_decile_mean_carrying_items == 12.0
    # Bootstrap: A > B > C, D in every draw (d ≥ 0.5 everywhere); C − D over a draw is
    # 0.5·(drawn from 7–12 − drawn from 1–6)/12, either sign: C and D 3–4.
    sets = {e.system: (e.rank_set_low, e.rank_set_high) for e in computed.entries}
    assert sets == {"A": (1, 1), "B": (2, 2), "C": (3, 4), "D": (3, 4)}
    # Over groups: C − D sums −2 in g1, 0 in g2, +2 in g3: D ahead when g1 is drawn more
    # often than g3 (10/27 of draws), level (both 3) or behind otherwise: 3–4 as well.
    grouped = {e.system: (e.group_rank_set_low, e.group_rank_set_high) for e in computed.entries}
    assert grouped == {"A": (1, 1), "B": (2, 2), "C": (3, 4), "D": (3, 4)}


def test_ungrouped_card_has_no_group_rank_sets() -> None:
    computed = card(_matrix(BINARY))
    assert computed.groups is None
    assert all(e.group_rank_set_low is None for e in computed.entries)
    assert computed.to_json()["entries"][0]["rank_set_low"] == 1


@pytest.mark.parametrize("rows", [BINARY, CONTINUOUS], ids=["binary", "continuous"])
def test_tiers_adjacent_pairs_and_pair_figures_do_not_depend_on_groups(rows) -> None:
    # Tiers, adjacent pairs and every per-pair figure come from the pairs' tests over
    # items: grouping the items changes only the group rank sets.
    grouped, ungrouped = card(_matrix(rows, grouped=True)), card(_matrix(rows))
    assert [(e.system, e.tier) for e in grouped.entries] == [
        (e.system, e.tier) for e in ungrouped.entries
    ]
    assert grouped.adjacent_undecided == ungrouped.adjacent_undecided
    assert grouped.pairs == ungrouped.pairs
    # `pair_statistics` (what item_board_pairs publishes) is the card's per-pair figures,
    # the difference signed as x[a] − x[b] for a before b in sorted order.
    found = pair_statistics(_matrix(rows).values)
    names = sorted(rows)
    for t in range(found.a.size):
        a, b = names[found.a[t]], names[found.b[t]]
        pair = next(p for p in ungrouped.pairs if {p.a, p.b} == {a, b})
        sign = 1.0 if pair.a == a else -1.0
        assert found.difference[t] * sign == pytest.approx(pair.difference)
        assert found.sd[t] == pytest.approx(pair.sd)
        assert found.smallest_separable_gap[t] == pytest.approx(pair.smallest_separable_gap)


def test_matrix_hash_is_the_canonical_text() -> None:
    # Sorted systems and items, one line per present cell, integers without a point, other
    # scores in their shortest exact decimal text; the missing cell (B, i2) has no line.
    matrix = matrix_from_cells([("B", "i1", 0.0), ("A", "i2", 0.1), ("A", "i1", 1.0)])
    text = "A\ti1\t1\nA\ti2\t0.1\nB\ti1\t0\n"
    assert matrix_sha256(matrix) == hashlib.sha256(text.encode()).hexdigest()


def plain_rank_sets(values, draws, seed, alpha=0.05, groups=None):
    """The bootstrap written out plainly: draw by draw, means, scipy's min ranks, quantiles."""
    rng = np.random.default_rng(seed)
    count, n = values.shape
    size = n if groups is None else int(groups.max()) + 1
    picks = rng.integers(0, size, size=(draws, size))
    ranks = np.empty((draws, count), dtype=np.int64)
    for b in range(draws):
        if groups is None:
            chosen = picks[b]
        else:
            chosen = np.concatenate([np.flatnonzero(groups == g) for g in picks[b]])
        means = values[:, chosen].mean(axis=1)
        ranks[b] = scipy_stats.rankdata(-means, method="min")
    q = alpha / (2 * count)
    low = np.quantile(ranks, q, axis=0, method="inverted_cdf")
    high = np.quantile(ranks, 1 - q, axis=0, method="inverted_cdf")
    return low, high


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("binary", [True, False])
def test_rank_sets_agree_with_a_plain_implementation(binary: bool, grouped: bool) -> None:
    rng = np.random.default_rng(7)
    skill = rng.uniform(0.2, 0.8, 25)
    if binary:
        values = (rng.random((25, 90)) < skill[::, None]).astype(np.float64)
    else:
        values = np.round(rng.normal(skill[:, None] * 10, 2.0, (25, 90)), 2)
    values[3] = values[4]  # two identical systems: always level
    groups = np.arange(90) % 7 if grouped else None
    ours = rank_sets(values, draws=1000, seed=11, groups=groups)
    plain = plain_rank_sets(values, 1000, 11, groups=groups)
    assert ours[0].tolist() == plain[0].tolist()
    assert ours[1].tolist() == plain[1].tolist()
    assert (ours[0][3], ours[1][3]) == (ours[0][4], ours[1][4])


def test_self_checks_refuse_a_broken_test() -> None:
    matrix = _matrix(BINARY)

    def always_separates(d, binary):
        return 0.0, "broken"

    def never_separates(d, binary):
        return 1.0, "broken"

    with pytest.raises(CardRefused, match="copy never established"):
        card(matrix, test=always_separates)
    with pytest.raises(CardRefused, match="planted difference established"):
        card(matrix, test=never_separates)
    # The board's own test passes both (on 12 items the planted loss reaches the floor 2/2^12).
    assert card(matrix, test=paired_pvalue).pairs_established == 4


def test_planted_difference_reaches_holm_on_a_large_board() -> None:
    rng = np.random.default_rng(3)
    values = (rng.random((30, 200)) < 0.5).astype(np.float64)
    matrix = Matrix(
        tuple(f"s{k:02d}" for k in range(30)), tuple(f"i{k:03d}" for k in range(200)), values
    )
    checks = {c.name: c for c in card(matrix).self_checks}
    assert checks["planted difference established"].passed
    assert "Holm's strictest threshold" in checks["planted difference established"].detail


# `bench card` ----------------------------------------------------------------------------------


def _wide_csv(path: Path, rows: dict[str, list[float]], order=None) -> Path:
    systems = order or list(rows)
    lines = ["system," + ",".join(ITEMS)]
    lines += [s + "," + ",".join(f"{v:g}" for v in rows[s]) for s in systems]
    path.write_text("\n".join(lines) + "\n")
    return path


def _long(rows: dict[str, list[float]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {"system": s, "item": i, "score": float(v), "group": GROUPS[i]}
            for s, row in rows.items()
            for i, v in zip(ITEMS, row, strict=True)
        ]
    )


def _card_json(capsys, *args: str) -> tuple[int, str]:
    status = main(["card", *args])
    return status, capsys.readouterr().out


def test_wide_and_long_files_give_the_same_json(tmp_path: Path, capsys) -> None:
    wide = _wide_csv(tmp_path / "wide.csv", CONTINUOUS)
    long_csv, long_parquet = tmp_path / "long.csv", tmp_path / "long.parquet"
    frame = _long(CONTINUOUS).select("system", "item", "score")
    frame.sample(fraction=1.0, shuffle=True, seed=5).write_csv(long_csv)
    frame.write_parquet(long_parquet)
    outputs = [_card_json(capsys, str(p), "--json") for p in (wide, long_csv, long_parquet)]
    assert [status for status, _ in outputs] == [0, 0, 0]
    assert outputs[0][1] == outputs[1][1] == outputs[2][1]
    parsed = json.loads(outputs[0][1])
    for key in ("systems", "items", "matrix_sha256", "pairs_total", "pairs_established", "tiers"):
        assert key in parsed
    assert set(parsed["entries"][0]) >= {"system", "score", "rank_best", "rank_worst",
                                         "rank_set_low", "rank_set_high"}  # fmt: skip
    assert set(parsed["pairs"][0]) >= {"a", "b", "p_value", "established"}


def test_group_column_and_group_by_agree(tmp_path: Path, capsys) -> None:
    long_csv = tmp_path / "long.csv"
    _long(BINARY).write_csv(long_csv)
    wide = _wide_csv(tmp_path / "wide.csv", BINARY)
    groups = tmp_path / "groups.csv"
    pl.DataFrame({"item": list(GROUPS), "group": list(GROUPS.values())}).write_csv(groups)
    by_column = _card_json(capsys, str(long_csv), "--json")[1]
    by_file = _card_json(capsys, str(wide), "--json", "--groups", str(groups))[1]
    # i01..i04 → g1 and so on: the group is the item number's quarter, here named by a regex
    # on a renamed copy would differ; instead check the file and the column agree.
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "command"}  # noqa: E731
    assert strip(by_column) == strip(by_file)
    assert json.loads(by_file)["groups"] == 3
    regex = _card_json(capsys, str(wide), "--json", "--group-by", r"^i(0[1-4])")
    assert regex[0] == 2 and "does not match" in regex[1]  # i05 has no group: refused


def test_file_order_and_ties_do_not_matter(tmp_path: Path, capsys) -> None:
    first = _wide_csv(tmp_path / "a.csv", BINARY, ["A", "B", "C", "D"])
    second = _wide_csv(tmp_path / "b.csv", BINARY, ["D", "C", "B", "A"])
    out_a, out_b = (_card_json(capsys, str(p), "--json")[1] for p in (first, second))
    assert out_a == out_b
    entries = {e["system"]: e for e in json.loads(out_a)["entries"]}
    tied = ("rank_best", "rank_worst", "rank_set_low", "rank_set_high")
    assert [entries["C"][k] for k in tied] == [entries["D"][k] for k in tied]


def test_malformed_files_exit_2_naming_row_and_field(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("system,i1,i2\nA,1,0\nB,1,maybe\n")
    status, out = _card_json(capsys, str(bad))
    assert status == 2
    assert "bad.csv: line 3, field 'i2': 'maybe' is not a number" in out
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("system,item,score\nA,i1,1\nA,i2\n")
    status, out = _card_json(capsys, str(ragged))
    assert status == 2 and "ragged.csv: line 3: 2 fields, the header has 3" in out
    empty_name = tmp_path / "noname.csv"
    empty_name.write_text("system,item,score\n,i1,1\n")
    status, out = _card_json(capsys, str(empty_name))
    assert status == 2 and "line 2, field 'system': empty" in out
    text = tmp_path / "matrix.txt"
    text.write_text("x")
    assert _card_json(capsys, str(text))[0] == 2


def test_duplicate_item_ids_count_once_and_are_reported(tmp_path: Path, capsys) -> None:
    frame = _long(BINARY).select("system", "item", "score")
    doubled = pl.concat([frame, frame.filter(pl.col("system") == "B").head(3)])
    path = tmp_path / "dup.csv"
    doubled.write_csv(path)
    status, out = _card_json(capsys, str(path), "--json")
    assert status == 0
    parsed = json.loads(out)
    assert parsed["duplicates_counted_once"] == 3
    assert "3 duplicated (system, item) cells counted once" in parsed["notes"]
    clean = tmp_path / "clean.csv"
    frame.write_csv(clean)
    without = json.loads(_card_json(capsys, str(clean), "--json")[1])
    assert parsed["matrix_sha256"] == without["matrix_sha256"]
    assert parsed["entries"] == without["entries"]
    # The same item with two different scores is refused, naming both rows.
    conflict = tmp_path / "conflict.csv"
    conflict.write_text("system,item,score\nA,i1,1\nA,i2,0\nA,i1,0\n")
    status, out = _card_json(capsys, str(conflict))
    assert status == 2 and "line 4, field 'score'" in out and "at line 2" in out


def test_text_card_prints_both_rank_sets(tmp_path: Path, capsys) -> None:
    long_csv = tmp_path / "long.csv"
    _long(BINARY).write_csv(long_csv)
    status, out = _card_json(capsys, str(long_csv))
    assert status == 0
    assert "pairs established: 4 of 6" in out
    assert "not established apart: 2 of 3" in out
    assert "| tier |" in out or " tier " in out
    assert "rank set (3 groups)" in out


def test_resolution_by_hand() -> None:
    # A power simulation: the pair's items drawn again with one side shifted by s/12, counted
    # as separated when the exact binomial p ≤ 0.05. 20,000 replicates put the simulated
    # power within ±0.01 of the exact one, worked out here:
    # * a pair that never disagrees: the shifted side wins each item with chance s/12, the
    #   other none; p = 2/2^wins ≤ 0.05 from 6 wins. Power P(Bin(12, s/12) ≥ 6): s = 5 0.380,
    #   s = 6 0.613, s = 7 0.811 → 50% at 6/12, 80% at 7/12.
    same = resolution(np.array([12.0]), np.array([0.0]), 0.05, replicates=20_000)
    assert (same.gap_50, same.gap_80) == (6 / 12, 7 / 12)
    # * a pair disagreeing on all 12: wins ~ Bin(12, (1 + s/12)/2), the other the rest;
    #   separated when the smaller side is ≤ 2 (2·(1 + 12 + 66)/4096 = 0.039; at 3, 0.146).
    #   Power: s = 6 0.391, s = 7 0.529, s = 8 0.677, s = 9 0.818 → 7/12 and 9/12.
    apart = resolution(np.array([12.0]), np.array([12.0]), 0.05, replicates=20_000)
    assert (apart.gap_50, apart.gap_80) == (7 / 12, 9 / 12)
    assert apart.test == "exact binomial"
    for s, power in ((6, 0.391), (7, 0.529), (9, 0.818)):
        exact = 1 - scipy_stats.binom.cdf(9, 12, (1 + s / 12) / 2)
        exact += scipy_stats.binom.cdf(2, 12, (1 + s / 12) / 2)
        assert exact == pytest.approx(power, abs=5e-4)


def test_continuous_resolution_by_hand() -> None:
    # A–B, A–C, B–C of CONTINUOUS differ by a constant: centred, every difference is 0, so
    # any gap g > 0 gives 12 equal positive terms, p = 2/4096 ≤ the threshold: their least
    # gap is the grid's first step above 0. C–D, A–D, B–D centre to ±0.5 (six of each): a
    # gap of 0 is never separated. Half the replicates pick a constant pair (3 of 6 pairs),
    # so the 50% gap is the first step; the 80% gap lies within the ±0.5 pairs.
    computed = card(_matrix(CONTINUOUS))
    found = computed.resolution
    assert found is not None and found.test == "exact sign-flip"
    # Holm's next threshold: one pair (C–D) left, 0.05 / 1.
    assert found.threshold == 0.05
    assert 0 < found.gap_50 < 0.05
    # With ±0.5 differences resampled, separating at 5% needs the shifted mean at least
    # around 2 standard errors (0.5/√12 ≈ 0.144): the 80% gap is between 0.2 and 1.
    assert 0.2 < found.gap_80 < 1.0


def test_continuous_resolution_matches_the_formula_on_a_long_pair() -> None:
    # 400 items, differences N(0, 1): the normal approximation's 80% power gap at 5% is
    # (1.96 + 0.84)·1/√400 = 0.140 and its 50% gap 1.96/20 = 0.098; the simulation from
    # the pair's own items lands there (within the grid's steps and sampling).
    rng = np.random.default_rng(3)
    values = np.vstack([rng.normal(0, 1, 400), np.zeros(400)])
    found = resolution_continuous(values, 0.05, replicates=2000)
    assert found.test == "sign-flip, normal approximation"
    assert found.gap_80 == pytest.approx(POWER_FACTOR / 20, rel=0.08)
    assert found.gap_50 == pytest.approx(1.959964 / 20, rel=0.08)


def test_resolution_is_simulated_for_both_kinds() -> None:
    assert card(_matrix(BINARY)).resolution.test == "exact binomial"
    assert card(_matrix(CONTINUOUS)).resolution.test == "exact sign-flip"


SNAPSHOT = Path(__file__).resolve().parents[1] / "sources" / "snapshots" / "swebench"


def test_card_agrees_with_the_item_boards_on_the_recorded_swebench_file() -> None:
    """The card's Holm rule is the item boards' rule: the same established pairs and rank
    ranges on both recorded SWE-bench boards (25 entries × 500 instances each)."""
    from bench_pipeline.ingest.parsers import swebench
    from bench_pipeline.ingest.payload import RawFile
    from bench_pipeline.scores.item_boards import BoardEntry, ItemResult, item_board

    path = SNAPSHOT / "leaderboards.json"
    results = swebench.parse([RawFile(path.name, path.read_bytes())])["swebench_item_results"]
    for (board,), rows in results.group_by(["leaderboard"]):
        cells = [
            (folder, instance, 1.0 if resolved in (True, "true") else 0.0)
            for folder, instance, resolved in rows.select(
                "folder", "instance_id", "resolved"
            ).iter_rows()
        ]
        # SWE-bench's groups: the repository, the instance id before its last "-<number>".
        groups = {i: i.rsplit("-", 1)[0] for _, i, _ in cells}
        computed = card(matrix_from_cells(cells, groups))
        entries = {}
        for folder, instance, score in cells:
            entries.setdefault(folder, {})[instance] = ItemResult(score == 1.0)
        reference = item_board(str(board), [BoardEntry(k, k, items=v) for k, v in entries.items()])
        assert computed.pairs_established == sum(p.significant for p in reference.pairs)
        ranges = {r.key: (r.rank_best, r.rank_worst) for r in reference.rows}
        assert {e.system: (e.rank_best, e.rank_worst) for e in computed.entries} == ranges
        assert computed.groups is not None and computed.groups > 5


def test_real_valued_pairs_beyond_the_exact_count_use_the_normal_approximation() -> None:
    # 60 real-valued items: the exact count cannot run; the pair says which test it got, and
    # a shift of one standard deviation on every item is still established.
    rng = np.random.default_rng(2)
    base = rng.normal(0.0, 1.0, 60) + np.pi
    cells = [("A", f"i{k}", float(v + 1.0)) for k, v in enumerate(base)]
    cells += [("B", f"i{k}", float(v + rng.normal(0.0, 0.5))) for k, v in enumerate(base)]
    computed = card(matrix_from_cells(cells))
    (pair,) = computed.pairs
    assert pair.test == "sign-flip, normal approximation"
    assert pair.established and pair.better == "A"
    assert any("normal approximation" in note for note in computed.notes)


def test_card_records_what_computed_it(tmp_path: Path, capsys) -> None:
    computed = card(_matrix(BINARY), command="bench run")
    assert computed.command == "bench run"
    assert computed.software.startswith("bench-pipeline") and computed.software.endswith("card 2")
    wide = _wide_csv(tmp_path / "wide.csv", BINARY)
    parsed = json.loads(_card_json(capsys, str(wide), "--json")[1])
    assert list(parsed)[:2] == ["command", "software"]
    assert parsed["command"] == "bench card --draws 1000 --seed 20260101"
    assert parsed["software"] == computed.software
    assert parsed["entries"][0]["tier"] == 1 and parsed["adjacent_undecided"] == 2


def test_no_true_difference_rarely_establishes_a_pair() -> None:
    # RANKS: on random data with no difference, at most α of boards have any established
    # pair (Holm controls the family-wise error). 200 boards of 4 systems × 40 fair coins:
    # the count is Binomial(200, ≤ 0.05), so above 19 (mean 10 + 3 sd) would be a fault.
    rng = np.random.default_rng(11)
    systems = ("A", "B", "C", "D")
    items = tuple(f"i{k:02d}" for k in range(40))
    boards_with_a_pair = 0
    for _ in range(200):
        values = (rng.random((4, 40)) < 0.5).astype(np.float64)
        computed = card(Matrix(systems, items, values), draws=100)
        boards_with_a_pair += computed.pairs_established > 0
    assert boards_with_a_pair <= 19


def test_the_resolution_checks_itself() -> None:
    # Level pairs (no gap) are separated about as often as the threshold allows: on the
    # hand-worked boards, never (12 items cannot reach p ≤ 0.025 from a level draw often).
    for rows in (BINARY, CONTINUOUS):
        computed = card(_matrix(rows))
        check = next(c for c in computed.self_checks if c.name.startswith("simulated level"))
        assert check.passed and computed.resolution.null_separated <= 0.05
    # A simulation that separated level pairs a fifth of the time at p ≤ 0.05 would be
    # measuring nothing: its check fails (0.2 > 0.05 + 3·√(0.05·0.95/400) + 0.02 = 0.1027).
    broken = Resolution(0.1, 0.2, 0.05, 400, "exact binomial", null_separated=0.2)
    assert not resolution_check(broken).passed
    assert not resolution_check(Resolution(0.1, 0.2, 0.05, 400, null_separated=0.103)).passed
    assert resolution_check(Resolution(0.1, 0.2, 0.05, 400, null_separated=0.102)).passed
