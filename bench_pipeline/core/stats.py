"""Statistics used to publish benchmark leaderboards.

Plain, typed functions with no pipeline dependencies:

* :func:`sign_flip_pvalue`: exact paired sign-flip (randomisation) test, at any size on
  lattice data (:func:`lattice_terms`, :func:`extreme_count`); :func:`sign_test_pvalues`,
  the same test of 0/1 outcomes for many pairs at once.
* :func:`holm`: Holm–Bonferroni step-down multiple-testing correction (on arrays:
  :func:`holm_rejected`).
* :func:`cohen_kappa`: chance-corrected agreement between two raters.
* :func:`weighted_ci90`, :func:`margin95`, :func:`repeat_spread`: uncertainty summaries.
* :func:`paired_comparisons`, :func:`rank_ranges`, :func:`dominates`: pairwise model
  comparisons and the rank ranges / dominance derived from them.

Throughout, a higher score means a better model.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from itertools import combinations
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats as scipy_stats

__all__ = [
    "MAX_DETECTED_DENOMINATOR",
    "MAX_EXACT_TERMS",
    "TIE_RELATIVE_TOLERANCE",
    "PairResult",
    "RankRange",
    "as_rational",
    "cohen_kappa",
    "countable",
    "dominates",
    "extreme_count",
    "holm",
    "holm_rejected",
    "lattice_terms",
    "margin95",
    "paired_comparisons",
    "rank_bounds",
    "rank_ranges",
    "repeat_spread",
    "sign_flip_pvalue",
    "sign_test_pvalues",
    "significantly_better_pairs",
    "weighted_ci90",
    "weighted_sum",
]

FloatVector = Sequence[float] | npt.NDArray[np.floating] | npt.NDArray[np.integer]
Vector = FloatVector | Sequence[float | int | Fraction | Decimal]
"""Numbers for :func:`sign_flip_pvalue`: floats, ints, or exact ``Fraction``/``Decimal``."""
Sums = npt.NDArray[Any]
"""Signed sums: float64 for real-valued terms, int64 for lattice terms."""
Method = Literal["auto", "count", "meet_in_the_middle"]

MAX_EXACT_TERMS = 44
"""Most non-zero real-valued terms :func:`sign_flip_pvalue` takes (lattice terms: any)."""

MAX_DETECTED_DENOMINATOR = 2**20
"""Largest denominator a float is read as (``0.1`` is 1/10), and the largest common
denominator of float terms taken as a lattice; exact ``Fraction``/``Decimal`` have none."""

COUNT_BUDGET_BITS = 2**32
"""Up to ``n * b * (S + 1)`` bit operations (~20 ms) the lattice count is preferred to meet
in the middle at ``n <= 44`` (``b`` bits per packed coefficient, ``S = sum |k_t|``)."""

COUNT_LARGE_BUDGET_BITS = 2**38
"""Beyond 44 terms meet in the middle cannot run, so the count takes up to this much work."""

COUNT_MAX_BITS = 2**30
"""Largest packed polynomial (128 MiB) the lattice count builds."""

TIE_RELATIVE_TOLERANCE = 1e-9
"""Relative tolerance (times ``sum |x_t|``) under which two statistics count as tied."""

_Z90 = 1.645
_FEW_KEYS = 4
"""Keys are searched one by one (not merged with every low sum) while this many times the
searches they need stay within the low sums there are."""
_PRUNE_MARGIN = 1e-10
"""Relative margin (times ``sum |x_t|``) kept when dropping sums that cannot matter: far
above float rounding of a 44-term sum, far below :data:`TIE_RELATIVE_TOLERANCE`."""


def _as_vector(values: Vector, name: str) -> npt.NDArray[np.float64]:
    """Convert ``values`` to a finite 1-D float64 array or raise ``ValueError``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite values")
    return array


def _signed_sums(magnitudes: Sums) -> Sums:
    """The ``2**k`` signed sums ``sum eps_i * m_i`` (``eps_i = ±1``), unsorted; ``[0]`` for none.

    Built by doubling (``sums - m`` then ``sums + m``), so the multiset is exactly symmetric:
    float negation is exact and rounding is symmetric, so ``-s`` is a sum whenever ``s`` is.
    """
    sums = np.zeros(1, dtype=magnitudes.dtype)
    for magnitude in magnitudes:
        sums = np.concatenate((sums - magnitude, sums + magnitude))
    return sums


