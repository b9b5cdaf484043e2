"""HTTP GET with bounded retries: backoff on 429 and 5xx, honouring Retry-After."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from bench_pipeline.ingest.payload import FetchError

RETRYABLE = frozenset({429, 500, 502, 503, 504})


def retry_after_seconds(header: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not header:
        return None
    header = header.strip()
    if header.isdigit():
        return float(header)
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with full jitter, so retrying clients do not move in step."""
    return random.uniform(0, min(cap, base * 2**attempt))


def get_with_retries(
    client: httpx.Client,
    url: str,
    *,
    max_retries: int = 4,
    backoff_base: float = 0.5,
    max_wait: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> httpx.Response:
    """GET `url`; retry transport errors, 429 and 5xx; raise FetchError once retries run out."""
    last_problem = ""
    for attempt in range(max_retries + 1):
        try:
            response = client.get(url)
        except httpx.TransportError as error:  # timeouts, refused connections, broken reads
            last_problem = f"{type(error).__name__}: {error}"
            wait = backoff_seconds(attempt, backoff_base, max_wait)
        else:
            if response.status_code < 400:
                return response
            last_problem = f"HTTP {response.status_code}"
            if response.status_code not in RETRYABLE:
                break
            told = retry_after_seconds(response.headers.get("Retry-After"))
            wait = told if told is not None else backoff_seconds(attempt, backoff_base, max_wait)
        if attempt < max_retries:
            sleep(min(wait, max_wait))
    raise FetchError(f"GET {url}: {last_problem} after {attempt + 1} attempt(s)")
