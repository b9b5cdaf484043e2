"""Statistics used to publish benchmark leaderboards.

Plain, typed functions with no pipeline dependencies:

* :func:`sign_flip_pvalue`: exact paired sign-flip (randomisation) test.
* :func:`holm`: Holm–Bonferroni step-down multiple-testing correction.
* :func:`cohen_kappa`: chance-corrected agreement between two raters.
* :func:`weighted_ci90`, :func:`margin95`, :func:`repeat_spread`: uncertainty summaries.
* :func:`paired_comparisons`, :func:`rank_ranges`, :func:`dominates`: pairwise model
  comparisons and the rank ranges / dominance derived from them.

Throughout, a higher score means a better model.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import combinations

import numpy as np
import numpy.typing as npt
from scipy import stats as scipy_stats

__all__ = [
    "MAX_EXACT_TERMS",
    "TIE_RELATIVE_TOLERANCE",
    "PairResult",
    "RankRange",
    "cohen_kappa",
    "dominates",
    "holm",
    "margin95",
    "paired_comparisons",
    "rank_ranges",
    "repeat_spread",
    "sign_flip_pvalue",
    "significantly_better_pairs",
    "weighted_ci90",
]

FloatVector = Sequence[float] | npt.NDArray[np.floating] | npt.NDArray[np.integer]

MAX_EXACT_TERMS = 44
"""Largest number of non-zero terms for which :func:`sign_flip_pvalue` runs (exactly)."""

TIE_RELATIVE_TOLERANCE = 1e-9
"""Relative tolerance (times ``sum |x_t|``) under which two statistics count as tied."""

_Z90 = 1.645
_CHUNK_TERMS = 16  # the streamed half is processed 2**16 sums at a time
_PRUNE_MARGIN = 1e-10
"""Relative margin (times ``sum |x_t|``) kept when dropping sums that cannot matter: far
above float rounding of a 44-term sum, far below :data:`TIE_RELATIVE_TOLERANCE`."""


def _as_vector(values: FloatVector, name: str) -> npt.NDArray[np.float64]:
    """Convert ``values`` to a finite 1-D float64 array or raise ``ValueError``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite values")
    return array


def _drop_middle(sums: npt.NDArray[np.float64], cut: float) -> npt.NDArray[np.float64]:
    """``sums`` (sorted) without the entries strictly inside ``(-cut, cut)``; still sorted."""
    if cut <= 0.0:
        return sums
    low = int(np.searchsorted(sums, -cut, side="right"))
    high = int(np.searchsorted(sums, cut, side="left"))
    if high <= low:
        return sums
    return np.concatenate((sums[:low], sums[high:]))


def _sorted_subset_sums(
    magnitudes: npt.NDArray[np.float64], keep_beyond: float = -math.inf
) -> npt.NDArray[np.float64]:
    """The ``2**k`` signed sums ``sum eps_i * m_i`` (``eps_i = ±1``), sorted ascending.

    Built by doubling: if ``sums`` is sorted then ``sums - m`` and ``sums + m`` are two
    sorted runs, and numpy's stable sort (timsort for floats) merges them in linear time.

    With ``keep_beyond = c``, only the sums with ``|sum| >= c`` are wanted: after each
    doubling, a partial sum ``v`` with ``|v| + (magnitudes still to add) < c`` can only end
    inside ``(-c, c)``, so it is dropped together with every sum it would have become.
    """
    sums = np.zeros(1, dtype=np.float64)
    for position, magnitude in enumerate(magnitudes):
        sums = np.sort(np.concatenate((sums - magnitude, sums + magnitude)), kind="stable")
        if keep_beyond > 0.0:
            still_to_add = math.fsum(magnitudes[position + 1 :].tolist())
            sums = _drop_middle(sums, keep_beyond - still_to_add)
    return sums


