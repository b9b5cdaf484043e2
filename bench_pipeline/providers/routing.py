"""One provider in front of several: each request goes to the one serving its model."""

from __future__ import annotations

from collections.abc import Mapping

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider, ProviderError


class ModelRouter(Provider):
    """Sends each request to `routes[request.model]`: judges served at different endpoints
    (OpenRouter, a local llama.cpp server) behind the one provider grading calls."""

    name = "router"

    def __init__(self, routes: Mapping[str, Provider]) -> None:
        self.routes = dict(routes)
        self.simulated = any(p.simulated for p in self.routes.values())

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The answer of the provider serving `request.model`.

        Raises:
            ProviderError: No provider serves the model (or the call failed for good).
        """
        provider = self.routes.get(request.model)
        if provider is None:
            raise ProviderError(
                f"no endpoint serves {request.model!r}; known: {', '.join(sorted(self.routes))}"
            )
        return await provider.complete(request)
