"""Model providers: one adapter per API, chosen by the ``<provider>/<model>`` name of an agent.

``provider_for("anthropic/claude-sonnet-4-5", settings)`` returns the adapter and
the bare model name (``claude-sonnet-4-5``); the ``Request`` handed to the adapter
carries that bare name. Adapters are built once per (provider, settings) and
reused, so an SDK client and its connection pool serve many calls. Nothing is
imported or built at import time: the SDK modules load on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hango.agent.types import Message

if TYPE_CHECKING:
    from hango.agent.types import Request, Response
    from hango.config import Config


class UnknownProvider(ValueError):
    """A model name whose ``<provider>/`` prefix names no known provider."""


@dataclass(frozen=True)
class ProviderSettings:
    """Where and how to reach the providers; ``timeout`` is the default per-call timeout in seconds."""

    anthropic_base_url: str | None = None
    anthropic_api_key: str | None = None
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    timeout: float = 120.0

    @classmethod
    def from_config(cls, config: Config) -> ProviderSettings:
        """The provider part of hango's typed configuration."""
        return cls(
            anthropic_base_url=config.anthropic_base_url,
            anthropic_api_key=config.anthropic_api_key,
            openai_base_url=config.openai_base_url,
            openai_api_key=config.openai_api_key,
        )


class Provider(Protocol):
    """A model API behind the canonical request and response types."""

    name: str

    def complete(self, request: Request, *, timeout: float | None = None) -> Response:
        """Send ``request`` and return the model's answer; raises ``ProviderError``/``ProviderTimeout``."""
        ...

    def count_tokens(self, request: Request, *, timeout: float | None = None) -> int | None:
        """The provider's input-token count of ``request``, or None when it has no counter."""
        ...

    def close(self) -> None:
        """Release the adapter's connections."""
        ...


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


def merge_same_role(messages: Iterable[Message]) -> list[Message]:
    """Join consecutive messages of one role into one, as the provider APIs require.

    A run that stops at ``max_turns`` ends on a tool-result message and the next
    user text is stored as its own message; both are user messages. A breakpoint
    on any of the joined messages moves to the end of the merged one (moving a
    breakpoint later keeps it; dropping it would lose a cache write).
    """
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role == message.role:
            last = merged[-1]
            cache = last.cache_control or message.cache_control
            merged[-1] = Message(last.role, last.content + message.content, cache)
        else:
            merged.append(message)
    return merged
