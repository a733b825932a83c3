"""What every provider adapter shares: its settings, the ``Provider`` protocol, message merging.

The adapters import this module, never the package, so ``hango.providers``
(the registry, which loads adapters lazily) and its adapters form no circle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from hango.messages import Message

if TYPE_CHECKING:
    from hango.config import Config
    from hango.messages import Request, Response


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
