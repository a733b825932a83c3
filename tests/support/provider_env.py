"""The environment variables that point at a real model provider: tests never inherit them.

``hango.config`` reads the keys and the ``HANGO_*`` base URLs; the official SDKs read
their own key, token and base-URL variables when hango passes none. Clearing all of
them means a test that forgot its fake gets an error, never a real model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

PROVIDER_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "HANGO_ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HANGO_OPENAI_BASE_URL",
)


def without_provider_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without any variable that could reach a real model provider."""
    return {name: value for name, value in env.items() if name not in PROVIDER_ENV}


def clear_provider_env(env: MutableMapping[str, str] = os.environ) -> None:
    """Remove every provider variable from ``env`` (the test process's environment by default)."""
    for name in PROVIDER_ENV:
        env.pop(name, None)
