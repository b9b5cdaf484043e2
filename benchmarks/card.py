"""The reporting card (`scores.card.card`) of a large pass/fail board, against a plain
numpy implementation of the same bootstrap timed in the same run.

A synthetic board like SWE-bench Verified's experiments repository (134 systems × 500
items, seeded: systems of spread skill on items of spread difficulty, 12 groups of items)
and one of 500 systems × 500 items. For each:

* ours: the whole card (Holm pairs, rank ranges, bootstrap rank sets over items and over
  groups, tiers, discordance, self-checks), 1,000 draws;
* baseline: only the two bootstraps (items and groups), written plainly: draw by draw, the
  drawn columns' means, scipy's min ranks, numpy's quantiles (`plain_rank_sets`). Its rank
  sets must equal ours on the same seed.

The ratio is the baseline's time over the whole card's (and, beside it, over our two
bootstraps alone). Goals: the whole card under 5 s at
134 systems and under 60 s at 500, on one core.

    python -m benchmarks --only card
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats as scipy_stats

from bench_pipeline.scores.card import ALPHA, DRAWS, SEED, Matrix, card, rank_sets

CASES = ((134, 500, 5.0), (500, 500, 60.0))
"""(systems, items, goal in seconds for the whole card)."""
GROUPS = 12


def synthetic_board(systems: int, items: int, seed: int = 1) -> Matrix:
    """A seeded pass/fail board: logistic skill against difficulty, items in 12 groups of
    unequal size (one large, like SWE-bench's django)."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 1.2, systems)
    difficulty = rng.normal(0.5, 1.5, items)
    chance = 1.0 / (1.0 + np.exp(-(skill[:, None] - difficulty[None, :])))
    values = (rng.random((systems, items)) < chance).astype(np.float64)
    sizes = rng.dirichlet(np.full(GROUPS, 0.7))
    group = rng.choice(GROUPS, size=items, p=sizes)
    return Matrix(
        systems=tuple(f"system-{k:04d}" for k in range(systems)),
        items=tuple(f"repo{g:02d}-{k:05d}" for k, g in enumerate(group.tolist())),
        values=values,
        groups=tuple(f"repo{g:02d}" for g in group.tolist()),
    )


def plain_rank_sets(
    values: npt.NDArray[np.float64],
    draws: int,
    seed: int,
    alpha: float = ALPHA,
    groups: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The bootstrap rank sets written plainly (the same draws as `scores.card`)."""
    rng = np.random.default_rng(seed)
    count, n = values.shape
    size = n if groups is None else int(groups.max()) + 1
    picks = rng.integers(0, size, size=(draws, size))
    members = None if groups is None else [np.flatnonzero(groups == g) for g in range(size)]
    ranks = np.empty((draws, count), dtype=np.int64)
    for b in range(draws):
        chosen = picks[b] if members is None else np.concatenate([members[g] for g in picks[b]])
        ranks[b] = scipy_stats.rankdata(-values[:, chosen].mean(axis=1), method="min")
    tail = alpha / (2 * count)
    low, high = np.quantile(ranks, [tail, 1.0 - tail], axis=0, method="inverted_cdf")
    return low.astype(np.int64), high.astype(np.int64)


def _best(function, repeat: int = 3):
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def bench(systems: int, items: int, goal: float) -> bool:
    matrix = synthetic_board(systems, items)
    ours_s, computed = _best(lambda: card(matrix))
    _, codes = np.unique(np.array(matrix.groups, dtype=object), return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)

    def baseline():
        return (
            plain_rank_sets(matrix.values, DRAWS, SEED),
            plain_rank_sets(matrix.values, DRAWS, SEED, groups=codes),
        )

    base_s, (plain_items, plain_groups) = _best(baseline, repeat=1)
    boot_s, _ = _best(lambda: (rank_sets(matrix.values), rank_sets(matrix.values, groups=codes)))
    by_name = {e.system: e for e in computed.entries}
    same = all(
        (by_name[s].rank_set_low, by_name[s].rank_set_high) == (int(lo), int(hi))
        and (by_name[s].group_rank_set_low, by_name[s].group_rank_set_high) == (int(gl), int(gh))
        for s, lo, hi, gl, gh in zip(matrix.systems, *plain_items, *plain_groups, strict=True)
    )
    print(
        f"{systems} systems × {items} items, {computed.pairs_total:,} pairs, "
        f"{computed.pairs_established:,} established, tiers {computed.tiers.height}"
    )
    print(f"  whole card (ours)          {ours_s:.2f} s (goal < {goal:.0f} s)")
    print(f"  plain bootstrap alone      {base_s:.2f} s")
    print(f"  our bootstrap alone        {boot_s:.2f} s ({base_s / boot_s:.1f}x faster)")
    print(f"  ratio                      {base_s / ours_s:.1f}x, same rank sets: {same}")
    return ours_s < goal and same


def main(argv: Sequence[str] | None = None) -> int:
    print(f"the reporting card (load {os.getloadavg()[0]:.1f}, {DRAWS} draws)")
    ok = True
    for systems, items, goal in CASES:
        ok = bench(systems, items, goal) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
