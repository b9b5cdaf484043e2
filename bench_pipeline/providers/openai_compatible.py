"""An OpenAI-compatible `/chat/completions` client over `httpx.AsyncClient` (OpenRouter by default).

Retries follow `bench_pipeline.core.http.RetryPolicy`, the same decision the source fetcher uses:
transport errors, 429 and 5xx are retried with jittered exponential backoff, a Retry-After
header is honoured (capped), anything else fails at once with `ProviderError`.

Streaming (`stream=True`) sends `stream: true` with `stream_options: {include_usage: true}`
and reads the server-sent events, measuring the time to first token: from the start of the
attempt that succeeded to the first chunk carrying any text, answer or reasoning.

Usage fields parsed (everything else stays in `ChatResponse.raw`):

- `prompt_tokens` ← `prompt_tokens` (includes the cached and cache-write tokens);
- `completion_tokens` ← `completion_tokens` (includes the reasoning tokens);
- `cached_tokens` ← `prompt_tokens_details.cached_tokens` (OpenAI, OpenRouter), else
  DeepSeek's top-level `prompt_cache_hit_tokens`;
- `cache_write_tokens` ← `prompt_tokens_details.cache_write_tokens` (OpenRouter's name for
  Anthropic's `cache_creation_input_tokens`; OpenAI reports no cache writes);
- `reasoning_tokens` ← `completion_tokens_details.reasoning_tokens`.

A null or absent count is 0; a response with no `usage` object at all gets `usage=None`.
OpenRouter's billed `usage.cost` is kept in `raw` (useful to cross-check the computed cost).

The API key is sent only in the Authorization header: it is never logged, and every string
kept (the raw body, error messages, log lines) is scrubbed of it, as are any header-like keys.
A server that echoes the key back in any encoding (base64 wrapped or not, hex, percent- or
JSON-escaped, split across lines) is scrubbed too: see `providers.scrubbing`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench_pipeline.core.http import RetryPolicy
from bench_pipeline.core.text import without_lone_surrogates
from bench_pipeline.providers.base import (
    ChatRequest,
    ChatResponse,
    Provider,
    ProviderError,
    Usage,
)
from bench_pipeline.providers.keys import DEFAULT_BASE_URL
from bench_pipeline.providers.pool import ClientPool
from bench_pipeline.providers.scrubbing import holds_secret_key, scrub

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
"""Connect within 10 s; otherwise 120 s per read/write (per chunk when streaming)."""

_ERROR_SNIPPET = 300


def _count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ProviderError(f"usage count is not a non-negative number: {value!r}")
    return int(value)


def parse_usage(data: Any) -> Usage | None:
    """A `Usage` (`per_request=True`) from an OpenAI-compatible `usage` object; see the module
    docstring for the fields read. None when there is no usage object."""
    if not isinstance(data, Mapping):
        return None
    prompt_details = data.get("prompt_tokens_details") or {}
    completion_details = data.get("completion_tokens_details") or {}
    cached = prompt_details.get("cached_tokens")
    if cached is None:
        cached = data.get("prompt_cache_hit_tokens")
    return Usage(
        prompt_tokens=_count(data.get("prompt_tokens")),
        completion_tokens=_count(data.get("completion_tokens")),
        cached_tokens=_count(cached),
        cache_write_tokens=_count(prompt_details.get("cache_write_tokens")),
        reasoning_tokens=_count(completion_details.get("reasoning_tokens")),
        per_request=True,
    )


class _Retryable(Exception):
    """An attempt failed in a way `RetryPolicy` decides on (status None: like a transport error)."""

    def __init__(self, problem: str, status: int | None = None, retry_after: str | None = None):
        super().__init__(problem)
        self.problem = problem
        self.status = status
        self.retry_after = retry_after


def _error_status(error: Any) -> int | None:
    """The HTTP-like status of an in-body `error` object (OpenRouter puts one in `code`)."""
    code = error.get("code") if isinstance(error, Mapping) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _status_problem(response: httpx.Response, body: bytes) -> _Retryable:
    snippet = body[:_ERROR_SNIPPET].decode("utf-8", errors="replace")
    return _Retryable(
        f"HTTP {response.status_code}: {snippet}",
        status=response.status_code,
        retry_after=response.headers.get("Retry-After"),
    )


def _in_body_error(payload: Mapping[str, Any]) -> _Retryable:
    error = payload["error"]
    message = error.get("message") if isinstance(error, Mapping) else error
    status = _error_status(error)
    # An error object without a usable code is not something a retry will fix.
    return _Retryable(f"error in response: {message}", status=status if status else 400)


@dataclass(frozen=True)
class _Answer:
    """What one successful attempt produced, before it becomes a `ChatResponse`."""

    content: str
    finish_reason: str | None
    raw: dict[str, Any]
    ttft: float | None


class OpenAICompatibleProvider(Provider):
    """Calls `<base_url>/chat/completions` with retries, optionally streaming.

    Use it as an async context manager to share one connection pool across calls
    (`async with OpenAICompatibleProvider(key) as provider: ...`); outside one, each call
    opens and closes its own client. A client passed in is used and never closed.
    """

    name = "openai_compatible"

    def __init__(
        self,
        api_key: str | None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        stream: bool = False,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | ClientPool | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Set up the client.

        Args:
            api_key: Bearer token (the caller resolves it per endpoint: `providers.keys`);
                None sends no Authorization header.
            base_url: The API root; `/chat/completions` is appended.
            timeout: httpx timeout for every attempt (per chunk when streaming).
            retry: Retry policy (default `RetryPolicy()`: 4 retries, 0.5 s base, 60 s cap).
            stream: Use server-sent events and measure time to first token.
            headers: Extra request headers (e.g. OpenRouter's `HTTP-Referer`, `X-Title`).
            client: An `httpx.AsyncClient`, or a `ClientPool` taken in turn, to use instead of
                one of our own (which is then not closed by this provider).
            sleep: Awaitable sleep between attempts (tests may replace it).
        """
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.host = urlsplit(self.base_url).hostname or self.base_url
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.stream = stream
        self._headers = dict(headers or {})
        self._client = client
        self._owns_client = False
        self._sleep = sleep

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(base_url={self.base_url!r}, stream={self.stream})"

    async def __aenter__(self) -> OpenAICompatibleProvider:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
            self._owns_client = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client this provider opened (not one passed in)."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None
            self._owns_client = False

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        if self.stream:
            headers["Accept"] = "text/event-stream"
        return headers

    def _scrub(self, value: Any) -> Any:
        return scrub(value, [self._api_key] if self._api_key else [])

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """POST the request, retrying per `self.retry`.

        Raises:
            ProviderError: A non-retryable status (e.g. 400, 401, 402, 404), an error object
                in the body, a reply without choices, or retries spent; the message names the
                model, the URL, the last problem and the attempts, never the key.
        """
        started = time.perf_counter()
        # Plain branches, not a context manager: this runs once per call.
        if isinstance(self._client, ClientPool):
            return await self._attempts(self._client.next(), request, started)
        if self._client is not None:
            return await self._attempts(self._client, request, started)
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            return await self._attempts(client, request, started)

    async def _attempts(
        self, client: httpx.AsyncClient, request: ChatRequest, started: float
    ) -> ChatResponse:
        body = request.body()
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        headers = self._request_headers()
        attempt = 0
        while True:
            try:
                if self.stream:
                    answer = await self._stream_once(client, body, headers)
                else:
                    answer = await self._post_once(client, body, headers)
            except httpx.TransportError as error:
                problem = f"{type(error).__name__}: {error}"
                wait = self.retry.delay(attempt)
            except _Retryable as failure:
                problem = failure.problem
                wait = self.retry.delay(
                    attempt, status=failure.status, retry_after=failure.retry_after
                )
            else:
                return self._response(request, answer, started, attempt)
            problem = self._scrub(problem)
            if wait is None:
                raise ProviderError(
                    f"{request.model} at {self.url}: {problem} after {attempt + 1} attempt(s)"
                )
            log.warning(
                "%s at %s: %s; retry %d in %.2f s",
                request.model,
                self.url,
                problem,
                attempt + 1,
                wait,
            )
            await self._sleep(wait)
            attempt += 1

    def _response(
        self, request: ChatRequest, answer: _Answer, started: float, retries: int
    ) -> ChatResponse:
        # Parsed for this call alone: no copy needed when nothing is hidden. A `\ud800`
        # escape in the body would leave half a character no cache or table can store.
        raw = without_lone_surrogates(answer.raw)
        if self._api_key or holds_secret_key(raw):
            raw = self._scrub(raw)
        upstream = raw.get("provider")
        return ChatResponse(
            request_hash=request.request_hash(),
            model=request.model,
            content=self._scrub(without_lone_surrogates(answer.content)),
            finish_reason=answer.finish_reason,
            usage=parse_usage(raw.get("usage")),
            wall_seconds=time.perf_counter() - started,
            ttft_seconds=answer.ttft,
            retries=retries,
            provider=upstream if isinstance(upstream, str) and upstream else self.host,
            simulated=False,
            raw=raw,
        )

    async def _post_once(
        self, client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]
    ) -> _Answer:
        response = await client.post(self.url, json=body, headers=headers)
        if response.status_code >= 400:
            raise _status_problem(response, response.content)
        return self._json_answer(response.content, body["model"])

    def _json_answer(self, content: bytes, model: str) -> _Answer:
        try:
            payload = json.loads(content)
        except ValueError as error:  # a proxy's HTML page, a cut-off body: try again
            raise _Retryable(f"malformed JSON reply: {error}") from error
        if not isinstance(payload, dict):
            raise _Retryable("reply is not a JSON object")
        if payload.get("error") and not payload.get("choices"):
            raise _in_body_error(payload)
        choices = payload.get("choices")
        if not choices or not isinstance(choices[0], Mapping):
            raise ProviderError(f"{model} at {self.url}: reply has no choices")
        choice = choices[0]
        message = choice.get("message") or {}
        return _Answer(
            content=message.get("content") or "",
            finish_reason=choice.get("finish_reason"),
            raw=payload,
            ttft=None,
        )

    async def _stream_once(
        self, client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]
    ) -> _Answer:
        attempt_started = time.perf_counter()
        async with client.stream("POST", self.url, json=body, headers=headers) as response:
            if response.status_code >= 400:
                raise _status_problem(response, await response.aread())
            if response.headers.get("content-type", "").startswith("application/json"):
                # A server that ignores `stream: true` answers with one JSON body.
                return self._json_answer(await response.aread(), body["model"])
            content: list[str] = []
            reasoning: list[str] = []
            meta: dict[str, Any] = {}
            usage: Any = None
            finish_reason: str | None = None
            ttft: float | None = None
            chunks = 0
            async for data in _sse_data(response.aiter_lines()):
                if data == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except ValueError as error:
                    raise _Retryable(f"malformed stream event: {error}") from error
                if not isinstance(chunk, dict):
                    continue
                if chunk.get("error"):
                    raise _in_body_error(chunk)
                chunks += 1
                for key in ("id", "model", "provider", "created", "system_fingerprint"):
                    if key in chunk:
                        meta.setdefault(key, chunk[key])
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    text = delta.get("content")
                    thought = delta.get("reasoning") or delta.get("reasoning_content")
                    if ttft is None and (text or thought):
                        ttft = time.perf_counter() - attempt_started
                    if text:
                        content.append(text)
                    if thought:
                        reasoning.append(thought)
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
                if chunk.get("usage"):
                    usage = chunk["usage"]
        if chunks == 0:
            raise _Retryable("stream ended without any event")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
        if reasoning:
            message["reasoning"] = "".join(reasoning)
        raw: dict[str, Any] = {
            **meta,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "stream_chunks": chunks,
        }
        if usage is not None:
            raw["usage"] = usage
        return _Answer("".join(content), finish_reason, raw, ttft)


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` of each server-sent event (multi-line data joined with newlines); comment
    lines (`: keep-alive`, OpenRouter's `: OPENROUTER PROCESSING`) and other fields skipped."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
