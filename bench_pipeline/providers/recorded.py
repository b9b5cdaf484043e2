"""Replays stored responses (a `ResponseCache` directory or any `ResponseStore`): no network."""

from __future__ import annotations

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider, ProviderError
from bench_pipeline.providers.cache import ResponseStore


class RecordingMissing(ProviderError):
    """The store has no response for a request."""


class RecordedProvider(Provider):
    """Answers each request with its recorded response (`from_cache=True`), or fails clearly."""

    name = "recorded"

    def __init__(self, store: ResponseStore) -> None:
        self.store = store

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The recorded response to `request`.

        Raises:
            RecordingMissing: Nothing recorded for this request; the message names its hash,
                its model and the store.
        """
        request_hash = request.request_hash()
        response = self.store.get(request_hash)
        if response is None:
            raise RecordingMissing(
                f"no recorded response for request {request_hash} (model {request.model}) "
                f"in {self.store!r}; record it with a live provider behind CachedProvider"
            )
        return response.model_copy(update={"from_cache": True})