def _total(values: Sums) -> float | int:
    """Exact sum of an int64 array (as a Python int), else the float sum without rounding drift."""
    if values.dtype.kind in "iu":
        return sum(values.tolist())
    return math.fsum(values.tolist())


def _halves(terms: Sums) -> tuple[Sums, Sums]:
    """``terms`` split in two, the larger part first (the first gets the odd one out)."""
    cut = terms.size - terms.size // 2
    return terms[:cut], terms[cut:]


def _meet_in_the_middle(
    magnitudes: npt.NDArray[np.float64] | npt.NDArray[np.int64],
    threshold: float | int,
    margin: float | int,
) -> int:
    """Sign vectors (of all ``2**n``) with ``|sum eps_t m_t| >= threshold > 0``; see below.

    ``magnitudes`` are float64 (real-valued terms, with a rounding ``margin``; their total
    below 1, so that :func:`_order_codes` needs no scaling) or int64 (lattice terms,
    ``margin = 0``: integer sums are exact and nothing needs a tolerance; total below
    ``2**61``).

    The terms, largest first, are split into a high half and a low half, the high half into
    blocks (its larger terms) and the rest. For a high sum ``h = a + r`` (``a`` a block sum,
    ``r`` a rest sum) the key ``k = threshold - h`` counts the low sums ``l >= k``. The
    other tail (sums ``<= -threshold``) mirrors this one exactly: both halves' sums are
    symmetric multisets, float rounding included, so the count is doubled.
    """
    high, low = _halves(np.sort(magnitudes)[::-1])
    blocks_terms, rest_terms = _halves(high)
    reach_low = _total(low)
    spread = _total(rest_terms) + reach_low + margin
    blocks, rest = _signed_sums(blocks_terms), np.sort(_signed_sums(rest_terms))
    low_size = 2**low.size
    # A block all of whose keys lie below every low sum counts whole; one all of whose keys
    # lie above every low sum counts nothing; only the others are looked into.
    count = int(np.count_nonzero(blocks - spread >= threshold)) * rest.size * low_size
    partial = blocks[(blocks + spread >= threshold) & (blocks - spread < threshold)]
    # Along the sorted rest a block's keys fall, so its keys at most `floor` (every low sum
    # counts) are a tail of `rest` and those above `ceiling` (none counts) a head: only the
    # run between is built. The run's ends are found on approximate keys, which is safe:
    # within the margin of either bound, a key counts the same on both sides of it.
    floor, ceiling = -reach_low - margin, reach_low + margin
    start = np.searchsorted(rest, (threshold - ceiling) - partial)
    stop = np.searchsorted(rest, (threshold - floor) - partial)
    count += int((rest.size - stop).sum()) * low_size
    lengths = stop - start
    total = int(lengths.sum())
    if total:
        run = np.arange(total)
        run += np.repeat(start - (np.cumsum(lengths) - lengths), lengths)
        keys = np.repeat(partial, lengths)
        keys += rest[run]
        count += _at_least(np.subtract(threshold, keys, out=keys), low, margin)
    return 2 * count


def _at_least(keys: Sums, low: Sums, margin: float | int) -> int:
    """``sum over keys k`` of ``#{l : l >= k}``, ``l`` the signed sums of ``low``.

    The low sums are ``c + r`` (``c`` a block, ``r`` the rest), as in
    :func:`_meet_in_the_middle`. Few keys: per key, blocks wholly at or above it count
    whole and only the blocks it falls inside are searched (:func:`_at_least_by_key`).
    Otherwise blocks wholly below the smallest key (never counted) and wholly at or above
    the largest (counted for every key) are not built; the other blocks' sums are merged
    with the keys in one sort (:func:`_pairs_at_least`).
    """
    blocks_terms, rest_terms = _halves(low)
    reach = _total(rest_terms) + margin
    blocks, rest = _signed_sums(blocks_terms), _signed_sums(rest_terms)
    if keys.size * _FEW_KEYS <= blocks.size * rest.size:
        blocks.sort()
        rest.sort()
        first = np.searchsorted(blocks, keys - reach)  # blocks below never count
        whole = np.searchsorted(blocks, keys + reach)  # blocks from here count whole
        if int((whole - first).sum()) * _FEW_KEYS <= blocks.size * rest.size:
            return _at_least_by_key(keys, blocks, rest, first, whole)
    smallest, largest = keys.min(), keys.max()
    above = blocks - reach >= largest
    count = int(np.count_nonzero(above)) * rest.size * keys.size
    relevant = blocks[(blocks + reach >= smallest) & ~above]
    merged = _workspace(keys.size + relevant.size * rest.size, keys.dtype)
    merged[: keys.size] = keys
    np.add(relevant[:, None], rest[None, :], out=merged[keys.size :].reshape(-1, rest.size))
    return count + _pairs_at_least(merged, keys.size)


