"""What every provider adapter shares: its settings, the ``Provider`` protocol, message merging.

The adapters import this module, never the package, so ``hango.providers``
(the registry, which loads adapters lazily) and its adapters form no circle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Protocol

from hango.cache_rules import UNCACHED, CacheRules
from hango.messages import Message

if TYPE_CHECKING:
    from hango.config import Config
    from hango.messages import Request, Response


@dataclass(frozen=True)
class ProviderSpec:
    """Everything hango knows about one provider, in one row of the registry (``hango/providers/__init__.py``).

    ``adapter`` (``module:Class``) is imported on first use, so no SDK loads at
    import time. ``settings`` names the ``ProviderSettings`` fields it reads: when
    any is set, a server loads its SDK per worker before serving. ``wire_format``
    says the adapter module has a ``wire_body`` (inspect's ``format=<name>``).
    ``sdk`` is the official SDK package it talks through (its debug logs quote
    content and are dropped). ``prices`` is its provider id in genai-prices' table
    (``hango/providers/prices.py``), None for one the table does not know (its calls'
    cost is null, with that reason). ``simulates`` names the reference model
    (``<provider>/<model>``) of a provider that only stands in for one: its usage is
    simulated by the one cache model (``hango/agent/ledger/simulated_cache.py``) and its
    calls are priced at the reference model's prices, labelled simulated.
    """

    name: str
    adapter: str
    settings: tuple[str, ...] = ()
    sdk: str | None = None
    wire_format: bool = False
    cache: CacheRules = UNCACHED
    prices: str | None = None
    simulates: str | None = None


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
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls) if f.name != "timeout"})


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
