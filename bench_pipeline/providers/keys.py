"""Which API key an endpoint is sent: the one rule, without reading any key.

A record (model, judge or vision model) names where it is served (`base_url`, None for
OpenRouter) and, optionally, the environment variable holding its key (`api_key_env`):

- a record naming `api_key_env` is sent that variable's value, and only that;
- a record without one is sent `OPENROUTER_API_KEY` when it is served at OpenRouter's own
  base URL (https, host `openrouter.ai`), and no key at all anywhere else (no Authorization
  header: a local llama.cpp server, or someone else's server, never sees the project's key);
- no record may name `OPENROUTER_API_KEY` for a server that is not OpenRouter.

The value is read at the Dagster edge (`resources.models.endpoint_key`, through `EnvVar`);
nothing here touches the environment, and no key is ever part of a record, a setup id, run
config or metadata: only the variable's name is.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_KEY_VARIABLE = "OPENROUTER_API_KEY"
OPENROUTER_HOST = "openrouter.ai"

_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]*")


def _variable_name(value: str) -> str:
    if not _VARIABLE.fullmatch(value):
        raise ValueError(
            "must be the name of an environment variable (capitals, digits and _), not a key"
        )
    return value


KeyVariable = Annotated[str, AfterValidator(_variable_name)]
"""The name of the environment variable that holds an endpoint's key, e.g. `MY_SERVER_KEY`."""


def is_openrouter(base_url: str | None) -> bool:
    """True for OpenRouter's own API (None is OpenRouter): https at host `openrouter.ai`."""
    if base_url is None:
        return True
    parts = urlsplit(base_url)
    return parts.scheme == "https" and (parts.hostname or "").lower() == OPENROUTER_HOST


def key_variable(base_url: str | None, api_key_env: str | None) -> str | None:
    """The environment variable whose value this endpoint is sent, or None for no key.

    Raises:
        ValueError: `api_key_env` names the OpenRouter key for a server that is not OpenRouter.
    """
    if api_key_env is not None:
        if api_key_env == OPENROUTER_KEY_VARIABLE and not is_openrouter(base_url):
            raise ValueError(
                f"{OPENROUTER_KEY_VARIABLE} is sent only to OpenRouter ({DEFAULT_BASE_URL}), "
                f"not to {base_url}: name the variable holding this server's own key"
            )
        return api_key_env
    return OPENROUTER_KEY_VARIABLE if is_openrouter(base_url) else None