_WORKSPACE = threading.local()


def _workspace(size: int, dtype: np.dtype) -> Sums:
    """An uninitialised array of ``size`` items, reusing this thread's buffer (the merge runs
    at every test, and a fresh allocation of that size costs page faults each time)."""
    buffer = getattr(_WORKSPACE, "buffer", None)
    if buffer is None or buffer.size < size:
        buffer = _WORKSPACE.buffer = np.empty(size, dtype=np.int64)
    return buffer[:size].view(dtype)


def _at_least_by_key(
    keys: Sums,
    blocks: Sums,
    rest: Sums,
    first: npt.NDArray[np.intp],
    whole: npt.NDArray[np.intp],
) -> int:
    """:func:`_at_least` for few keys: key ``i`` counts every sum of the blocks from
    ``whole[i]`` on, and searches ``rest`` for ``k - c`` in the blocks ``first[i]`` up to
    ``whole[i]`` (``blocks`` and ``rest`` sorted)."""
    count = int((blocks.size - whole).sum()) * rest.size
    lengths = whole - first
    searched = int(lengths.sum())
    if searched:
        inside = np.repeat(first - (np.cumsum(lengths) - lengths), lengths) + np.arange(searched)
        targets = np.repeat(keys, lengths) - blocks[inside]
        count += searched * rest.size - int(np.searchsorted(rest, targets).sum())
    return count


def _pairs_at_least(merged: Sums, key_count: int) -> int:
    """``#{(k, v) : v >= k}`` over the keys ``merged[:key_count]`` and the values after
    them, by one sort of their order codes, tagged (``merged`` is reused).

    Each number becomes an int64 code in its order (:func:`_order_codes`), doubled, plus 1
    for a value: a key then sorts before a value equal to it and after a smaller one, so the
    keys before the ``j``-th value in the sorted whole are exactly the keys at most it.
    """
    value_count = merged.size - key_count
    if not key_count or not value_count:
        return 0
    codes = _order_codes(merged)
    codes <<= 1
    codes[key_count:] |= 1
    codes.sort()
    codes &= 1
    positions = np.flatnonzero(codes.astype(bool))  # value j has positions[j] - j keys before
    return int(positions.sum()) - value_count * (value_count - 1) // 2


_SIGN_FREE = np.int64(2**63 - 1)


def _order_codes(numbers: Sums) -> npt.NDArray[np.int64]:
    """int64 codes of ``numbers`` (all below 2 in size if floats, ``2**62`` if integers)
    with ``x < y`` exactly when ``code(x) < code(y)``, all below ``2**62`` in size; floats
    are coded in place.

    Integers are their own codes. A float's IEEE bits, read as an integer, order like the
    floats once a negative one's bits (all but the sign) are flipped; below 2 in size the
    bits stay below ``2**62``. No sum is ``-0.0`` (a sum of non-zero magnitudes that
    cancels is ``+0.0``), which would code below ``0.0``.
    """
    if numbers.dtype.kind in "iu":
        return numbers.astype(np.int64, copy=False)
    bits = numbers.view(np.int64)
    bits ^= (bits >> 63) & _SIGN_FREE
    return bits


