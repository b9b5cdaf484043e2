"""HTTP with bounded retries: backoff on 429 and 5xx, honouring Retry-After.

The decision of whether and how long to wait lives in `RetryPolicy.delay`, shared by the
synchronous `get_with_retries` (source fetches) and the asynchronous model-provider client
(`bench_pipeline.providers.openai_compatible`), so both retry the same way.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx


class FetchError(RuntimeError):
    """The source could not be fetched (HTTP failure after retries, timeout, missing folder)."""


class PayloadTooLarge(FetchError):
    """More bytes than the source's cap: reading stopped there (never retried). `what`: what
    was being read."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(message)
        self.what = what or message


def read_bounded(chunks: Iterable[bytes], limit: int, what: str) -> bytes:
    """The chunks joined, read only while they stay within `limit` bytes: one past it raises
    `PayloadTooLarge`, so at most one chunk more than the cap is ever held."""
    parts, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"{what}: read past {limit:,} bytes, the source's cap", what)
        parts.append(chunk)
    return b"".join(parts)


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


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to retry and how long to wait between attempts.

    Attributes:
        max_retries: Retries after the first attempt (so at most `max_retries + 1` attempts).
        backoff_base: Seconds of the first backoff ceiling; it doubles every attempt.
        max_wait: Cap on any single wait, the server's Retry-After included.
        retryable: HTTP statuses worth another attempt.
    """

    max_retries: int = 4
    backoff_base: float = 0.5
    max_wait: float = 60.0
    retryable: frozenset[int] = RETRYABLE

    def delay(
        self, attempt: int, *, status: int | None = None, retry_after: str | None = None
    ) -> float | None:
        """Seconds to wait after failed attempt `attempt` (0-based), or None to stop.

        Args:
            attempt: The attempt that just failed, counting from 0.
            status: Its HTTP status, or None for a transport error (timeout, refused
                connection, broken read), which is always worth retrying.
            retry_after: The response's Retry-After header, if any; honoured (capped at
                `max_wait`) instead of the jittered backoff.

        Returns:
            None when the status is not retryable or the retries are spent; otherwise the
            wait before the next attempt.
        """
        if status is not None and status not in self.retryable:
            return None
        if attempt >= self.max_retries:
            return None
        told = retry_after_seconds(retry_after) if status is not None else None
        wait = (
            told if told is not None else backoff_seconds(attempt, self.backoff_base, self.max_wait)
        )
        return min(wait, self.max_wait)


def get_with_retries(
    client: httpx.Client,
    url: str,
    *,
    max_retries: int = 4,
    backoff_base: float = 0.5,
    max_wait: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
    max_bytes: int | None = None,
) -> httpx.Response:
    """GET `url`; retry transport errors, 429 and 5xx; raise FetchError once retries run out.

    With `max_bytes` the body is streamed and read only up to that many bytes (as unpacked,
    so a compressed bomb stops too): past it, or when the declared length is past it,
    `PayloadTooLarge` is raised at once; the response returned then holds only the body."""
    policy = RetryPolicy(max_retries=max_retries, backoff_base=backoff_base, max_wait=max_wait)
    attempt = 0
    while True:
        try:
            response = _get(client, url, max_bytes)
        except httpx.TransportError as error:  # timeouts, refused connections, broken reads
            last_problem = f"{type(error).__name__}: {error}"
            wait = policy.delay(attempt)
        else:
            if response.status_code < 400:
                return response
            last_problem = f"HTTP {response.status_code}"
            wait = policy.delay(
                attempt,
                status=response.status_code,
                retry_after=response.headers.get("Retry-After"),
            )
        if wait is None:
            break
        sleep(wait)
        attempt += 1
    raise FetchError(f"GET {url}: {last_problem} after {attempt + 1} attempt(s)")


def _get(client: httpx.Client, url: str, max_bytes: int | None) -> httpx.Response:
    """One GET; with `max_bytes`, the body read with `read_bounded` (an error's body unread)."""
    if max_bytes is None:
        return client.get(url)
    with client.stream("GET", url) as response:
        if response.status_code >= 400:
            return response  # its status and headers decide; its body is not needed
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            what = f"GET {url} (declares {int(declared):,} bytes, left unread)"
            raise PayloadTooLarge(f"{what}: past the source's cap of {max_bytes:,}", what)
        body = read_bounded(response.iter_bytes(), max_bytes, f"GET {url}")
        return httpx.Response(response.status_code, content=body, request=response.request)
