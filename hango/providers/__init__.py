"""Model providers: one adapter per API, chosen by the ``<provider>/<model>`` name of an agent.

``provider_for("anthropic/claude-sonnet-4-5", settings)`` returns the adapter and
the bare model name (``claude-sonnet-4-5``); the ``Request`` handed to the adapter
carries that bare name. Adapters are built once per (provider, settings) and
reused, so an SDK client and its connection pool serve many calls. Nothing is
imported or built at import time: the SDK modules load on first use.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hango.providers.base import (
    CacheRules,
    Provider,
    ProviderSettings,
    ProviderSpec,
    UnknownProvider,
    merge_same_role,
)

if TYPE_CHECKING:
    from hango.messages import Request

__all__ = [
    "PROVIDERS",
    "SDKS",
    "SPECS",
    "WIRE_FORMATS",
    "Provider",
    "ProviderSettings",
    "UnknownProvider",
    "close_providers",
    "load_sdks",
    "merge_same_role",
    "provider_for",
    "split_model",
    "wire_body",
]


# Anthropic's documented values, the one place hango keeps them: a 5-minute lifetime, and the
# "minimum cacheable prompt length" per model: 4,096 tokens for Opus 4.5 and later and Haiku 4.5,
# 2,048 for the Haiku 3 family, 1,024 for the others (Sonnet 4.6 included).
# https://docs.claude.com/en/docs/build-with-claude/prompt-caching#cache-limitations
ANTHROPIC_CACHE = CacheRules(
    minimums=(
        (r"opus-4-[5-9]|haiku-4-5", 4096),
        (r"haiku-3|3-5-haiku|3-haiku", 2048),
    )
)
# The model the offline provider stands in for: its cache rules and, labelled simulated, its prices.
SIMULATED_MODEL = "anthropic/claude-sonnet-4-6"

# The registry: one row per provider. Adding a provider adds its adapter module and one row here
# (and its settings to ``ProviderSettings`` and ``hango/config.py``).
SPECS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec(
            "anthropic",
            "hango.providers.anthropic:AnthropicProvider",
            settings=("anthropic_base_url", "anthropic_api_key"),
            sdk="anthropic",
            wire_format=True,
            prices="anthropic",
            cache=ANTHROPIC_CACHE,
        ),
        ProviderSpec(
            "openai",
            "hango.providers.openai:OpenAIProvider",
            settings=("openai_base_url", "openai_api_key"),
            sdk="openai",
            wire_format=True,
            prices="openai",
            # OpenAI caches prefixes of 1,024 tokens and more on its own, for minutes of inactivity.
            cache=CacheRules(),
        ),
        ProviderSpec(
            "offline",
            "hango.providers.offline:OfflineProvider",
            cache=ANTHROPIC_CACHE.of_model(SIMULATED_MODEL.partition("/")[2]),
            simulates=SIMULATED_MODEL,
        ),
    )
}

PROVIDERS: tuple[str, ...] = tuple(SPECS)
WIRE_FORMATS: tuple[str, ...] = tuple(name for name, spec in SPECS.items() if spec.wire_format)
SDKS: tuple[str, ...] = tuple(spec.sdk for spec in SPECS.values() if spec.sdk)

_adapters: dict[tuple[str, ProviderSettings], Provider] = {}
_adapters_lock = threading.Lock()


def split_model(model: str) -> tuple[str, str]:
    """Split ``<provider>/<model>`` into its two parts; raises ``UnknownProvider``."""
    name, _, bare = model.partition("/")
    if name not in SPECS or not bare:
        known = ", ".join(sorted(SPECS))
        raise UnknownProvider(
            f"unknown model {model!r}: expected <provider>/<model> with provider in {known}"
        )
    return name, bare


def provider_for(model: str, settings: ProviderSettings) -> tuple[Provider, str]:
    """The adapter for ``<provider>/<model>`` and the bare model name to put in its requests."""
    name, bare = split_model(model)
    with _adapters_lock:
        adapter = _adapters.get((name, settings))
        if adapter is None:
            adapter = _adapters[(name, settings)] = _adapter_class(SPECS[name])(settings)
    return adapter, bare


def load_sdks(settings: ProviderSettings) -> None:
    """Import the SDK of every provider ``settings`` configures: a server does it per worker, before serving.

    Otherwise the first call pays for the import while it holds the adapters' lock: on a
    loaded machine that took longer than a try's deadline, and the tries behind it waited
    on the lock with their pool slots taken.
    """
    for spec in SPECS.values():
        if any(getattr(settings, name) for name in spec.settings):
            _adapter_class(spec)


def _adapter_class(spec: ProviderSpec) -> Callable[[ProviderSettings], Provider]:
    module, _, name = spec.adapter.partition(":")
    return getattr(importlib.import_module(module), name)


def close_providers() -> None:
    """Close every adapter ``provider_for`` has built (at shutdown, or between tests)."""
    with _adapters_lock:
        adapters = list(_adapters.values())
        _adapters.clear()
    for adapter in adapters:
        adapter.close()


def wire_body(wire_format: str, request: Request) -> dict[str, Any]:
    """The exact JSON body the ``wire_format`` adapter POSTs for ``request``: its own payload code, no copy."""
    if wire_format not in WIRE_FORMATS:
        raise UnknownProvider(f"no wire format {wire_format!r}: expected one of {', '.join(WIRE_FORMATS)}")
    module = SPECS[wire_format].adapter.partition(":")[0]
    return importlib.import_module(module).wire_body(request)
