"""Exact cost of model calls from token counts and dated rates (USD per million tokens).

Money never passes through `float`: rates are `Decimal`, arithmetic runs at 60 significant
digits (far beyond any token count × rate), and `format_usd` writes a plain decimal string
(no exponent, no trailing zeros) for publishing.

How a `Usage` is priced (OpenAI-compatible conventions, which OpenRouter normalises to):

- input = `prompt_tokens − cached_tokens − cache_write_tokens` at the input rate (the prompt
  count includes the cached and cache-write tokens);
- cached input = `cached_tokens` at the cached-input rate;
- cache write = `cache_write_tokens` at the cache-write rate;
- output = `completion_tokens` at the output rate. Reasoning tokens are part of
  `completion_tokens` on these APIs (`reasoning_tokens` is a breakdown), so they are priced
  as output once, never added again.

A category with tokens but no rate makes the whole cost unknown (`None`, warning
`model_unpriced`), never a partial sum; a category without tokens needs no rate. A usage that
cannot be split (cached + cache-write above the prompt) is `usage_inconsistent`, cost None.

Long-context tier (e.g. a higher rate above 200,000 prompt tokens): it applies per request,
when the usage is one request's (`Usage.per_request`) and its prompt exceeds the threshold;
the tier's rates then price every category of that request (a category the tier leaves
unset is unpriced, not silently charged at the base rate). A total over several requests
above the threshold is priced at base rates with the warning `long_context_unpriced`: some
request might have crossed the threshold. Local models (`Rates.local`) cost exactly 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import overload

from bench_pipeline.core.money import exact, plain, tidy
from bench_pipeline.providers.base import Usage

MODEL_UNPRICED = "model_unpriced"
LONG_CONTEXT_UNPRICED = "long_context_unpriced"
USAGE_INCONSISTENT = "usage_inconsistent"

TOKENS_PER_RATE_UNIT = Decimal(1_000_000)


def _check_rate(name: str, value: object) -> None:
    if value is None:
        return
    if not isinstance(value, Decimal):
        raise TypeError(f"{name} must be a Decimal or None, got {type(value).__name__}")
    if not value.is_finite() or value < 0:
        raise ValueError(f"{name} must be a finite, non-negative Decimal, got {value}")


@dataclass(frozen=True)
class LongContextTier:
    """Rates (USD per 1M tokens) for a request whose prompt exceeds `threshold_tokens`."""

    threshold_tokens: int
    input: Decimal | None = None
    output: Decimal | None = None
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None

    def __post_init__(self) -> None:
        if isinstance(self.threshold_tokens, bool) or not isinstance(self.threshold_tokens, int):
            raise TypeError("threshold_tokens must be an int")
        if self.threshold_tokens < 0:
            raise ValueError("threshold_tokens must not be negative")
        for name in ("input", "output", "cached_input", "cache_write"):
            _check_rate(name, getattr(self, name))


@dataclass(frozen=True)
class Rates:
    """One dated price row of one model (USD per 1M tokens; None where no rate is known).

    Attributes:
        effective_date: First day these rates apply (see `rate_in_effect`).
        input: Uncached prompt tokens.
        output: Completion tokens, reasoning included.
        cached_input: Prompt tokens read from the provider's cache.
        cache_write: Prompt tokens written to the provider's cache.
        long_context: Higher rates above a prompt-size threshold, if the model has them.
        local: A model run on our own hardware: costs exactly 0, whatever the other fields.
    """

    effective_date: date
    input: Decimal | None = None
    output: Decimal | None = None
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    long_context: LongContextTier | None = None
    local: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.effective_date, datetime) or not isinstance(self.effective_date, date):
            raise TypeError("effective_date must be a date (not a datetime)")
        for name in ("input", "output", "cached_input", "cache_write"):
            _check_rate(name, getattr(self, name))

    @classmethod
    def local_model(cls, effective_date: date) -> Rates:
        """Rates of a local model: everything costs 0."""
        return cls(effective_date=effective_date, local=True)


@dataclass(frozen=True)
class CostResult:
    """A cost in USD (exact; None when it cannot be known) and the warnings it carries."""

    cost_usd: Decimal | None
    warnings: list[str] = field(default_factory=list)


def cost_of(usage: Usage, rates: Rates | None) -> CostResult:
    """The exact cost of `usage` at `rates` (see the module docstring for the rules).

    Args:
        usage: One request's token counts (`per_request=True`) or a total over requests.
        rates: The model's rates in effect on the run date (`rate_in_effect`); None when the
            model has no price row at all.

    Returns:
        The cost in USD, or None with `model_unpriced` (a needed rate is missing) or
        `usage_inconsistent`; `long_context_unpriced` when a total might include requests
        above the long-context threshold.
    """
    if rates is None:
        return CostResult(None, [MODEL_UNPRICED])
    if rates.local:
        return CostResult(Decimal(0), [])

    warnings: list[str] = []
    uncached = usage.prompt_tokens - usage.cached_tokens - usage.cache_write_tokens
    if uncached < 0:
        return CostResult(None, [USAGE_INCONSISTENT])

    input_rate, output_rate = rates.input, rates.output
    cached_rate, write_rate = rates.cached_input, rates.cache_write
    tier = rates.long_context
    if tier is not None and usage.prompt_tokens > tier.threshold_tokens:
        if usage.per_request:
            input_rate, output_rate = tier.input, tier.output
            cached_rate, write_rate = tier.cached_input, tier.cache_write
        else:
            warnings.append(LONG_CONTEXT_UNPRICED)

    parts = (
        (uncached, input_rate),
        (usage.completion_tokens, output_rate),
        (usage.cached_tokens, cached_rate),
        (usage.cache_write_tokens, write_rate),
    )
    if any(tokens > 0 and rate is None for tokens, rate in parts):
        return CostResult(None, [MODEL_UNPRICED, *warnings])
    with exact():
        total = sum(
            (Decimal(tokens) * rate for tokens, rate in parts if tokens > 0 and rate is not None),
            Decimal(0),
        )
        cost = total / TOKENS_PER_RATE_UNIT
    return CostResult(tidy(cost), warnings)


def cost_of_all(usages: Iterable[Usage], rates: Rates | None) -> CostResult:
    """The cost of several requests of one run: each priced by `cost_of`, then summed.

    The cost is None as soon as one request's is; warnings are kept once each, in the order
    first met.
    """
    warnings: list[str] = []
    total: Decimal | None = Decimal(0)
    for usage in usages:
        result = cost_of(usage, rates)
        warnings.extend(w for w in result.warnings if w not in warnings)
        if result.cost_usd is None or total is None:
            total = None
        else:
            with exact():
                total += result.cost_usd
    return CostResult(None if total is None else tidy(total), warnings)


def rate_in_effect(dated_rates: Iterable[Rates], on_date: date) -> Rates | None:
    """The rates whose effective date is the latest on or before `on_date`.

    Args:
        dated_rates: One model's price rows, in any order.
        on_date: The run date (a datetime is reduced to its own calendar date).

    Returns:
        The row in effect, or None when every row starts after `on_date` (or there is none).

    Raises:
        ValueError: Two rows start on the same date (the price in effect would be ambiguous).
    """
    day = on_date.date() if isinstance(on_date, datetime) else on_date
    best: Rates | None = None
    seen: set[date] = set()
    for rates in dated_rates:
        if rates.effective_date in seen:
            raise ValueError(f"two price rows take effect on {rates.effective_date}")
        seen.add(rates.effective_date)
        if rates.effective_date <= day and (
            best is None or rates.effective_date > best.effective_date
        ):
            best = rates
    return best


@overload
def format_usd(value: Decimal) -> str: ...
@overload
def format_usd(value: None) -> None: ...
@overload
def format_usd(value: Decimal | None) -> str | None: ...
def format_usd(value: Decimal | None) -> str | None:
    """A cost as a plain decimal string for publishing: every digit kept, no exponent, no
    trailing zeros (`Decimal("1.5E-7")` → `"0.00000015"`); None stays None (missing is null).
    """
    if value is None:
        return None
    if not isinstance(value, Decimal):
        raise TypeError(f"a cost must be a Decimal, got {type(value).__name__}")
    if not value.is_finite():
        raise ValueError(f"not a finite cost: {value}")
    return plain(value)


__all__ = [
    "LONG_CONTEXT_UNPRICED",
    "MODEL_UNPRICED",
    "USAGE_INCONSISTENT",
    "CostResult",
    "LongContextTier",
    "Rates",
    "cost_of",
    "cost_of_all",
    "format_usd",
    "rate_in_effect",
]
