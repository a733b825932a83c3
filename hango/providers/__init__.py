"""Model providers: one adapter per API, chosen by the ``<provider>/<model>`` name of an agent.

``provider_for("anthropic/claude-sonnet-4-5", settings)`` returns the adapter and
the bare model name (``claude-sonnet-4-5``); the ``Request`` handed to the adapter
carries that bare name. Adapters are built once per (provider, settings) and
reused, so an SDK client and its connection pool serve many calls. Nothing is
imported or built at import time: the SDK modules load on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hango.providers.base import Provider, ProviderSettings, UnknownProvider, merge_same_role

if TYPE_CHECKING:
    from hango.messages import Request

__all__ = [
    "PROVIDERS",
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


def _anthropic(settings: ProviderSettings) -> Provider:
    from hango.providers.anthropic import AnthropicProvider

    return AnthropicProvider(settings)


def _openai(settings: ProviderSettings) -> Provider:
    from hango.providers.openai import OpenAIProvider

    return OpenAIProvider(settings)


def _offline(settings: ProviderSettings) -> Provider:
    from hango.providers.offline import OfflineProvider

    return OfflineProvider()


_FACTORIES: dict[str, Callable[[ProviderSettings], Provider]] = {
    "anthropic": _anthropic,
    "openai": _openai,
    "offline": _offline,
}

PROVIDERS: tuple[str, ...] = tuple(_FACTORIES)

_adapters: dict[tuple[str, ProviderSettings], Provider] = {}
_adapters_lock = threading.Lock()


def split_model(model: str) -> tuple[str, str]:
    """Split ``<provider>/<model>`` into its two parts; raises ``UnknownProvider``."""
    name, _, bare = model.partition("/")
    if name not in _FACTORIES or not bare:
        known = ", ".join(sorted(_FACTORIES))
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
            adapter = _adapters[(name, settings)] = _FACTORIES[name](settings)
    return adapter, bare


def load_sdks(settings: ProviderSettings) -> None:
    """Import the SDK of every provider ``settings`` configures: a server does it per worker, before serving.

    Otherwise the first call pays for the import while it holds the adapters' lock: on a
    loaded machine that took longer than a try's deadline, and the tries behind it waited
    on the lock with their pool slots taken.
    """
    if settings.anthropic_api_key or settings.anthropic_base_url:
        from hango.providers import anthropic  # noqa: F401
    if settings.openai_api_key or settings.openai_base_url:
        from hango.providers import openai  # noqa: F401


def close_providers() -> None:
    """Close every adapter ``provider_for`` has built (at shutdown, or between tests)."""
    with _adapters_lock:
        adapters = list(_adapters.values())
        _adapters.clear()
    for adapter in adapters:
        adapter.close()


WIRE_FORMATS = ("anthropic", "openai")


def wire_body(wire_format: str, request: Request) -> dict[str, Any]:
    """The exact JSON body the ``wire_format`` adapter POSTs for ``request``: its own payload code, no copy."""
    if wire_format == "anthropic":
        from hango.providers.anthropic import wire_body as body
    elif wire_format == "openai":
        from hango.providers.openai import wire_body as body
    else:
        raise UnknownProvider(f"no wire format {wire_format!r}: expected one of {', '.join(WIRE_FORMATS)}")
    return body(request)
