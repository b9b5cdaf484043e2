"""Which provider answers model calls: simulated (the offline default), live or recorded."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import dagster as dg
from pydantic import Field, ValidationError

from bench_pipeline.core import settings
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL, JudgeModel
from bench_pipeline.grading.vision import (
    SIMULATED_VISION_MODEL,
    VISION_FILE,
    SimulatedVisionProvider,
    VisionStep,
    check_vision_model,
    load_vision_model,
)
from bench_pipeline.providers import (
    DEFAULT_BASE_URL,
    CachedProvider,
    OpenAICompatibleProvider,
    Provider,
    RecordedProvider,
    ResponseCache,
    SimulatedProvider,
)
from bench_pipeline.providers.cache import ResponseStore
from bench_pipeline.providers.keys import key_variable
from bench_pipeline.providers.openai_compatible import DEFAULT_TIMEOUT
from bench_pipeline.providers.pool import ClientPool
from bench_pipeline.providers.routing import ModelRouter
from bench_pipeline.runs.plan import WorkItem
from bench_pipeline.taskbank.setups import MODELS_FILE

MODEL_MODES = ("simulated", "live", "recorded")


class Served(Protocol):
    """A record that says where it is served and which variable holds its key: a model
    record, a judge, the vision model."""

    @property
    def api_id(self) -> str: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...


def endpoint_key(record: Served, where: str) -> str | None:
    """The key `record`'s endpoint is sent (the rule: `providers.keys.key_variable`), read
    through Dagster's `EnvVar` at the moment the provider is built; None sends no key.

    Raises:
        ValueError: The variable it names is unset or empty (`where` names the file and record).
    """
    variable = key_variable(record.base_url, record.api_key_env)
    if variable is None:
        return None
    value = (dg.EnvVar(variable).get_value() or "").strip()
    if not value:
        named = "its api_key_env" if record.api_key_env else "the OpenRouter key"
        raise ValueError(
            f"{where}: its endpoint {record.base_url or DEFAULT_BASE_URL} is sent {named}, "
            f"but the environment variable {variable} is not set"
        )
    return value


class ModelCallsResource(dg.ConfigurableResource):
    """Model calls for run execution and judges.

    - `simulated` (default): deterministic made-up answers, labelled simulated everywhere;
    - `live`: OpenAI-compatible HTTP (OpenRouter, or a record's own `base_url`, e.g. a local
      llama.cpp server), behind the response cache; each endpoint is sent only its own key
      (`endpoint_key`): no key is part of this resource's config;
    - `recorded`: replay of a response-cache directory, no network.
    """

    mode: str = Field(
        default_factory=lambda: os.environ.get("BENCH_MODEL_MODE", "simulated"),
        description="simulated | live | recorded (env BENCH_MODEL_MODE).",
    )
    cache_dir: str | None = Field(
        default=None, description="Response cache; default $BENCH_HOME/cache/responses."
    )
    concurrency: int = Field(default=8, ge=1, description="Calls in flight at most.")

    def cache_path(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir)
        return settings.bench_home() / "cache" / "responses"

    def providers(self) -> ProviderChooser:
        if self.mode not in MODEL_MODES:
            raise ValueError(f"BENCH_MODEL_MODE must be one of {MODEL_MODES}, not {self.mode!r}")
        return ProviderChooser(self.mode, ResponseCache(self.cache_path()), self.concurrency)


class ProviderChooser:
    """One provider per endpoint, made on first use; `aclose` closes their HTTP clients."""

    def __init__(self, mode: str, cache: ResponseCache, concurrency: int = 8) -> None:
        self.mode = mode
        self.cache = cache
        self.concurrency = concurrency
        self._simulated = SimulatedProvider()
        self._recorded = RecordedProvider(cache)
        self._live: dict[tuple[str, str | None], CachedProvider] = {}
        self._runs: dict[tuple[str, str | None], CachedProvider] = {}
        self._run_cache: ResponseStore | None = None
        self._pool: ClientPool | None = None

    def share_run_cache(self, store: ResponseStore) -> None:
        """Answer model runs (not judges) through `store` instead of the local cache: the
        run store's shared cache (`runs.shared.SharedResponses`), for runs on many machines."""
        self._run_cache = store
        self._runs.clear()

    @property
    def simulated(self) -> bool:
        return self.mode == "simulated"

    def judges(self) -> tuple[Provider, tuple[JudgeModel, ...]]:
        """The provider that answers judge requests, and the judge pool: the simulated judges
        offline, else `setups/judges.toml`, each judge at its own endpoint (OpenRouter unless
        its record names a `base_url`), behind the cache."""
        if self.mode == "simulated":
            return SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL
        pool = load_judges()
        if self.mode == "recorded":
            return self._recorded, pool
        routes = {
            j.api_id: self._live_provider(j, "judges.toml", f"judge {j.api_id}") for j in pool
        }
        return ModelRouter(routes), pool

    def vision(self, benchmarked_companies: Sequence[str]) -> VisionStep | None:
        """The vision step of the browser check: the simulated vision model offline, else
        `setups/vision.toml`'s model at its endpoint behind the cache (None when the file is
        absent: every undecided check then goes to a person).

        Raises:
            VisionConfigError: The configured model is invalid or from a benchmarked company.
        """
        if self.mode == "simulated":
            model = check_vision_model(SIMULATED_VISION_MODEL, benchmarked_companies)
            return VisionStep(SimulatedVisionProvider(), model)
        path = settings.setups_dir() / VISION_FILE
        if not path.exists():
            return None
        model = load_vision_model(path, benchmarked_companies)
        if self.mode == "recorded":
            return VisionStep(self._recorded, model)
        live = self._live_provider(model, VISION_FILE, f"vision model {model.api_id}")
        return VisionStep(live, model)

    def _live_provider(self, record: Served, file: str, name: str) -> Provider:
        """The cached live provider of `record`'s endpoint: one per (base URL, key variable),
        so two records at one server with different keys never share a key. `file` (under
        the setups folder) and `name` name the record in an error."""
        base_url = record.base_url or DEFAULT_BASE_URL
        endpoint = (base_url, key_variable(record.base_url, record.api_key_env))
        if endpoint not in self._live:
            key = endpoint_key(record, f"{settings.setups_dir() / file}: {name}")
            if self._pool is None:  # made inside the event loop that uses it
                self._pool = ClientPool(self.concurrency, timeout=DEFAULT_TIMEOUT)
            live = OpenAICompatibleProvider(key, base_url=base_url, client=self._pool)
            self._live[endpoint] = CachedProvider(live, self.cache)
        return self._live[endpoint]

    def __call__(self, item: WorkItem) -> Provider:
        if self.mode == "simulated":
            return self._simulated
        if self.mode == "recorded":
            return self._recorded
        model = item.setup.model
        if self._run_cache is None:
            return self._live_provider(model, MODELS_FILE, f"model {model.id}")
        endpoint = (
            model.base_url or DEFAULT_BASE_URL,
            key_variable(model.base_url, model.api_key_env),
        )
        if endpoint not in self._runs:
            live = self._live_provider(model, MODELS_FILE, f"model {model.id}")
            assert isinstance(live, CachedProvider)
            self._runs[endpoint] = CachedProvider(live.inner, self._run_cache)
        return self._runs[endpoint]

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None


def load_judges(path: Path | None = None) -> tuple[JudgeModel, ...]:
    """The judge pool of `setups/judges.toml` (`[[judge]]` tables).

    Raises:
        ValueError: The file is missing or a judge record is invalid (file and record named).
    """
    path = path or settings.setups_dir() / "judges.toml"
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path}: cannot read the judge pool: {error}") from None
    judges = []
    for number, record in enumerate(document.get("judge", []), start=1):
        try:
            judges.append(JudgeModel.model_validate(record))
        except ValidationError as error:
            raise ValueError(f"{path}: judge {number}: {error.errors()[0]['msg']}") from None
    return tuple(judges)
