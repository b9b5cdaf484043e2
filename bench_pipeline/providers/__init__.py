"""Model providers: typed requests and responses, a live OpenAI-compatible client, a
request-hash cache, recorded replay and a deterministic simulation (no Dagster here)."""

from bench_pipeline.providers.base import (
    ChatRequest,
    ChatResponse,
    Message,
    Provider,
    ProviderError,
    Usage,
)
from bench_pipeline.providers.cache import CachedProvider, ResponseCache, ResponseStore
from bench_pipeline.providers.keys import DEFAULT_BASE_URL
from bench_pipeline.providers.openai_compatible import OpenAICompatibleProvider, parse_usage
from bench_pipeline.providers.recorded import RecordedProvider, RecordingMissing
from bench_pipeline.providers.runner import run_all
from bench_pipeline.providers.simulated import SIMULATED_MARKER, SimulatedProvider

__all__ = [
    "DEFAULT_BASE_URL",
    "SIMULATED_MARKER",
    "CachedProvider",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "OpenAICompatibleProvider",
    "Provider",
    "ProviderError",
    "RecordedProvider",
    "RecordingMissing",
    "ResponseCache",
    "ResponseStore",
    "SimulatedProvider",
    "Usage",
    "parse_usage",
    "run_all",
]
