"""Typed records for model calls and the provider interface every backend implements.

A `ChatRequest` is everything that decides a model's answer: the exact API model id, the
messages and every sampling parameter. Its `request_hash()` keys the response cache and the
recorded store, so a rerun or backfill of the same request costs nothing. How a response is
fetched (streaming or not, timeouts, retries) is a property of the provider, not of the
request, and is deliberately left out of the hash.
"""

from __future__ import annotations

import functools
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

Role = Literal["system", "developer", "user", "assistant", "tool"]

RESERVED_BODY_KEYS = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "reasoning_effort",
        "stream",
        "stream_options",
    }
)
"""Body keys set by `ChatRequest`'s own fields or by the provider; `extra` may not repeat them
(one request must have one hash and one body)."""
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
"""What `json.dumps` with these options builds afresh on every call."""


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value


EndpointUrl = Annotated[str, AfterValidator(_http_url)]
"""The base URL of an OpenAI-compatible API (OpenRouter's, or a llama.cpp/vLLM server's)."""


def without_reserved_keys(extra: dict[str, Any], owner: str) -> dict[str, Any]:
    """`extra` unchanged, or a ValueError when it repeats a field the body sets itself."""
    clash = sorted(RESERVED_BODY_KEYS & extra.keys())
    if clash:
        raise ValueError(f"may not set {', '.join(clash)}: use {owner} own fields")
    return extra


class ProviderError(RuntimeError):
    """A model call failed for good (non-retryable status, retries spent, malformed reply)."""


class Message(BaseModel):
    """One chat message, as sent to an OpenAI-compatible API."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    """Who speaks: `system`/`developer` instructions, the `user`, the `assistant`, a `tool`."""
    content: str | list[dict[str, Any]]
    """The text, or a list of content parts (e.g. text and image parts) sent verbatim."""


class ChatRequest(BaseModel):
    """One chat-completion request: everything that decides the answer, nothing else."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    """The exact API model id, e.g. `openai/gpt-4o-2024-08-06` on OpenRouter."""
    messages: tuple[Message, ...] = Field(min_length=1)
    """The conversation, in order (lists of dicts are accepted and converted)."""
    temperature: float | None = None
    """Sampling temperature; None leaves the API default (and is not sent)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Cap on completion tokens (reasoning included); None leaves the API default."""
    reasoning_effort: str | None = None
    """Reasoning/effort setting (`low`, `medium`, `high`, ...) for models that take one."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Any further body parameters (`top_p`, `seed`, OpenRouter's `provider` routing, ...),
    sent verbatim and part of the hash. May not repeat a field above (`RESERVED_BODY_KEYS`)."""

    @field_validator("extra")
    @classmethod
    def _no_reserved_keys(cls, extra: dict[str, Any]) -> dict[str, Any]:
        return without_reserved_keys(extra, "the request's")

    def body(self) -> dict[str, Any]:
        """The JSON body for `/chat/completions`: parameters left at None are not sent."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message.model_dump(mode="json") for message in self.messages],
        }
        for name in ("temperature", "max_tokens", "reasoning_effort"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        body.update(self.extra)
        return body

    def canonical_json(self) -> str:
        """The request body as canonical JSON: sorted keys, no whitespace, UTF-8 kept."""
        return _CANONICAL.encode(self.body())

    def request_hash(self) -> str:
        """SHA-256 (hex) of `canonical_json()`: the model and every parameter, in any order.

        A parameter left at None is not sent, so it hashes like an absent one; `temperature=1`
        and `temperature=1.0` are the same request (the field is a float). Worked out once per
        request (it is frozen): a cached call asks for it three times.
        """
        return self._hash

    @functools.cached_property
    def _hash(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy (see pydantic's `model_copy`); one with changed fields hashes afresh."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy.__dict__.pop("_hash", None)
        return copy


class Usage(BaseModel):
    """Token counts of one request (or a total over several), as the API reported them.

    OpenAI-compatible conventions: `prompt_tokens` includes the cached and cache-write tokens,
    and `completion_tokens` includes the reasoning tokens; the other counts are breakdowns.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    """Prompt tokens read from the provider's prompt cache."""
    cache_write_tokens: int = Field(default=0, ge=0)
    """Prompt tokens written to the provider's prompt cache."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """Completion tokens spent on reasoning."""
    per_request: bool = False
    """True when these are the counts of exactly one request (so a per-request long-context
    tier can be applied); False for a total over requests, or when that is unknown."""

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of several usages. Still `per_request` only if it is a single request's."""
        items = list(usages)
        return cls(
            prompt_tokens=sum(u.prompt_tokens for u in items),
            completion_tokens=sum(u.completion_tokens for u in items),
            cached_tokens=sum(u.cached_tokens for u in items),
            cache_write_tokens=sum(u.cache_write_tokens for u in items),
            reasoning_tokens=sum(u.reasoning_tokens for u in items),
            per_request=len(items) == 1 and items[0].per_request,
        )


class ChatResponse(BaseModel):
    """A model's answer to one `ChatRequest`, with what it cost in tokens and time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_hash: str
    """`ChatRequest.request_hash()` of the request this answers."""
    model: str
    """The model id that was requested (the setup's exact API id); the id the API reports
    serving, when it differs, is in `raw["model"]`."""
    content: str
    """The assistant's text (reasoning text, when an API returns it, stays in `raw`)."""
    finish_reason: str | None
    """`stop`, `length`, `tool_calls`, `content_filter`, ... or None when none was reported."""
    usage: Usage | None
    """Token counts; None when the API reported none (missing is never 0)."""
    wall_seconds: float
    """From the first attempt's start to the end of the answer, retries and waits included."""
    ttft_seconds: float | None = None
    """Time to first token of the successful attempt (streaming only; else None)."""
    retries: int = 0
    """Attempts beyond the first that this answer took."""
    provider: str
    """Who answered: the upstream host OpenRouter reports (e.g. `DeepInfra`), the API's host
    name, or `simulated`."""
    simulated: bool = False
    """True for an answer made up by `SimulatedProvider`: never a real model's output."""
    from_cache: bool = False
    """True when this was served from the response cache or a recorded store (no call made);
    every other field is the original call's."""
    raw: dict[str, Any] = Field(default_factory=dict)
    """The API's response body (for a stream, the chunks assembled into one body), with
    anything secret scrubbed."""


class Provider(ABC):
    """A backend that answers chat requests (live API, recorded store, simulation, cache)."""

    name: str = "provider"
    simulated: bool = False
    """True for backends whose answers are not a real model's."""

    @abstractmethod
    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer `request`.

        Raises:
            ProviderError: The call failed for good.
        """