def _elements(values: Vector, name: str) -> list:
    """The values of a 1-D sequence or array, as Python objects."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {values.shape}")
        return values.tolist()
    return list(values)


def _rational(value: object, name: str, index: int) -> Fraction | None:
    """``value`` as an exact rational: ints, ``Fraction`` and ``Decimal`` as given; a float
    when it is the nearest float to a fraction with denominator at most
    :data:`MAX_DETECTED_DENOMINATOR` (``0.75``, ``10 / 3``), else ``None`` (a real value)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool | int | np.integer):
        return Fraction(int(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{name}[{index}] must be finite, got {value}")
        return Fraction(value)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}[{index}] is not a number: {value!r}") from error
    if not math.isfinite(number):
        raise ValueError(f"{name} must contain only finite values ({name}[{index}] = {number})")
    if number.is_integer():
        return Fraction(int(number))
    guess = Fraction(number).limit_denominator(MAX_DETECTED_DENOMINATOR)
    return guess if float(guess) == number else None


def as_rational(value: float | int | Fraction | Decimal) -> Fraction | None:
    """``value`` as an exact rational, the way :func:`sign_flip_pvalue` reads it: ints,
    ``Fraction`` and ``Decimal`` as given, a float when it is the nearest float to a
    fraction with denominator at most :data:`MAX_DETECTED_DENOMINATOR`, else ``None``.

    Raises:
        ValueError: On a non-finite value or one that is not a number.
    """
    return _rational(value, "value", 0)


def _integer_arrays(
    differences: Vector, weights: Vector | None
) -> tuple[npt.NDArray[np.int64], int] | None:
    """Fast path: integer-valued numeric inputs (0/1 outcomes) as int64 terms, vectorised."""
    arrays = []
    for values in (differences, weights):
        if values is None:
            continue
        array = np.asarray(values)
        if array.dtype.kind not in "biuf" or array.ndim != 1:
            return None
        if array.dtype.kind == "f" and not (
            np.all(np.isfinite(array)) and np.all(array == np.trunc(array))
        ):
            return None
        if array.size and float(np.max(np.abs(array))) >= 2.0**31:
            return None  # products could overflow int64
        arrays.append(array.astype(np.int64))
    if len(arrays) == 2 and arrays[0].shape != arrays[1].shape:
        raise ValueError(
            f"weights has length {arrays[1].size} but differences has length {arrays[0].size}"
        )
    terms = arrays[0] * arrays[1] if len(arrays) == 2 else arrays[0]
    terms = terms[terms != 0]
    return terms, sum(terms.tolist())


def lattice_terms(
    differences: Vector, weights: Vector | None = None
) -> tuple[list[int], int] | None:
    """The non-zero terms ``a_t * d_t`` as integers on their lattice, or ``None``.

    Every term is a rational; multiplied by the least common denominator ``L`` and divided
    by the greatest common divisor of the results, the terms become coprime integers ``k_t``
    whose signed sums order exactly as the real sums do (one scale for all). Floats are
    read as rationals only when each is the nearest float to a fraction with a small
    denominator and ``L`` stays at most :data:`MAX_DETECTED_DENOMINATOR`; exact inputs
    (``int``, ``Fraction``, ``Decimal``) are taken as they are, whatever ``L``.

    Args:
        differences: The paired differences ``d_t``.
        weights: Optional weights ``a_t``, same length.

    Returns:
        ``(magnitudes |k_t|, K = sum k_t)``, or ``None`` when some value is real-valued.

    Raises:
        ValueError: On mismatched lengths or non-finite values.
    """
    fast = _integer_arrays(differences, weights)
    if fast is not None:
        integer_terms, total = fast
        magnitudes = np.abs(integer_terms)
        divisor = int(np.gcd.reduce(magnitudes)) if magnitudes.size else 1
        return (magnitudes // divisor).tolist(), total // divisor
    d = _elements(differences, "differences")
    a = _elements(weights, "weights") if weights is not None else None
    if a is not None and len(a) != len(d):
        raise ValueError(f"weights has length {len(a)} but differences has length {len(d)}")
    exact_input = True
    terms: list[Fraction] = []
    for index, value in enumerate(d):
        rd = _rational(value, "differences", index)
        ra = Fraction(1) if a is None else _rational(a[index], "weights", index)
        if rd is None or ra is None:
            # Still check the rest is finite, so a NaN is reported whichever path runs.
            _as_vector(d, "differences")
            if a is not None:
                _as_vector(a, "weights")
            return None
        exact_input = exact_input and not isinstance(value, float | np.floating)
        exact_input = exact_input and (a is None or not isinstance(a[index], float | np.floating))
        if rd and ra:
            terms.append(rd * ra)
    if not terms:
        return [], 0
    common = math.lcm(*(t.denominator for t in terms))
    if not exact_input and common > MAX_DETECTED_DENOMINATOR:
        return None
    scaled = [t.numerator * (common // t.denominator) for t in terms]
    divisor = math.gcd(*scaled)
    return [abs(k) // divisor for k in scaled], sum(scaled) // divisor


def _coefficient_bits(n: int) -> int:
    """Bits per packed coefficient: a count of subsets is below ``2**n``."""
    return 32 * ((n + 32) // 32)


def countable(magnitudes: Sequence[int]) -> bool:
    """Whether :func:`extreme_count` is cheap enough for these integer magnitudes."""
    n = len(magnitudes)
    if n == 0 or len(set(magnitudes)) == 1:
        return True
    bits = _coefficient_bits(n) * (sum(magnitudes) + 1)
    if bits > COUNT_MAX_BITS:
        return False
    budget = COUNT_BUDGET_BITS if n <= MAX_EXACT_TERMS else COUNT_LARGE_BUDGET_BITS
    return n * bits <= budget


def extreme_count(magnitudes: Sequence[int], statistic: int) -> int:
    """Exact number of sign vectors ``eps`` with ``|sum eps_t k_t| >= |K|`` (of ``2**n``).

    With ``S = sum |k_t|`` and ``s`` the sum of the terms given a plus sign, a sign vector's
    sum is ``2 s - S``, so ``|2 s - S| >= |K|`` is ``s <= (S - |K|) / 2`` or its mirror
    ``s >= (S + |K|) / 2`` (``S - K`` is even, and the two tails are disjoint when
    ``K != 0``). The number of subsets with each ``s`` is the coefficient of ``z**s`` in
    ``prod_t (1 + z**|k_t|)``, a convolution over integer sums computed exactly with one
    Python integer holding every coefficient in its own ``b``-bit field (``b > n``, so no
    field overflows): multiplying by ``1 + z**k`` is one shift and one addition. Equal
    magnitudes (0/1 outcomes) need no polynomial: the tail is a sum of binomials.

    Args:
        magnitudes: Positive integers ``|k_t|``.
        statistic: ``K = sum k_t`` (signed).

    Returns:
        The count; the two-sided p-value is ``count / 2**n``.
    """
    n = len(magnitudes)
    target = abs(statistic)
    if n == 0 or target == 0:
        return 2**n
    total = sum(magnitudes)
    low = (total - target) // 2  # subsets with s <= low form one tail
    if len(set(magnitudes)) == 1:
        return 2 * _binomial_tails(n, [low // magnitudes[0]])[0]
    bits = _coefficient_bits(n)
    packed = 1
    for magnitude in sorted(magnitudes):
        packed += packed << (bits * magnitude)
    low_part = packed & ((1 << (bits * (low + 1))) - 1)
    limbs = np.frombuffer(low_part.to_bytes(bits * (low + 1) // 8, "little"), dtype="<u4")
    sums = limbs.reshape(low + 1, bits // 32).sum(axis=0, dtype=np.uint64)
    tail = sum(int(value) << (32 * place) for place, value in enumerate(sums.tolist()))
    return 2 * tail


def _binomial_tails(n: int, lows: Sequence[int]) -> list[int]:
    """``sum_{j <= low} C(n, j)`` for each of ``lows`` (ascending), exactly, in one pass."""
    tails = []
    term, tail, j = 1, 1, 0
    for low in lows:
        while j < low:
            j += 1
            term = term * (n - j + 1) // j
            tail += term
        tails.append(tail)
    return tails


def sign_test_pvalues(wins_a: npt.ArrayLike, wins_b: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """:func:`sign_flip_pvalue` of 0/1 paired outcomes for many pairs at once, bit for bit.

    Pair ``t`` has ``wins_a[t]`` differences of +1 and ``wins_b[t]`` of -1 (the discordant
    items; the others are zero and dropped). Its terms are ``n = wins_a + wins_b`` equal
    magnitudes, so the count is a binomial tail (:func:`extreme_count`) and the p-value is
    ``min(1, 2 * sum_{j <= min(wins)} C(n, j) / 2**n)``, 1.0 when the wins are level. Each
    distinct ``(n, min(wins))`` is computed once, each ``n``'s tails in one pass.

    Raises:
        ValueError: On arrays of different shapes or a negative count.
    """
    a, b = np.asarray(wins_a, dtype=np.int64), np.asarray(wins_b, dtype=np.int64)
    if a.shape != b.shape:
        raise ValueError(f"wins_a has shape {a.shape} but wins_b has shape {b.shape}")
    if a.size and min(int(a.min()), int(b.min())) < 0:
        raise ValueError("win counts must be non-negative")
    pvalues = np.ones(a.shape, dtype=np.float64)
    tested = a != b
    if not tested.any():
        return pvalues
    n, low = (a + b)[tested], np.minimum(a, b)[tested]
    # One code per (n, low), ordered by n then low (low < n).
    codes, inverse = np.unique(n * (int(n.max()) + 1) + low, return_inverse=True)
    sizes, lows = np.divmod(codes, int(n.max()) + 1)
    found = np.empty(codes.size, dtype=np.float64)
    cuts = np.flatnonzero(np.diff(sizes)) + 1
    for columns in np.split(np.arange(codes.size), cuts):
        size = int(sizes[columns[0]])
        tails = _binomial_tails(size, lows[columns].tolist())
        found[columns] = [min(1.0, 2 * tail / 2**size) for tail in tails]
    pvalues[tested] = found[inverse.reshape(-1)]
    return pvalues


def sign_flip_pvalue(
    differences: Vector,
    weights: Vector | None = None,
    *,
    method: Method = "auto",
) -> float:
    """Exact two-sided paired sign-flip (randomisation) test.

    The terms are ``x_t = a_t * d_t`` (weights ``a_t`` default to 1) and the statistic is
    ``D = sum_t x_t``. Under the null hypothesis each difference is symmetric about zero, so
    every sign vector ``eps`` in ``{-1, +1}^n`` is equally likely and::

        p = #{eps : |sum_t eps_t x_t| >= |D|} / 2**n

    The observed assignment (and its mirror image) is always counted, so ``p >= 2 / 2**n``.
    Terms with ``x_t == 0`` (a zero difference or a zero weight) are dropped; this never
    changes ``p`` because such a term doubles numerator and denominator alike. With no
    non-zero terms the result is 1.0. Negative weights are allowed (they flip the sign of a
    term). Every one of the ``2**n`` sign vectors is counted; there is no sampling and no
    normal approximation. Two exact methods:

    * Lattice (any ``n``): when every term is rational on a common lattice (0/1 outcomes;
      means of graded runs; category weights over task counts), see :func:`lattice_terms`,
      the terms are integers ``k_t`` and :func:`extreme_count` counts the sign vectors by
      a convolution over integer sums. Ties are exact; no tolerance is involved. Chosen
      when it is cheap (:func:`countable`); otherwise, at ``n <= 44``, meet in the middle
      runs on the same integers (exact too). ``Fraction`` and ``Decimal`` inputs are always
      read exactly; pass scores in that form to avoid depending on float detection.
    * Real values (``n <= 44``), meet in the middle. The terms, largest first, are split
      into a high and a low half; each half's ``2**k`` signed sums are a symmetric multiset,
      so only the sign vectors with ``S >= thr`` are counted and the count doubled. A high
      sum ``h`` needs the number of low sums ``l >= thr - h``. Each half is built in blocks
      (its larger terms) plus the rest, and a block whose sums all lie where every low sum
      counts, or none does, is counted without being built (with a margin of
      ``1e-10 * sum |x_t|``, far above rounding, so that no sum that could reach the
      threshold is decided unbuilt); far from the threshold (small ``p``) almost nothing is
      built. The remaining keys ``thr - h`` and low sums are merged in one numpy sort of
      their order-preserving int64 codes, tagged so that a key sorts before an equal low
      sum (few keys are searched one by one instead). Work is ``O(2**(n/2) * n)`` at
      worst; memory about ``2**(n/2)`` int64 per half.
      Float sums are rounded, so they are compared as ``|S| >= |D| - 1e-9 * sum_t |x_t|``
      (:data:`TIE_RELATIVE_TOLERANCE`): statistics within that relative tolerance count
      as ties; if ``|D|`` itself is within it of zero, ``p`` is 1.0.

    Args:
        differences: Per-item paired differences ``d_t`` (sequence or numpy array of
            floats, ints, ``Fraction`` or ``Decimal``).
        weights: Optional per-item weights ``a_t``, same length as ``differences``.
        method: ``"auto"``; ``"count"`` to require the lattice count; ``"meet_in_the_middle"``
            to run the real-valued method whatever the inputs (for comparisons).

    Returns:
        The exact two-sided p-value in ``(0, 1]``.

    Raises:
        ValueError: If inputs are not finite 1-D vectors of equal length; if the terms are
            real-valued (not on a lattice) and more than :data:`MAX_EXACT_TERMS` are
            non-zero; or if they are on a lattice too fine to count with more than that
            many terms.
    """
    if method not in ("auto", "count", "meet_in_the_middle"):
        raise ValueError(f"unknown method {method!r}")
    if method != "meet_in_the_middle":
        lattice = lattice_terms(differences, weights)
        if lattice is not None:
            magnitudes, statistic = lattice
            n = len(magnitudes)
            if n == 0 or statistic == 0:
                return 1.0
            packed_bits = _coefficient_bits(n) * (sum(magnitudes) + 1)
            if countable(magnitudes) or (method == "count" and packed_bits <= COUNT_MAX_BITS):
                return min(1.0, extreme_count(magnitudes, statistic) / 2**n)
            if method != "count" and n <= MAX_EXACT_TERMS and sum(magnitudes) < 2**61:
                array = np.array(magnitudes, dtype=np.int64)
                return min(1.0, _meet_in_the_middle(array, abs(statistic), 0) / 2**n)
            beyond = "" if method == "count" else f" (and more than {MAX_EXACT_TERMS}, or sums "
            beyond += "" if method == "count" else "beyond int64, for meet in the middle)"
            raise ValueError(
                f"{n} non-zero terms lie on a lattice, but their integer sums span "
                f"{sum(magnitudes):,} steps: too fine to count{beyond}"
            )
        if method == "count":
            raise ValueError(
                "the terms are not on a lattice (pass Fraction or Decimal values, or floats "
                f"that are fractions with denominators up to {MAX_DETECTED_DENOMINATOR:,})"
            )
    return _real_pvalue(differences, weights)


def _real_pvalue(differences: Vector, weights: Vector | None) -> float:
    """Meet in the middle on float terms, with the documented tie tolerance."""
    d = _as_vector(_float_elements(differences), "differences")
    if weights is None:
        a = np.ones_like(d)
    else:
        a = _as_vector(_float_elements(weights), "weights")
        if a.shape != d.shape:
            raise ValueError(f"weights has length {a.size} but differences has length {d.size}")
    x = a * d
    x = x[x != 0.0]
    n = int(x.size)
    if n == 0:
        return 1.0
    if n > MAX_EXACT_TERMS:
        raise ValueError(
            f"{n} non-zero terms are real-valued (not on a lattice of fractions with "
            f"denominators up to {MAX_DETECTED_DENOMINATOR:,}); the exact test on real values "
            f"supports at most {MAX_EXACT_TERMS} non-zero terms"
        )
    magnitudes = np.abs(x)
    scale = math.fsum(magnitudes.tolist())
    threshold = abs(math.fsum(x.tolist())) - TIE_RELATIVE_TOLERANCE * scale
    if threshold <= 0.0:
        return 1.0
    # A total of 1 or more is scaled below 1 by a power of two, sums, threshold and margin
    # alike: exact, unless a term is below 2**-1022 of the total (then it is a rounding).
    unit = math.ldexp(1.0, -max(0, math.frexp(scale)[1]))
    count = _meet_in_the_middle(magnitudes * unit, threshold * unit, _PRUNE_MARGIN * scale * unit)
    return min(1.0, count / 2.0**n)  # both exact in float64


def _float_elements(values: Vector) -> Vector:
    """Exact inputs (``Fraction``, ``Decimal``) as floats for the real-valued method."""
    if isinstance(values, np.ndarray) and values.dtype.kind != "O":
        return values
    return [float(v) for v in _elements(values, "values")]


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
    if isinstance(pvalues, np.ndarray):
        values = pvalues.astype(np.float64).reshape(-1)
    else:
        values = np.fromiter((float(p) for p in pvalues), dtype=np.float64)
    return holm_rejected(values, alpha).tolist()


def holm_rejected(pvalues: npt.NDArray[np.float64], alpha: float = 0.05) -> npt.NDArray[np.bool_]:
    """:func:`holm` on a float64 array, as a boolean array (the one implementation).

    The p-values are ranked by a stable sort (equal ones keep their input order) and
    compared with ``alpha / (m - k)``; everything before the first failure is rejected.

    Raises:
        ValueError: As :func:`holm`.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    values = np.asarray(pvalues, dtype=np.float64)
    invalid = ~((values >= 0.0) & (values <= 1.0))
    if invalid.any():
        raise ValueError(f"p-values must be in [0, 1], got {float(values[invalid][0])}")
    m = values.size
    order = np.argsort(values, kind="stable")
    passed = values[order] <= alpha / (m - np.arange(m))
    stop = m if passed.all() else int(np.argmin(passed))
    rejected = np.zeros(m, dtype=np.bool_)
    rejected[order[:stop]] = True
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
    index = {name: position for position, name in enumerate(names)}
    winners = np.array([index[w] for w, _ in pairs], dtype=np.int64)
    losers = np.array([index[loser] for _, loser in pairs], dtype=np.int64)
    best, worst = rank_bounds(len(names), winners, losers)
    return {
        name: RankRange(rank_best=b, rank_worst=w, tied=b != w)
        for name, b, w in zip(names, best.tolist(), worst.tolist(), strict=True)
    }


def rank_bounds(
    count: int, winners: npt.NDArray[np.integer], losers: npt.NDArray[np.integer]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Best and worst rank of each of ``count`` models (indices ``0..count-1``) when model
    ``winners[t]`` is significantly better than ``losers[t]`` (distinct pairs, as
    :func:`rank_ranges` checks): ``1 +`` how many beat it, ``count -`` how many it beats."""
    beaten_by = np.bincount(losers, minlength=count)
    beats = np.bincount(winners, minlength=count)
    return 1 + beaten_by, count - beats


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
    scores: Mapping[str, Mapping[str, float | Fraction]],
    task_weights: Mapping[str, float | Fraction],
    alpha: float = 0.05,
) -> list[PairResult]:
    """Compare every pair of models on their common tasks, Holm-corrected over all pairs.

    For each unordered pair ``(A, B)`` (in the order models appear in ``scores``), over the
    tasks scored for both: ``d_t = score_A - score_B``, ``D = sum_t a_t d_t`` with weights
    ``a_t = task_weights[t]``, and ``p = sign_flip_pvalue(d, a)``; scores and weights keep
    their type, so exact ``Fraction`` inputs give an exact test. Holm's procedure at
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
        diffs = [scores[model_a][t] - scores[model_b][t] for t in common]
        weights = [task_weights[t] for t in common]
        statistic = weighted_sum(diffs, weights)
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


def weighted_sum(differences: Sequence, weights: Sequence) -> float:
    """``D = sum_t a_t d_t`` as a float: computed exactly for exact inputs (``Fraction``,
    ``Decimal``, ``int``), so its sign is right even when it is tiny; ``fsum`` for floats."""
    pairs = list(zip(weights, differences, strict=True))
    if all(isinstance(w, int) and isinstance(d, int) for w, d in pairs):  # 0/1 outcomes
        return float(sum(w * d for w, d in pairs))
    if all(isinstance(v, Fraction | Decimal | int) for pair in pairs for v in pair):
        return float(sum((Fraction(w) * Fraction(d) for w, d in pairs), Fraction(0)))
    return math.fsum(float(w) * float(d) for w, d in pairs)


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
