"""The reporting card of a board, computed from its systems × items matrix alone.

Every field is defined in the project's RANKS definitions (methodology page "Item boards",
section "The reporting card"); in short, with J systems, n items and x[s, i] the score of
system s on item i (missing cells are missing, never 0):

* shape: J, n, the data type (``binary`` when every present score is 0 or 1, else
  ``continuous``) and :func:`matrix_sha256`, the SHA-256 of the matrix's canonical text.
* per pair (a, b), over the items both have: d = x[a] − x[b], the gap (mean d), sd (sample
  standard deviation of d), κ = sd ÷ √(var x[a] + var x[b]), the carrying items (non-zero
  d; pass/fail: the discordant items), the smallest gap separable at 80% power
  (2.80 × sd ÷ √n) and the exact paired test (`stats.sign_flip_pvalue`; on 0/1 outcomes
  `stats.sign_test_pvalues`, the same number, for all pairs at once). Established = rejected
  by Holm over every pair at α (`stats.holm_rejected`).
* per system: the score (mean over its items), the rank range of the Holm rule
  (`stats.rank_bounds`) and the simultaneous rank set from a seeded paired bootstrap over
  items (:func:`rank_sets`), and over groups when items carry groups.
* per board: pairs established, the adjacent pairs (neighbours in score order) left
  undecided, tiers (height of the partial order "established better", its largest antichain,
  and each system's tier: the longest chain of established pairs from the top down to it),
  discordance (mean carrying items over all pairs, and over the top decile) and the
  resolution: the gaps separated at 50% and 80% power by simulation from the board's own
  pairs (:func:`resolution` for pass/fail, :func:`resolution_continuous` otherwise), at the
  board's Holm threshold α ÷ (pairs − established).
* provenance: the software (:func:`software`) and the command that computed the card.

Self-checks run before a card is returned; when one fails, :class:`CardRefused` is raised and
nothing is published. Systems and items are put in a canonical order (sorted) before anything
is computed, so the card never depends on the order of a file, and systems tied in score are
treated alike.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats as scipy_stats
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from bench_pipeline.core.stats import (
    holm_rejected,
    rank_bounds,
    sign_flip_pvalue,
    sign_test_pvalues,
)
from bench_pipeline.scores.board_matrix import ItemResults, pair_counts

ALPHA = 0.05
DRAWS = 1000
SEED = 20260101
POWER_FACTOR = 1.959963984540054 + 0.8416212335729143
"""z(0.975) + z(0.80): the smallest gap a two-sided 5% test separates 80% of the time is this
many standard errors."""
PLANTED_ITEMS = 21
"""Items a planted loss covers: 21 one-sided items give p = 2 ÷ 2²¹ < 10⁻⁶."""
RESOLUTION_REPLICATES = 400
EXACT_RESOLUTION_ITEMS = 20
"""Real-valued pairs of up to this many items are simulated with the exact sign-flip test;
longer ones with its normal approximation, which has a closed form (see
:func:`resolution_continuous`)."""
CARD_VERSION = "2"
"""2: each entry's tier, the adjacent pairs undecided, the resolution of real-valued boards,
and the software and command that computed the card."""

FloatMatrix = npt.NDArray[np.float64]
PairTest = Callable[[npt.NDArray[np.float64], bool], tuple[float, str]]


class CardRefused(RuntimeError):
    """A self-check failed: the card is not published."""


def software() -> str:
    """The software that computes a card: the installed package's version and the card's."""
    try:
        version = f"bench-pipeline {metadata.version('bench-pipeline')}"
    except metadata.PackageNotFoundError:
        version = "bench-pipeline"
    return f"{version}, card {CARD_VERSION}"


@dataclass(frozen=True)
class Matrix:
    """A systems × items matrix in canonical order (both sorted).

    Attributes:
        systems: System names, sorted, distinct.
        items: Item ids, sorted, distinct.
        values: ``values[s, i]``; NaN where system s has no score on item i.
        groups: The group label of each item (same order), or None.
        duplicates: Cells given more than once with the same score (counted once).
    """

    systems: tuple[str, ...]
    items: tuple[str, ...]
    values: FloatMatrix
    groups: tuple[str, ...] | None = None
    duplicates: int = 0

    @property
    def binary(self) -> bool:
        present = self.values[~np.isnan(self.values)]
        return bool(np.all((present == 0.0) | (present == 1.0)))


def matrix_from_cells(
    cells: Sequence[tuple[str, str, float]],
    groups: dict[str, str] | None = None,
    duplicates: int = 0,
) -> Matrix:
    """A :class:`Matrix` from ``(system, item, score)`` cells (each cell once).

    Raises:
        ValueError: On a cell given twice, a non-finite score, or an item without a group
            when ``groups`` is given.
    """
    systems = sorted({c[0] for c in cells})
    items = sorted({c[1] for c in cells})
    row = {s: k for k, s in enumerate(systems)}
    column = {i: k for k, i in enumerate(items)}
    values = np.full((len(systems), len(items)), np.nan)
    for system, item, score in cells:
        if not math.isfinite(score):
            raise ValueError(f"system {system!r}, item {item!r}: score {score} is not finite")
        if not np.isnan(values[row[system], column[item]]):
            raise ValueError(f"system {system!r}, item {item!r}: given twice")
        values[row[system], column[item]] = score
    labels = None
    if groups is not None:
        missing = [i for i in items if i not in groups]
        if missing:
            raise ValueError(f"item {missing[0]!r} has no group")
        labels = tuple(groups[i] for i in items)
    return Matrix(tuple(systems), tuple(items), values, labels, duplicates)


def score_text(value: float) -> str:
    """A score's canonical text: an integer without a decimal point, any other float as its
    shortest round-trip decimal (Python's ``repr``); ``-0`` is ``0``."""
    if value.is_integer():
        return str(int(value))
    return repr(value)


def matrix_sha256(matrix: Matrix) -> str:
    """SHA-256 (hex) of the matrix's canonical text: one UTF-8 line
    ``system<TAB>item<TAB>score<LF>`` per present cell, systems then items in sorted (code
    point) order, scores as :func:`score_text`."""
    digest = hashlib.sha256()
    present = ~np.isnan(matrix.values)
    distinct, codes = np.unique(np.where(present, matrix.values, 0.0), return_inverse=True)
    texts = [score_text(float(v)) + "\n" for v in distinct.tolist()]
    codes = codes.reshape(matrix.values.shape)
    items = [f"\t{item}\t" for item in matrix.items]
    for s, system in enumerate(matrix.systems):
        shown = np.flatnonzero(present[s]).tolist()
        row = codes[s].tolist()
        text = "".join([system + items[i] + texts[row[i]] for i in shown])
        digest.update(text.encode())
    return digest.hexdigest()


# Exact sums ---------------------------------------------------------------------------------


def exact_scale(values: FloatMatrix) -> FloatMatrix | None:
    """The matrix as integers (in float64) on the coarsest decimal lattice holding it
    (``x × 10^k``, k ≤ 9), when every sum of it stays exact; else None. Sums of such values
    are exact, so equal means compare equal whatever the order of summation."""
    present = values[~np.isnan(values)]
    for power in range(10):
        scaled = present * 10.0**power
        rounded = np.round(scaled)
        if np.all(np.abs(scaled - rounded) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            if float(np.abs(rounded).sum()) * values.shape[1] >= 2.0**52:
                return None
            out = values * 10.0**power
            return np.where(np.isnan(values), np.nan, np.round(out))
    return None


# Pair tests -----------------------------------------------------------------------------------


def paired_pvalue(differences: npt.NDArray[np.float64], binary: bool) -> tuple[float, str]:
    """The exact two-sided paired test of the differences and its name.

    0/1 outcomes: `stats.sign_test_pvalues` on the discordant counts (the exact binomial
    test, bit for bit `stats.sign_flip_pvalue`). Otherwise `stats.sign_flip_pvalue`; when the
    exact count cannot run (over 44 real-valued non-zero terms), its normal approximation
    (a Monte Carlo count could not reach the Holm thresholds of a large board), named as such.
    """
    if binary:
        wins_a, wins_b = int(np.sum(differences > 0)), int(np.sum(differences < 0))
        return float(sign_test_pvalues([wins_a], [wins_b])[0]), "exact binomial"
    try:
        return sign_flip_pvalue(differences), "exact sign-flip"
    except ValueError:
        return _normal_sign_flip(differences), "sign-flip, normal approximation"


def _normal_sign_flip(differences: npt.NDArray[np.float64]) -> float:
    """The sign-flip test's two-sided p-value by its normal approximation: under "no
    difference" Σ ε_i d_i has mean 0 and variance Σ d_i² exactly, and is close to normal at
    the sizes where this is used (over 44 non-zero real-valued terms)."""
    spread = math.sqrt(float(np.sum(differences * differences)))
    if spread == 0.0:
        return 1.0
    return float(min(1.0, 2.0 * scipy_stats.norm.sf(abs(float(differences.sum())) / spread)))


# Bootstrap rank sets ----------------------------------------------------------------------------


def competition_ranks_rows(means: FloatMatrix) -> npt.NDArray[np.int64]:
    """Competition ranks (1, 1, 3; highest first) within each row of ``means``; NaN ranks
    last (J)."""
    draws, count = means.shape
    keyed = np.where(np.isnan(means), -np.inf, means)
    order = np.argsort(-keyed, axis=1, kind="stable")
    ordered = np.take_along_axis(keyed, order, axis=1)
    position = np.arange(count)[None, :].repeat(draws, axis=0)
    fresh = np.ones_like(ordered, dtype=bool)
    fresh[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(fresh, position, 0), axis=1) + 1
    ranks = np.empty_like(first)
    np.put_along_axis(ranks, order, first, axis=1)
    ranks[np.isnan(means)] = count
    return ranks


def bootstrap_weights(
    n: int, draws: int, seed: int, groups: npt.NDArray[np.int64] | None = None
) -> FloatMatrix:
    """How many times each item is drawn in each bootstrap draw (draws × n).

    Items: ``numpy.random.default_rng(seed).integers(0, n, size=(draws, n))`` are the items
    of the draws (row b is draw b). Groups (``groups[i]`` the code 0..G-1 of item i's
    group): ``integers(0, G, size=(draws, G))`` are the groups drawn, and an item weighs as
    many times as its group was drawn.
    """
    rng = np.random.default_rng(seed)
    size = n if groups is None else int(groups.max()) + 1
    picks = rng.integers(0, size, size=(draws, size))
    offsets = (np.arange(draws) * size)[:, None]
    drawn = np.bincount((picks + offsets).reshape(-1), minlength=draws * size)
    counts: FloatMatrix = drawn.reshape(draws, size).astype(np.float64)
    return counts if groups is None else counts[:, groups]


def rank_sets(
    values: FloatMatrix,
    *,
    draws: int = DRAWS,
    seed: int = SEED,
    alpha: float = ALPHA,
    groups: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Simultaneous rank sets (low, high) of the systems (rows of ``values``).

    In each draw (:func:`bootstrap_weights`) every system's mean over the drawn items it has
    and its competition rank; the set is the [α/(2J), 1 − α/(2J)] quantiles of its ranks
    (numpy's ``inverted_cdf``: both ends are ranks that occurred).
    """
    count, n = values.shape
    weights = bootstrap_weights(n, draws, seed, groups)
    present = ~np.isnan(values)
    exact = exact_scale(values)
    filled = np.nan_to_num(exact if exact is not None else values, nan=0.0)
    sums = weights @ filled.T
    if present.all():
        means = sums  # one denominator per draw: the sums order as the means
    else:
        taken = weights @ present.T.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(taken > 0, sums / taken, np.nan)
    ranks = competition_ranks_rows(means)
    tail = alpha / (2 * count)
    low, high = np.quantile(ranks, [tail, 1.0 - tail], axis=0, method="inverted_cdf")
    return low.astype(np.int64), high.astype(np.int64)


# The card -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    system: str
    score: float
    items: int
    rank_best: int
    rank_worst: int
    tied: bool
    tier: int
    rank_set_low: int
    rank_set_high: int
    group_rank_set_low: int | None = None
    group_rank_set_high: int | None = None


@dataclass(frozen=True)
class Pair:
    """One pair; ``a`` is listed above ``b`` (higher score, or level and earlier by name)."""

    a: str
    b: str
    items: int
    difference: float
    sd: float | None
    kappa: float | None
    carrying_items: int
    smallest_separable_gap: float | None
    test: str
    p_value: float
    established: bool
    better: str | None


@dataclass(frozen=True)
class Tiers:
    """Height: the longest chain of established pairs (a > b > c …), in systems. Largest
    antichain: the most systems no two of which are ordered by the established pairs (taken
    transitively), by Dilworth's theorem."""

    height: int
    largest_antichain: int


@dataclass(frozen=True)
class Discordance:
    """Mean carrying items per pair (and as a share of the pair's items), over all pairs and
    over the pairs within the top decile of systems by score."""

    mean_carrying_items: float | None
    mean_share: float | None
    top_decile_systems: int
    top_decile_mean_carrying_items: float | None
    top_decile_mean_share: float | None


@dataclass(frozen=True)
class Resolution:
    """The smallest gaps the board separates half the time and four times in five, by
    simulation from its own pairs (pass/fail boards; see :func:`resolution`)."""

    gap_50: float | None
    gap_80: float | None
    threshold: float
    replicates: int
    test: str = "exact binomial"
    null_separated: float = 0.0
    """Share of the simulated pairs separated with no gap at all (the simulated test's false
    separations: about the threshold or less, else the simulation is wrong)."""


@dataclass(frozen=True)
class SelfCheck:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Card:
    systems: int
    items: int
    data_type: str
    matrix_sha256: str
    missing_cells: int
    duplicates_counted_once: int
    groups: int | None
    alpha: float
    draws: int
    seed: int
    pairs_total: int
    pairs_established: int
    established_share: float | None
    adjacent_pairs: int
    adjacent_undecided: int
    tiers: Tiers
    discordance: Discordance
    resolution: Resolution | None
    entries: tuple[Entry, ...]
    pairs: tuple[Pair, ...]
    self_checks: tuple[SelfCheck, ...]
    notes: tuple[str, ...] = field(default=())
    software: str = field(default_factory=software)
    command: str = ""

    def to_json(self) -> dict[str, Any]:
        """The card as JSON-ready data (key order as the fields)."""
        return asdict(self)


def _pair_products(values: FloatMatrix) -> dict[str, FloatMatrix]:
    """Sums over each pair's common items, by matrix products: ``n[a, b]`` items,
    ``s[a, b]`` Σ x_a, ``q[a, b]`` Σ x_a², ``ss[a, b]`` Σ x_a x_b."""
    present = (~np.isnan(values)).astype(np.float64)
    x = np.nan_to_num(values, nan=0.0)
    return {"n": present @ present.T, "s": x @ present.T, "q": (x * x) @ present.T, "ss": x @ x.T}


def _pair_moments(
    products: dict[str, FloatMatrix], a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.float64], ...]:
    """Per pair: items, gap, sd of d, κ (NaN where undefined)."""
    n, s, q, ss = products["n"], products["s"], products["q"], products["ss"]
    items = n[a, b]
    with np.errstate(invalid="ignore", divide="ignore"):
        sum_d = s[a, b] - s[b, a]
        sum_d2 = q[a, b] + q[b, a] - 2.0 * ss[a, b]
        gap = sum_d / items
        var_d = np.maximum(sum_d2 - items * gap * gap, 0.0) / (items - 1)
        var_a = np.maximum(q[a, b] - s[a, b] ** 2 / items, 0.0) / (items - 1)
        var_b = np.maximum(q[b, a] - s[b, a] ** 2 / items, 0.0) / (items - 1)
        sd = np.sqrt(var_d)
        kappa = sd / np.sqrt(var_a + var_b)
    return items, gap, sd, kappa


@dataclass(frozen=True)
class PairStatistics:
    """The per-pair figures of every pair at once (numpy columns, NaN where undefined), for
    a board whose pairs are published as a table: pair t is ``systems[a[t]]`` against
    ``systems[b[t]]``, its difference x[a] − x[b]."""

    a: npt.NDArray[np.int64]
    b: npt.NDArray[np.int64]
    items: npt.NDArray[np.float64]
    difference: npt.NDArray[np.float64]
    sd: npt.NDArray[np.float64]
    kappa: npt.NDArray[np.float64]
    smallest_separable_gap: npt.NDArray[np.float64]


def pair_statistics(values: FloatMatrix) -> PairStatistics:
    """Every pair's items, difference, sd of the differences, κ and the smallest gap it
    could separate at 80% power (2.80 × sd ÷ √items), over the items both systems have."""
    a, b = np.triu_indices(values.shape[0], 1)
    a, b = a.astype(np.int64), b.astype(np.int64)
    items, gap, sd, kappa = _pair_moments(_pair_products(values), a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        smallest = np.where(items > 0, POWER_FACTOR * sd / np.sqrt(items), np.nan)
    return PairStatistics(a, b, items, gap, sd, kappa, smallest)


def _tiers(
    count: int, winners: npt.NDArray[np.int64], losers: npt.NDArray[np.int64]
) -> tuple[Tiers, npt.NDArray[np.int64]]:
    """The board's tiers and each system's tier (1 + the longest chain of established pairs
    above it: tier 1 holds the systems no other is established better than)."""
    above = np.zeros((count, count), dtype=bool)  # above[w, l]: w established better than l
    above[winners, losers] = True
    closure = above.copy()
    for k in range(count):
        closure |= closure[:, k : k + 1] & closure[k : k + 1, :]
    if closure.diagonal().any():
        raise ValueError("the established pairs form a cycle (possible only with missing cells)")
    height = np.ones(count, dtype=np.int64)
    for v in np.argsort(closure.sum(axis=0), kind="stable"):  # fewer ancestors first
        beaters = np.flatnonzero(above[:, v])
        if beaters.size:
            height[v] = 1 + int(height[beaters].max())
    matching = maximum_bipartite_matching(csr_matrix(closure), perm_type="column")
    matched = int(np.count_nonzero(matching >= 0))
    tiers = Tiers(height=int(height.max(initial=0)), largest_antichain=count - matched)
    return tiers, height


def _discordance(
    scores: npt.NDArray[np.float64],
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    carrying: npt.NDArray[np.float64],
    items: npt.NDArray[np.float64],
) -> Discordance:
    count = scores.size
    top = max(2, math.ceil(count / 10)) if count >= 2 else count
    cutoff = np.sort(scores)[::-1][top - 1] if count else 0.0
    in_top = scores >= cutoff  # everyone level with the last one in is in
    inside = in_top[a] & in_top[b]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = carrying / items

    def mean(values: npt.NDArray[np.float64]) -> float | None:
        kept = values[np.isfinite(values)]
        return float(kept.mean()) if kept.size else None

    return Discordance(
        mean_carrying_items=mean(carrying),
        mean_share=mean(share),
        top_decile_systems=int(in_top.sum()),
        top_decile_mean_carrying_items=mean(carrying[inside]),
        top_decile_mean_share=mean(share[inside]),
    )


def resolution(
    items: npt.NDArray[np.float64],
    carrying: npt.NDArray[np.float64],
    threshold: float,
    *,
    replicates: int = RESOLUTION_REPLICATES,
    seed: int = SEED,
) -> Resolution:
    """The board's resolution, by simulation from its own pairs (pass/fail): the least gap
    a pair of the board, one side shifted by it, is separated half the time and four times
    in five.

    Each replicate picks one of the board's pairs at random: n shared items of which a share
    q = carrying ÷ n are discordant. With no true gap each item is won by either side with
    probability q ÷ 2. A shift by a gap g (a share of the items) moves the chances to
    (q + g) ÷ 2 and (q − g) ÷ 2 (to g and 0 when g > q: the pair cannot disagree less than
    the gap). Each replicate draws the items once per gap, wins of a ~ Binomial(n, p_a) and
    of b ~ Binomial(n − wins of a, p_b ÷ (1 − p_a)), and the exact binomial test
    (`stats.sign_test_pvalues`) separates them when p ≤ ``threshold`` (the board's Holm
    threshold). The gaps are s ÷ m for s = 0 … m (m the median pair's items); those reported
    are the least separated in at least 50% and 80% of the replicates.
    """
    usable = np.flatnonzero(items > 0)
    if usable.size == 0:
        return Resolution(None, None, threshold, 0)
    rng = np.random.default_rng(seed)
    chosen = usable[rng.integers(0, usable.size, size=replicates)]
    n = items[chosen].astype(np.int64)[:, None]
    share = (carrying[chosen] / items[chosen])[:, None]
    scale = int(np.median(items[usable]))
    gaps = (np.arange(scale + 1) / scale)[None, :]
    within = gaps <= share
    p_a = np.where(within, (share + gaps) / 2.0, np.minimum(gaps, 1.0))
    p_b = np.where(within, (share - gaps) / 2.0, 0.0)
    shape = (replicates, gaps.size)
    wins_a = rng.binomial(np.broadcast_to(n, shape), p_a)
    rest = np.where(p_a < 1.0, p_b / np.where(p_a < 1.0, 1.0 - p_a, 1.0), 0.0)
    wins_b = rng.binomial(n - wins_a, np.clip(rest, 0.0, 1.0))
    separated = (sign_test_pvalues(wins_a, wins_b) <= threshold).mean(axis=0)

    def least(level: float) -> float | None:
        reached = np.flatnonzero(separated >= level)
        return float(reached[0] / scale) if reached.size else None

    return Resolution(
        least(0.5), least(0.8), threshold, replicates, null_separated=float(separated[0])
    )


def resolution_continuous(
    values: FloatMatrix,
    threshold: float,
    *,
    replicates: int = RESOLUTION_REPLICATES,
    seed: int = SEED,
    steps: int = 200,
    shift: npt.NDArray[np.float64] | None = None,
) -> Resolution:
    """The board's resolution, by simulation from its own pairs (real-valued scores).

    Each replicate picks one of the board's pairs with at least two shared items at random,
    centres its differences d on zero (no true gap: c = d − mean d) and draws its n items
    again with replacement (c*); one side shifted by a gap g gives the differences c* + g,
    which the board's paired test separates when p ≤ ``threshold``. Up to
    :data:`EXACT_RESOLUTION_ITEMS` items the test is the exact sign-flip test
    (`stats.sign_flip_pvalue`; the least separated gap of each replicate is found by
    bisection over the grid), beyond it its normal approximation, which the board uses there
    too past the exact count and reads directly: |Σ(c* + g)| ÷ √Σ(c* + g)² ≥ z, z the normal
    quantile of 1 − threshold ÷ 2. The gaps tried are ``steps`` equal steps up to ten times
    the formula's 80% gap (2.80 × sd ÷ √n of the median pair), and those reported are the
    least separated in at least 50% and 80% of the replicates (None: not within the grid).

    ``shift`` (one value per item, mean 1 over the items) spreads a gap over the items
    unevenly: item i's difference moves by g × shift[i], so the mean still moves by g (a
    board whose score weighs its items, such as the Navigator Index, shifts each item in
    proportion to its weight). By default every item moves by g.
    """
    count = values.shape[0]
    present = ~np.isnan(values)
    a, b = np.triu_indices(count, 1)
    shared = (present.astype(np.int64) @ present.T.astype(np.int64))[a, b]
    usable = np.flatnonzero(shared >= 2)
    if usable.size == 0:
        return Resolution(None, None, threshold, 0, "exact sign-flip")
    rng = np.random.default_rng(seed)
    chosen = usable[rng.integers(0, usable.size, size=replicates)]
    profile = np.ones(values.shape[1]) if shift is None else np.asarray(shift, dtype=np.float64)
    centred: list[npt.NDArray[np.float64]] = []
    moved: list[npt.NDArray[np.float64]] = []
    for pair in chosen.tolist():
        common = present[a[pair]] & present[b[pair]]
        d = values[a[pair], common] - values[b[pair], common]
        c = d - d.mean()
        drawn = rng.integers(0, c.size, size=c.size)
        centred.append(c[drawn])
        moved.append(profile[common][drawn])
    spreads = [float(np.std(c, ddof=1)) for c in centred]
    sizes = np.array([c.size for c in centred])
    typical = POWER_FACTOR * float(np.median(spreads)) / math.sqrt(float(np.median(sizes)))
    span = float(np.nanmax(values) - np.nanmin(values))
    top = 10.0 * typical if typical > 0 else span / 100.0
    gaps = np.linspace(0.0, top if top > 0 else 1.0, steps + 1)
    least = np.full(replicates, np.inf)
    z = float(scipy_stats.norm.isf(threshold / 2.0))
    exact = sizes <= EXACT_RESOLUTION_ITEMS
    for r, (c, u) in enumerate(zip(centred, moved, strict=True)):
        if exact[r]:
            least[r] = _least_exact_gap(c, u, gaps, threshold)
            continue
        total = c.sum() + gaps * u.sum()
        squares = float((c * c).sum()) + 2.0 * gaps * float((c * u).sum())
        squares = squares + gaps * gaps * float((u * u).sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            found = np.flatnonzero(np.abs(total) >= z * np.sqrt(squares))
        found = found[squares[found] > 0]
        least[r] = gaps[found[0]] if found.size else np.inf

    def quantile(level: float) -> float | None:
        value = float(np.quantile(least, level, method="inverted_cdf"))
        return value if math.isfinite(value) else None

    test = "exact sign-flip" if exact.all() else "sign-flip, normal approximation"
    if exact.any() and not exact.all():
        test = "exact sign-flip up to 20 items, else its normal approximation"
    null = float(np.mean(least <= 0.0))
    return Resolution(quantile(0.5), quantile(0.8), threshold, replicates, test, null)


def _least_exact_gap(
    centred: npt.NDArray[np.float64],
    profile: npt.NDArray[np.float64],
    gaps: npt.NDArray[np.float64],
    threshold: float,
) -> float:
    """The least of ``gaps`` at which the exact sign-flip test separates
    ``centred + gap × profile`` (bisection: separation grows with the gap), or infinity."""

    def separated(k: int) -> bool:
        return sign_flip_pvalue(centred + gaps[k] * profile) <= threshold

    low, high = 0, gaps.size - 1
    if not separated(high):
        return math.inf
    if separated(low):
        return float(gaps[low])
    while high - low > 1:
        middle = (low + high) // 2
        if separated(middle):
            high = middle
        else:
            low = middle
    return float(gaps[high])


def self_checks(
    matrix: Matrix, pairs_total: int, *, alpha: float = ALPHA, test: PairTest = paired_pvalue
) -> tuple[SelfCheck, ...]:
    """The checks that must pass before a card is published (with the board's own test).

    * copy: the top system against an exact copy of itself is never established (its
      p-value stays above α, the loosest Holm threshold);
    * planted: the top system against a copy with a loss planted on up to
      :data:`PLANTED_ITEMS` items (0/1: passes turned to fails, or fails to passes when it
      has fewer passes; otherwise each lowered by the board's range) is established (its
      p-value at most α ÷ (pairs + 1), the strictest Holm threshold, which Holm always
      rejects); on a matrix too small for any p-value to get there (2 ÷ 2^k above it), the
      p-value must be that floor, 2 ÷ 2^k.
    """
    binary = matrix.binary
    present = ~np.isnan(matrix.values)
    scores = np.nanmean(np.where(present, matrix.values, np.nan), axis=1)
    top = int(np.argmax(scores))
    row = matrix.values[top][present[top]]
    copy_p, _ = test(row - row, binary)
    checks = [
        SelfCheck(
            "copy never established",
            copy_p > alpha,
            f"{matrix.systems[top]!r} against its copy: p = {copy_p:.3g}",
        )
    ]
    planted = row.copy()
    if binary:
        passes, fails = np.flatnonzero(row == 1.0), np.flatnonzero(row == 0.0)
        chosen, to = (passes, 0.0) if passes.size >= fails.size else (fails, 1.0)
        chosen = chosen[:PLANTED_ITEMS]
        planted[chosen] = to
    else:
        span = float(np.nanmax(matrix.values) - np.nanmin(matrix.values)) or 1.0
        chosen = np.arange(min(PLANTED_ITEMS, row.size))
        planted[chosen] -= span
    planted_p, _ = test(row - planted, binary)
    threshold = alpha / (pairs_total + 1)
    floor = 2.0 / 2.0**chosen.size  # the least p any sign-flip test gives on that many items
    detail = f"loss planted on {chosen.size} items: p = {planted_p:.3g} "
    if floor <= threshold:
        passed = planted_p <= threshold
        detail += f"(Holm's strictest threshold {threshold:.3g})"
    else:  # too few items for any pair to be established: the test must reach its floor
        passed = planted_p <= floor * (1.0 + 1e-9)
        detail += f"(too few items to reach Holm's {threshold:.3g}; the floor is {floor:.3g})"
    checks.append(SelfCheck("planted difference established", passed, detail))
    return tuple(checks)


def resolution_check(found: Resolution) -> SelfCheck:
    """The resolution's self-check: with no gap, the simulated pairs are separated about as
    often as the threshold allows: within three binomial standard errors of it, plus 2 points
    for the normal approximation's error in far tails (a simulation that separates level
    pairs more often than that measures nothing, and refuses the card)."""
    allowed = found.threshold + 0.02
    if found.replicates:
        spread = math.sqrt(found.threshold * (1.0 - found.threshold) / found.replicates)
        allowed += 3.0 * spread
    return SelfCheck(
        "simulated level pair rarely separated",
        bool(found.null_separated <= allowed),
        f"{found.null_separated:.3g} of {found.replicates} simulated pairs with no gap "
        f"separated (at most {allowed:.3g} allowed at p ≤ {found.threshold:.3g})",
    )


def card(
    matrix: Matrix,
    *,
    alpha: float = ALPHA,
    draws: int = DRAWS,
    seed: int = SEED,
    test: PairTest = paired_pvalue,
    with_pairs: bool = True,
    command: str = "",
) -> Card:
    """The card of a board (see the module docstring); ``with_pairs=False`` leaves the
    per-pair records out (a board whose pairs are published elsewhere); ``command`` is
    recorded on the card as what computed it.

    Raises:
        ValueError: On fewer than two systems or an empty matrix.
        CardRefused: When a self-check fails.
    """
    values = matrix.values
    count, n = values.shape
    if count < 2 or n < 1:
        raise ValueError(f"a card needs at least two systems and one item, got {count} × {n}")
    binary = matrix.binary
    present = ~np.isnan(values)
    if not present.any(axis=1).all():
        empty = matrix.systems[int(np.argmin(present.any(axis=1)))]
        raise ValueError(f"system {empty!r} has no score on any item")
    scores = np.nanmean(values, axis=1)
    moments = pair_statistics(values)
    a, b, items, gap = moments.a, moments.b, moments.items, moments.difference
    sd, kappa = moments.sd, moments.kappa
    exact = exact_scale(values)
    tested = exact if exact is not None else values
    if binary and test is paired_pvalue:  # every pair at once, the same numbers
        results = ItemResults(
            entry=np.nonzero(present)[0].astype(np.int64),
            item=np.nonzero(present)[1].astype(np.int64),
            resolved=values[present] == 1.0,
        )
        counts = pair_counts(results, list(range(count)))
        carrying = (counts.wins_a + counts.wins_b).astype(np.float64)
        pvalues = sign_test_pvalues(counts.wins_a, counts.wins_b)
        tests = ["exact binomial"] * a.size
    else:
        carrying = np.zeros(a.size)
        pvalues = np.ones(a.size)
        tests = []
        for t, (i, j) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
            common = present[i] & present[j]
            d = tested[i, common] - tested[j, common]
            carrying[t] = np.count_nonzero(d)
            pvalues[t], name = test(d, binary)
            tests.append(name)
    established = holm_rejected(pvalues, alpha)
    a_wins = gap > 0
    winners = np.where(a_wins, a, b)[established]
    losers = np.where(a_wins, b, a)[established]
    best, worst = rank_bounds(count, winners, losers)
    low, high = rank_sets(values, draws=draws, seed=seed, alpha=alpha)
    group_low = group_high = None
    if matrix.groups is not None:
        _, codes = np.unique(np.array(matrix.groups, dtype=object), return_inverse=True)
        group_low, group_high = rank_sets(
            values, draws=draws, seed=seed, alpha=alpha, groups=codes.reshape(-1).astype(np.int64)
        )
    threshold = alpha / max(1, a.size - int(established.sum()))  # Holm's next threshold
    found = (
        resolution(items, carrying, threshold, seed=seed)
        if binary
        else resolution_continuous(values, threshold, seed=seed)
    )
    checks = (*self_checks(matrix, a.size, alpha=alpha, test=test), resolution_check(found))
    failed = [c for c in checks if not c.passed]
    if failed:
        raise CardRefused("; ".join(f"self-check {c.name!r} failed: {c.detail}" for c in failed))
    # Entries by score, highest first, level scores by name (already sorted): a stable sort.
    order = np.argsort(-_rank_key(values, exact, scores), kind="stable")
    listed = {int(s): p for p, s in enumerate(order)}
    tiers, tier_of = _tiers(count, winners, losers)
    apart = np.zeros((count, count), dtype=bool)
    apart[winners, losers] = apart[losers, winners] = True
    undecided = int(np.count_nonzero(~apart[order[:-1], order[1:]]))
    entries = tuple(
        Entry(
            system=matrix.systems[s],
            score=float(scores[s]),
            items=int(present[s].sum()),
            rank_best=int(best[s]),
            rank_worst=int(worst[s]),
            tied=bool(best[s] != worst[s]),
            tier=int(tier_of[s]),
            rank_set_low=int(low[s]),
            rank_set_high=int(high[s]),
            group_rank_set_low=None if group_low is None else int(group_low[s]),
            group_rank_set_high=None if group_high is None else int(group_high[s]),
        )
        for s in order.tolist()
    )
    pairs = []
    for t in range(a.size if with_pairs else 0):
        i, j, sign = int(a[t]), int(b[t]), 1.0
        if listed[j] < listed[i]:
            i, j, sign = j, i, -1.0
        pairs.append(
            Pair(
                a=matrix.systems[i],
                b=matrix.systems[j],
                items=int(items[t]),
                difference=float(sign * gap[t]),
                sd=_finite(sd[t]),
                kappa=_finite(kappa[t]),
                carrying_items=int(carrying[t]),
                smallest_separable_gap=_finite(moments.smallest_separable_gap[t]),
                test=tests[t],
                p_value=float(pvalues[t]),
                established=bool(established[t]),
                better=None
                if not established[t]
                else matrix.systems[int(a[t] if gap[t] > 0 else b[t])],
            )
        )
    where = {name: listed[s] for s, name in enumerate(matrix.systems)}
    pairs.sort(key=lambda p: (where[p.a], where[p.b]))
    notes = []
    if matrix.duplicates:
        notes.append(f"{matrix.duplicates} duplicated (system, item) cells counted once")
    if int((~present).sum()):
        missing = int((~present).sum())
        notes.append(
            f"{missing} cell{'s' if missing > 1 else ''} missing: each pair uses the items "
            "both have, each bootstrap mean the drawn items the system has"
        )
    if not binary and any(t.startswith("sign-flip,") for t in tests):
        notes.append(
            "some pairs have too many real-valued items for the exact count: their "
            "p-values are the sign-flip test's normal approximation"
        )
    return Card(
        systems=count,
        items=n,
        data_type="binary" if binary else "continuous",
        matrix_sha256=matrix_sha256(matrix),
        missing_cells=int((~present).sum()),
        duplicates_counted_once=matrix.duplicates,
        groups=None if matrix.groups is None else len(set(matrix.groups)),
        alpha=alpha,
        draws=draws,
        seed=seed,
        pairs_total=int(a.size),
        pairs_established=int(established.sum()),
        established_share=float(established.mean()) if a.size else None,
        adjacent_pairs=count - 1,
        adjacent_undecided=undecided,
        tiers=tiers,
        discordance=_discordance(scores, a, b, carrying, items),
        resolution=found,
        entries=entries,
        pairs=tuple(pairs),
        self_checks=checks,
        notes=tuple(notes),
        command=command,
    )


def _rank_key(
    values: FloatMatrix, exact: FloatMatrix | None, scores: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """What entries are ordered by: the exact sums on a full lattice matrix (equal scores
    compare equal), else the means."""
    if exact is not None and not np.isnan(values).any():
        return exact.sum(axis=1)
    return scores


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


__all__ = [
    "ALPHA",
    "DRAWS",
    "SEED",
    "Card",
    "CardRefused",
    "Discordance",
    "Entry",
    "Matrix",
    "Pair",
    "PairStatistics",
    "Resolution",
    "SelfCheck",
    "Tiers",
    "bootstrap_weights",
    "card",
    "competition_ranks_rows",
    "matrix_from_cells",
    "matrix_sha256",
    "pair_statistics",
    "paired_pvalue",
    "rank_sets",
    "resolution",
    "resolution_check",
    "resolution_continuous",
    "score_text",
    "self_checks",
    "software",
]
