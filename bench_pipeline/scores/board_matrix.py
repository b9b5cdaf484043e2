"""Every pair's shared items and wins on a board of 0/1 outcomes, by matrix products.

With ``ran[e, i] = 1`` when entry ``e`` has a result on item ``i`` and ``res[e, i] = 1``
when it resolved it (``res <= ran``), for a pair (a, b): shared items ``ran_a · ran_b``;
wins of a (a resolved, b ran and did not) ``res_a · ran_b − res_a · res_b``; wins of b
``ran_a · res_b − res_a · res_b``. Three products give them for all pairs at once.
Products are float32 (BLAS) when every count fits its 24-bit mantissa, so every partial sum
is an exact integer; float64 above that (exact to 2**53).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FLOAT32_EXACT = 2**24
"""Items below which float32 products of 0/1 matrices are exact integers."""


@dataclass(frozen=True)
class ItemResults:
    """A board's per-item results, one row per (entry, item), in columns.

    Attributes:
        entry: Index of the row's entry among the board's entries.
        item: The item's code: any non-negative integer naming it within the board.
        resolved: Whether the entry resolved the item.
    """

    entry: npt.NDArray[np.int64]
    item: npt.NDArray[np.int64]
    resolved: npt.NDArray[np.bool_]


@dataclass(frozen=True)
class PairCounts:
    """Every pair ``(a[t], b[t])``, ``a < b`` positions in the ranked order, row by row
    (``(0, 1), (0, 2), …, (1, 2), …``: the order of ``itertools.combinations``)."""

    a: npt.NDArray[np.int64]
    b: npt.NDArray[np.int64]
    shared: npt.NDArray[np.int64]
    wins_a: npt.NDArray[np.int64]
    wins_b: npt.NDArray[np.int64]


def pair_counts(results: ItemResults, ranked: Sequence[int]) -> PairCounts:
    """Shared items and wins of every pair of the ``ranked`` entries (indices into the
    entries ``results.entry`` names; results of other entries are ignored).

    Raises:
        ValueError: When an entry has two results on one item (counts would be wrong).
    """
    size = len(ranked)
    position = np.full(int(results.entry.max(initial=-1)) + 1, -1, dtype=np.int64)
    position[np.asarray(ranked, dtype=np.int64)] = np.arange(size)
    rows = position[results.entry] if results.entry.size else results.entry
    kept = rows >= 0
    rows, resolved = rows[kept], results.resolved[kept]
    items, columns = np.unique(results.item[kept], return_inverse=True)
    columns = columns.reshape(-1)
    dtype = np.float32 if items.size < FLOAT32_EXACT else np.float64
    ran = np.zeros((size, items.size), dtype=dtype)
    ran[rows, columns] = 1
    if np.count_nonzero(ran) != rows.size:  # two rows landed on one cell
        raise ValueError("an entry has two results on the same item")
    res = np.zeros((size, items.size), dtype=dtype)
    res[rows[resolved], columns[resolved]] = 1
    shared = ran @ ran.T
    resolved_ran = res @ ran.T  # [a, b]: items a resolved and b ran
    both = res @ res.T
    a, b = np.triu_indices(size, 1)
    common = both[a, b]
    return PairCounts(
        a=a.astype(np.int64),
        b=b.astype(np.int64),
        shared=shared[a, b].astype(np.int64),
        wins_a=(resolved_ran[a, b] - common).astype(np.int64),
        wins_b=(resolved_ran[b, a] - common).astype(np.int64),
    )
