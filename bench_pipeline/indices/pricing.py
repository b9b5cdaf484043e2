"""Model pricing in USD per million tokens, kept exact with :class:`decimal.Decimal`.

Money never passes through ``float`` here: rates are parsed from strings,
scaled by powers of ten and combined with exact decimal arithmetic, and the
functions reject ``float`` arguments outright.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Final

import polars as pl

from bench_pipeline.core.money import exact, tidy

INPUT_WEIGHT = 3
"""Weight of the input rate in the blended price (3 input : 1 output)."""

OUTPUT_WEIGHT = 1
"""Weight of the output rate in the blended price."""

DEFAULT_REL_TOL = Decimal("0.01")
"""Default relative tolerance (1%) when cross-checking two price sources."""


def _require_decimal(name: str, value: object) -> None:
    """Reject anything that is not a finite, non-negative Decimal.

    Args:
        name: Argument name for the error message.
        value: The argument.

    Raises:
        TypeError: If ``value`` is not a Decimal (floats included).
        ValueError: If ``value`` is NaN, infinite or negative.
    """
    if not isinstance(value, Decimal):
        raise TypeError(f"{name} must be a Decimal, got {type(value).__name__}")
    if not value.is_finite() or value < 0:
        raise ValueError(f"{name} must be a finite, non-negative Decimal, got {value}")


def blended_price(input_per_m: Decimal | None, output_per_m: Decimal | None) -> Decimal | None:
    """Blend input and output rates as ``(3 × input + output) / 4``.

    The 3:1 weighting reflects a typical workload that reads three tokens for
    every one it writes. Division by 4 of a finite decimal terminates, so the
    result is exact; it is returned without trailing zeros.

    Args:
        input_per_m: Input price in USD per million tokens, or None.
        output_per_m: Output price in USD per million tokens, or None.

    Returns:
        The blended price per million tokens, or None when either rate is
        missing.

    Raises:
        TypeError: If a rate is neither a Decimal nor None.
        ValueError: If a rate is negative, NaN or infinite.
    """
    if input_per_m is None or output_per_m is None:
        return None
    _require_decimal("input_per_m", input_per_m)
    _require_decimal("output_per_m", output_per_m)
    with exact():
        total = INPUT_WEIGHT * input_per_m + OUTPUT_WEIGHT * output_per_m
        blended = total / (INPUT_WEIGHT + OUTPUT_WEIGHT)
    return tidy(blended)


def blended_prices(inputs: pl.Series, outputs: pl.Series, dtype: pl.Decimal) -> pl.Series:
    """`blended_price` of each pair of rates, as a column of `dtype`: the values a column of
    its results holds.

    The blend is computed in whole units of `dtype`'s scale (exact integers), then rounded
    to a unit half to even, as polars rounds a finer decimal into `dtype` (a blend can have
    two more decimals than its rates). Rates that are not decimals of that scale, and any
    negative rate (which raises `blended_price`'s own error), go through `blended_price`.

    Args:
        inputs: Input prices in USD per million tokens (nulls allowed).
        outputs: Output prices, row for row.
        dtype: The decimal type of the result.

    Returns:
        The blended prices, null where either rate is.
    """
    scale = dtype.scale or 0
    decimals = all(
        isinstance(d, pl.Decimal) and d.scale == scale for d in (inputs.dtype, outputs.dtype)
    )
    if not decimals or (inputs < 0).any() or (outputs < 0).any():
        blended = [
            None if i is None or o is None else blended_price(i, o)
            for i, o in zip(inputs.to_list(), outputs.to_list(), strict=True)
        ]
        return pl.Series(inputs.name, blended, dtype=dtype, strict=False)
    i, o = ((pl.col(c) * 10**scale).cast(pl.Int128) for c in ("i", "o"))
    total, weights = i * INPUT_WEIGHT + o * OUTPUT_WEIGHT, INPUT_WEIGHT + OUTPUT_WEIGHT
    whole, left = total // weights, 2 * (total % weights)
    units = (
        pl.when(left < weights).then(whole)
        .when(left > weights).then(whole + 1)
        .otherwise(whole + whole % 2)
    )  # fmt: skip
    unit = pl.lit(Decimal(1).scaleb(-scale), dtype=pl.Decimal(38, scale))
    return (
        pl.DataFrame({"i": inputs, "o": outputs})
        .select((units.cast(pl.Decimal(38, 0)) * unit).cast(dtype).alias(inputs.name))
        .to_series()
    )


def prices_disagree(
    a: Decimal | None,
    b: Decimal | None,
    rel_tol: Decimal = DEFAULT_REL_TOL,
) -> bool:
    """Tell whether two prices for the same model and rate differ materially.

    Used to cross-check OpenRouter against models.dev. The comparison is
    symmetric: the prices disagree when ``|a - b| > rel_tol × max(|a|, |b|)``.
    A difference exactly at the tolerance is agreement; two zeros agree; zero
    against any non-zero price disagrees.

    Args:
        a: One price, or None when the source has none.
        b: The other price, or None.
        rel_tol: Relative tolerance as a Decimal fraction (default 1%).

    Returns:
        True when both prices are present and differ beyond the tolerance;
        False otherwise, including when either is None.

    Raises:
        TypeError: If a price or ``rel_tol`` is not a Decimal (None is allowed
            for the prices).
        ValueError: If a price is negative, NaN or infinite, or ``rel_tol`` is
            negative, NaN or infinite.
    """
    _require_decimal("rel_tol", rel_tol)
    if a is None or b is None:
        return False
    _require_decimal("a", a)
    _require_decimal("b", b)
    with exact():
        return abs(a - b) > rel_tol * max(a, b)


def prices_disagree_series(
    a: pl.Series, b: pl.Series, rel_tol: Decimal = DEFAULT_REL_TOL
) -> pl.Series:
    """`prices_disagree` of each pair of prices, as a boolean column (never null).

    Decimal columns are compared in whole units of their finer scale (exact integers):
    ``|a - b| × q > p × max(a, b)`` with ``rel_tol = p / q``. Columns of any other type,
    any negative price (which raises `prices_disagree`'s own error) and figures too wide
    for 128-bit integers go through `prices_disagree`.

    Args:
        a: One price per row (nulls allowed).
        b: The other price, row for row.
        rel_tol: Relative tolerance as a Decimal fraction (default 1%).

    Returns:
        True where both prices are present and differ beyond the tolerance.

    Raises:
        TypeError: As `prices_disagree`.
        ValueError: As `prices_disagree`.
    """
    _require_decimal("rel_tol", rel_tol)
    p, q = rel_tol.as_integer_ratio()
    scale = max(_scale(a), _scale(b))
    digits = max(_whole_digits(s) + scale for s in (a, b)) + len(str(max(p, q)))
    if digits > 37 or (a < 0).any() or (b < 0).any():  # too wide for Int128, or an error
        flags = [
            prices_disagree(x, y, rel_tol) for x, y in zip(a.to_list(), b.to_list(), strict=True)
        ]
        return pl.Series(a.name, flags, dtype=pl.Boolean)
    x, y = (
        (pl.col(c) * 10 ** _scale(s)).cast(pl.Int128) * 10 ** (scale - _scale(s))
        for c, s in (("a", a), ("b", b))
    )
    apart = (x - y).abs() * q > pl.max_horizontal(x, y) * p
    return pl.DataFrame({"a": a, "b": b}).select(apart.fill_null(False).alias(a.name)).to_series()


def _scale(column: pl.Series) -> int:
    """The scale of a decimal column (0 for any other column)."""
    dtype = column.dtype
    return (dtype.scale or 0) if isinstance(dtype, pl.Decimal) else 0


def _whole_digits(column: pl.Series) -> int:
    """Digits before the point of a decimal column; past any Int128 for any other column."""
    dtype = column.dtype
    if not isinstance(dtype, pl.Decimal):
        return 39
    return (dtype.precision or 38) - (dtype.scale or 0)


TRIAL: Final = "trial"
PER_UNIT: Final = "per_unit"
VARIABLE: Final = "variable"
RATE_FLAGS: Final = (TRIAL, PER_UNIT, VARIABLE)
"""Why a listed rate is not a price per token to rank by (`rate_flag`)."""

RATE_FLAG_TEXT: Mapping[str, str] = MappingProxyType(
    {
        TRIAL: "listed at $0 as a free trial, not a price",
        PER_UNIT: "listed at $0 per token; it is priced per clip or per request",
        VARIABLE: "no fixed rate: the price depends on the request or on the model routed to",
    }
)
"""What each flag tells a reader."""

DEFAULT_RATE_FLAGS_PATH: Final = Path(__file__).resolve().parents[2] / "sources" / "rate_flags.toml"
"""The reviewed table of providers whose $0 listings are trials."""

NON_TOKEN_OUTPUTS: Final = frozenset({"audio", "image", "video"})
"""Output modalities a listing sells by the unit (a clip, an image), not by the token."""


def load_trial_providers(
    path: str | os.PathLike[str] = DEFAULT_RATE_FLAGS_PATH,
) -> Mapping[str, str]:
    """The providers whose $0 listings are free trials, each with the reason (from
    `sources/rate_flags.toml`: `[trial_providers.<models.dev provider id>]` with `why` and
    `evidence`).

    Raises:
        FileNotFoundError: If the file does not exist.
        tomllib.TOMLDecodeError: If it is not valid TOML.
        ValueError: Naming the file and entry, if an entry lacks `why` or `evidence`, or
            anything but `[trial_providers]` is at the top level.
    """
    source = os.fspath(path)
    with open(path, "rb") as handle:
        document = tomllib.load(handle)
    unexpected = sorted(k for k in document if k != "trial_providers")
    if unexpected:
        raise ValueError(f"{source}: unexpected top-level key(s) {unexpected}")
    raw = document.get("trial_providers", {})
    if not isinstance(raw, dict):
        raise ValueError(f"{source}: [trial_providers] must be a table")
    found = {}
    for provider, entry in raw.items():
        fields = entry if isinstance(entry, dict) else {}
        blank = [f for f in ("why", "evidence") if not str(fields.get(f) or "").strip()]
        if blank:
            raise ValueError(f"{source}: [trial_providers.{provider}] has no {' or '.join(blank)}")
        found[provider.casefold()] = str(fields["why"])
    return MappingProxyType(found)


def rate_flag(
    prompt: Decimal | None,
    completion: Decimal | None,
    *,
    variable: bool | None,
    provider: str | None,
    output_modalities: str | None,
    tokenizer: str | None,
    trial_providers: Mapping[str, str],
    sold_per_unit: bool = False,
) -> str | None:
    """Why a listed rate must not be ranked as a price per token, or None when it may.

    A variable price (OpenRouter's -1) is ``variable``. A rate of $0 for both input and
    output is a trial when the listing's provider is a reviewed trial provider (NVIDIA's
    free API catalogue), ``per_unit`` when the listing outputs audio, images or video
    (priced per clip or request: Lyria), and ``variable`` for a router (tokenizer
    "Router": it bills whatever model it picks). Any other $0 is a free offer and stands.

    Args:
        prompt: The listed input rate, or None.
        completion: The listed output rate, or None.
        variable: The listing says its price varies.
        provider: The listing's provider (`openrouter` or a models.dev provider id).
        output_modalities: The listing's output modalities, comma-separated, if known.
        tokenizer: OpenRouter's tokenizer name, if known.
        trial_providers: From :func:`load_trial_providers`.
        sold_per_unit: The model's own listing is flagged ``per_unit`` (for a host's listing,
            which names no modalities).

    Returns:
        ``"trial"``, ``"per_unit"``, ``"variable"`` or None.
    """
    if variable:
        return VARIABLE
    if prompt is None or completion is None or prompt != 0 or completion != 0:
        return None
    if provider is not None and provider.casefold() in trial_providers:
        return TRIAL
    outputs = {m.strip().casefold() for m in (output_modalities or "").split(",")}
    if sold_per_unit or outputs & NON_TOKEN_OUTPUTS:
        return PER_UNIT
    if (tokenizer or "").strip().casefold() == "router":
        return VARIABLE
    return None


__all__ = [
    "DEFAULT_RATE_FLAGS_PATH",
    "DEFAULT_REL_TOL",
    "INPUT_WEIGHT",
    "NON_TOKEN_OUTPUTS",
    "OUTPUT_WEIGHT",
    "PER_UNIT",
    "RATE_FLAGS",
    "RATE_FLAG_TEXT",
    "TRIAL",
    "VARIABLE",
    "blended_price",
    "blended_prices",
    "load_trial_providers",
    "prices_disagree",
    "prices_disagree_series",
    "rate_flag",
]