def sign_flip_pvalue(differences: FloatVector, weights: FloatVector | None = None) -> float:
    """Exact two-sided paired sign-flip (randomisation) test.

    The terms are ``x_t = a_t * d_t`` (weights ``a_t`` default to 1) and the statistic is
    ``D = sum_t x_t``. Under the null hypothesis each difference is symmetric about zero, so
    every sign vector ``eps`` in ``{-1, +1}^n`` is equally likely and::

        p = #{eps : |sum_t eps_t x_t| >= |D|} / 2**n

    The observed assignment (and its mirror image) is always counted, so ``p >= 2 / 2**n``.
    Terms with ``x_t == 0`` (a zero difference or a zero weight) are dropped; this never
    changes ``p`` because such a term doubles numerator and denominator alike. With no
    non-zero terms the result is 1.0. Negative weights are allowed (they flip the sign of a
    term).

    Exactness: every one of the ``2**n`` sign vectors is counted; there is no sampling and
    no normal approximation. Because ``|S|`` is invariant under flipping all signs, the
    sign of the largest term is fixed and the count doubled. The remaining ``n - 1`` terms,
    largest first, are dealt alternately to two halves (meet in the middle), so that each
    half carries about half of ``sum |x_t|``: all ``2**k`` signed sums of the first half
    are enumerated with numpy and sorted (the table); the second half's sums are streamed
    in chunks of ``2**16`` and, for each sum ``s``, the number of table entries ``t`` with
    ``s + t >= thr`` or ``s + t <= -thr`` is obtained with two ``searchsorted`` calls.

    Pruning (exact): a table entry with ``|t| < thr - max|s|`` satisfies ``|s + t| < thr``
    for every ``s``, and a streamed sum with ``|s| < thr - max|t|`` likewise for every
    ``t``: such entries can never be counted, so they are dropped while the table is built
    (with the partial sums that can only lead to them) and sliced out of each chunk (a
    chunk lying wholly inside is skipped). Bounds keep a margin of ``1e-10 * sum |x_t|`` so
    that rounding never drops a sum that could reach the threshold. In the tail (small
    ``p``) most of the work goes; near the centre nothing can be dropped.

    Work is ``O(2**(n/2) * n)`` at worst; memory is a sorted table of at most ``2**22``
    float64 (32 MiB) plus one chunk. At ``n = 40`` a test takes tens of milliseconds when
    ``p`` is large and a few milliseconds in the tail. More than :data:`MAX_EXACT_TERMS`
    (44) non-zero terms raise ``ValueError`` instead of approximating.

    Floating point: sums of floats are rounded, so an assignment whose sum is exactly tied
    with ``|D|`` in real arithmetic (including the observed assignment and its mirror) could
    otherwise be lost by rounding. Sums are therefore compared as
    ``|S| >= |D| - 1e-9 * sum_t |x_t|`` (see :data:`TIE_RELATIVE_TOLERANCE`): statistics
    within that relative tolerance of ``|D|`` count as ties, i.e. as extreme. If
    ``|D|`` itself is within the tolerance of zero, ``p`` is 1.0.

    Args:
        differences: Per-item paired differences ``d_t`` (sequence or numpy array).
        weights: Optional per-item weights ``a_t``, same length as ``differences``.

    Returns:
        The exact two-sided p-value in ``(0, 1]``.

    Raises:
        ValueError: If inputs are not finite 1-D vectors of equal length, or if there are
            more than :data:`MAX_EXACT_TERMS` non-zero terms.
    """
    d = _as_vector(differences, "differences")
    if weights is None:
        a = np.ones_like(d)
    else:
        a = _as_vector(weights, "weights")
        if a.shape != d.shape:
            raise ValueError(f"weights has length {a.size} but differences has length {d.size}")
    x = a * d
    x = x[x != 0.0]
    n = int(x.size)
    if n == 0:
        return 1.0
    if n > MAX_EXACT_TERMS:
        raise ValueError(
            f"exact sign-flip test supports at most {MAX_EXACT_TERMS} non-zero terms, got {n}"
        )

    magnitudes = np.abs(x)
    scale = math.fsum(magnitudes.tolist())
    threshold = abs(math.fsum(x.tolist())) - TIE_RELATIVE_TOLERANCE * scale
    if threshold <= 0.0:
        return 1.0

    # The set of signed sums of a term is the same for x and -x, so only magnitudes matter.
    # Fix the sign of the largest (the count is symmetric under a global flip) and deal the
    # rest, largest first, alternately to the table and to the streamed half.
    ordered = np.sort(magnitudes)[::-1]
    offset = float(ordered[0])
    table_terms = ordered[1::2]
    streamed = ordered[2::2]
    margin = _PRUNE_MARGIN * scale
    reach_streamed = offset + math.fsum(streamed.tolist())  # max |s|
    reach_table = math.fsum(table_terms.tolist())  # max |t|
    table = _sorted_subset_sums(table_terms, keep_beyond=threshold - reach_streamed - margin)
    cut = threshold - reach_table - margin  # streamed sums inside (-cut, cut) never count
    inner_size = min(streamed.size, _CHUNK_TERMS)
    inner = _sorted_subset_sums(streamed[:inner_size]) + offset
    inner_low, inner_high = float(inner[0]), float(inner[-1])
    outer = _sorted_subset_sums(streamed[inner_size:])

    count = 0
    for shift in outer:
        if -cut < inner_low + shift and inner_high + shift < cut:
            continue  # the whole chunk lies where nothing can be counted
        sums = _drop_middle(inner + shift, cut)
        # s + t >= thr  <=>  t >= thr - s ;  s + t <= -thr  <=>  t <= -thr - s (disjoint).
        below = np.searchsorted(table, threshold - sums, side="left")
        at_most = np.searchsorted(table, -threshold - sums, side="right")
        count += int(table.size) * int(sums.size) - int(below.sum()) + int(at_most.sum())
    # count is over 2**(n-1) assignments with eps_0 fixed; both are exact in float64.
    return min(1.0, count / 2.0 ** (n - 1))


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm–Bonferroni step-down procedure.

    Sort the ``m`` p-values ascending; reject the ``k``-th smallest (``k = 0, 1, ...``)
    while ``p_(k) <= alpha / (m - k)``, and stop at the first failure (it and every larger
    p-value are not rejected). Controls the family-wise error rate at ``alpha``.

    Args:
        pvalues: P-values in ``[0, 1]``.
        alpha: Family-wise significance level in ``(0, 1)``.

    Returns:
        For each input p-value, in input order, whether its hypothesis is rejected.

    Raises:
        ValueError: If a p-value is outside ``[0, 1]`` (or NaN) or ``alpha`` is not in
            ``(0, 1)``.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    values = [float(p) for p in pvalues]
    for p in values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values must be in [0, 1], got {p}")
    m = len(values)
    rejected = [False] * m
    for rank, index in enumerate(sorted(range(m), key=values.__getitem__)):
        if values[index] > alpha / (m - rank):
            break
        rejected[index] = True
    return rejected


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa for two raters labelling the same items.

    ``kappa = (p_o - p_e) / (1 - p_e)`` where ``p_o`` is the observed fraction of items on
    which the raters agree and ``p_e = sum_k P_a(k) * P_b(k)`` the agreement expected from
    their marginal label frequencies. It is computed with exact integer counts.

    Convention: when ``p_e == 1`` (both raters always give the same single label) kappa is
    undefined (0/0); since the raters then agree on every item (``p_o == 1``) this function
    returns 1.0.

    Args:
        a: Labels from the first rater, one per item.
        b: Labels from the second rater, same items in the same order.

    Returns:
        Kappa in ``[-1, 1]``.

    Raises:
        ValueError: If the sequences differ in length or are empty.
    """
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} != {len(b)}")
    n = len(a)
    if n == 0:
        raise ValueError("cohen_kappa needs at least one item")
    agreements = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    counts_a, counts_b = Counter(a), Counter(b)
    expected = sum(count * counts_b[label] for label, count in counts_a.items())  # n^2 * p_e
    if expected == n * n:
        return 1.0
    return (n * agreements - expected) / (n * n - expected)


def weighted_ci90(
    scores: Sequence[float], weights: Sequence[float]
) -> tuple[float, float | None, float | None]:
    """Weighted mean with a normal-approximation 90% interval, clipped to ``[0, 100]``.

    ``mu = sum w x / sum w``; effective sample size ``n_eff = (sum w)^2 / sum w^2``;
    ``half = 1.645 * sqrt((sum w (x - mu)^2 / sum w) / n_eff)``; interval
    ``[max(0, mu - half), min(100, mu + half)]``.

    Args:
        scores: Scores on a 0–100 scale.
        weights: Non-negative weights, same length, with a positive sum.

    Returns:
        ``(mu, low, high)``, or ``(mu, None, None)`` when ``n_eff <= 1`` (a single score, or
        all weight on one score).

    Raises:
        ValueError: On empty or mismatched inputs, non-finite values, negative weights, or
            weights summing to zero.
    """
    x = _as_vector(scores, "scores")
    w = _as_vector(weights, "weights")
    if x.size == 0:
        raise ValueError("weighted_ci90 needs at least one score")
    if x.shape != w.shape:
        raise ValueError(f"scores has length {x.size} but weights has length {w.size}")
    if np.any(w < 0):
        raise ValueError("weights must be non-negative")
    total = float(w.sum())
    if total <= 0.0:
        raise ValueError("weights must have a positive sum")
    mu = float(np.dot(w, x) / total)
    n_eff = total * total / float(np.dot(w, w))
    if n_eff <= 1.0:
        return mu, None, None
    variance = float(np.dot(w, (x - mu) ** 2) / total)
    half = _Z90 * math.sqrt(variance / n_eff)
    return mu, max(0.0, mu - half), min(100.0, mu + half)


def margin95(scores: Sequence[float]) -> float | None:
    """Half-width of the Student-t 95% confidence interval of the mean.

    ``t(0.975, n - 1) * s / sqrt(n)`` with ``s`` the sample standard deviation (ddof 1).

    Args:
        scores: Repeated measurements.

    Returns:
        The margin, or ``None`` when there are fewer than 5 scores.
    """
    x = _as_vector(scores, "scores")
    n = int(x.size)
    if n < 5:
        return None
    t = float(scipy_stats.t.ppf(0.975, n - 1))
    return t * float(np.std(x, ddof=1)) / math.sqrt(n)


def repeat_spread(scores: Sequence[float]) -> float | None:
    """Sample standard deviation (ddof 1) of repeated runs.

    Args:
        scores: Repeated measurements.

    Returns:
        The sample standard deviation, or ``None`` when there are fewer than 2 scores.
    """
    x = _as_vector(scores, "scores")
    if x.size < 2:
        return None
    return float(np.std(x, ddof=1))


@dataclass(frozen=True, slots=True)
class RankRange:
    """Range of ranks a model could occupy given the significant pairwise differences.

    Attributes:
        rank_best: 1 + number of models significantly better than this one.
        rank_worst: N - number of models significantly worse than this one.
        tied: Whether the range spans more than one rank.
    """

    rank_best: int
    rank_worst: int
    tied: bool


def rank_ranges(
    models: Sequence[str], significantly_better: Iterable[tuple[str, str]]
) -> dict[str, RankRange]:
    """Rank range of each model from significant pairwise differences.

    Args:
        models: All ranked models (``N`` distinct names).
        significantly_better: Pairs ``(a, b)`` meaning "a is significantly better than b".

    Returns:
        A :class:`RankRange` per model, keyed by name, in the order of ``models``.

    Raises:
        ValueError: On duplicate models, pairs naming unknown models, a model compared with
            itself, or contradictory pairs (both ``(a, b)`` and ``(b, a)``).
    """
    names = list(models)
    known = set(names)
    if len(known) != len(names):
        raise ValueError("models must be distinct")
    pairs = set(significantly_better)
    for winner, loser in pairs:
        if winner not in known or loser not in known:
            raise ValueError(f"pair ({winner!r}, {loser!r}) names an unknown model")
        if winner == loser:
            raise ValueError(f"model {winner!r} cannot be better than itself")
        if (loser, winner) in pairs:
            raise ValueError(f"contradictory pairs for {winner!r} and {loser!r}")
    beaten_by = Counter(loser for _, loser in pairs)
    beats = Counter(winner for winner, _ in pairs)
    total = len(names)
    ranges = {}
    for name in names:
        best = 1 + beaten_by[name]
        worst = total - beats[name]
        ranges[name] = RankRange(rank_best=best, rank_worst=worst, tied=best != worst)
    return ranges


@dataclass(frozen=True, slots=True)
class PairResult:
    """Outcome of one paired comparison between two models.

    Attributes:
        model_a: First model.
        model_b: Second model.
        n_tasks: Number of common tasks compared.
        statistic: ``D = sum_t a_t (score_a - score_b)``; positive favours ``model_a``.
        p_value: Exact sign-flip p-value, before multiple-testing correction.
        significant: Whether Holm (over all pairs) rejects "no difference".
        better: The significantly better model, or ``None`` if not significant.
    """

    model_a: str
    model_b: str
    n_tasks: int
    statistic: float
    p_value: float
    significant: bool
    better: str | None


def paired_comparisons(
    scores: Mapping[str, Mapping[str, float]],
    task_weights: Mapping[str, float],
    alpha: float = 0.05,
) -> list[PairResult]:
    """Compare every pair of models on their common tasks, Holm-corrected over all pairs.

    For each unordered pair ``(A, B)`` (in the order models appear in ``scores``), over the
    tasks scored for both: ``d_t = score_A - score_B``, ``D = sum_t a_t d_t`` with weights
    ``a_t = task_weights[t]``, and ``p = sign_flip_pvalue(d, a)``. Holm's procedure at
    ``alpha`` is then applied to the p-values of all pairs together.

    Args:
        scores: ``scores[model][task]``, higher is better.
        task_weights: Weight of each task; must cover every common task.
        alpha: Family-wise significance level.

    Returns:
        One :class:`PairResult` per pair.

    Raises:
        ValueError: If a common task has no weight, or as raised by
            :func:`sign_flip_pvalue` (e.g. too many tasks).
    """
    models = list(scores)
    raw: list[tuple[str, str, int, float, float]] = []
    for model_a, model_b in combinations(models, 2):
        common = sorted(set(scores[model_a]) & set(scores[model_b]))
        missing = [task for task in common if task not in task_weights]
        if missing:
            raise ValueError(f"no weight for tasks {missing}")
        diffs = [float(scores[model_a][t]) - float(scores[model_b][t]) for t in common]
        weights = [float(task_weights[t]) for t in common]
        statistic = math.fsum(w * d for w, d in zip(weights, diffs, strict=True))
        p_value = sign_flip_pvalue(diffs, weights)
        raw.append((model_a, model_b, len(common), statistic, p_value))
    rejected = holm([row[4] for row in raw], alpha=alpha)
    results = []
    for (model_a, model_b, n_tasks, statistic, p_value), significant in zip(
        raw, rejected, strict=True
    ):
        better = None
        if significant:
            better = model_a if statistic > 0 else model_b
        results.append(
            PairResult(model_a, model_b, n_tasks, statistic, p_value, significant, better)
        )
    return results


def significantly_better_pairs(results: Iterable[PairResult]) -> set[tuple[str, str]]:
    """Turn comparison results into ``(better, worse)`` pairs for :func:`rank_ranges`.

    Args:
        results: Output of :func:`paired_comparisons`.

    Returns:
        The set of ``(winner, loser)`` pairs for the significant comparisons.
    """
    pairs = set()
    for result in results:
        if result.better is not None:
            loser = result.model_b if result.better == result.model_a else result.model_a
            pairs.add((result.better, loser))
    return pairs


def dominates(
    a_significantly_better: bool,
    cost_a: float | Decimal | None,
    cost_b: float | Decimal | None,
) -> bool:
    """Whether model A dominates model B.

    A dominates B only when A is significantly better AND strictly cheaper per successful
    task. An unknown cost (``None``) on either side never yields dominance. Costs may be
    exact ``Decimal`` amounts (as published): they are compared as given, never through
    ``float``, so two costs that differ beyond float precision still order correctly.

    Args:
        a_significantly_better: Whether A is significantly better than B.
        cost_a: A's cost per successful task, or ``None`` if unknown.
        cost_b: B's cost per successful task, or ``None`` if unknown.

    Returns:
        ``True`` if A dominates B.
    """
    if not a_significantly_better or cost_a is None or cost_b is None:
        return False
    return cost_a < cost_b
