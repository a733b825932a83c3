"""How a provider caches prompts: the one home of every prompt-cache rule hango models.

The one cache model (``hango/agent/ledger/verdict.py``) and breakpoint placement
(``hango/agent/cache_breakpoints.py``) read these fields; ``HANGO_CACHE_RULES`` overrides the
keys ``CONFIGURABLE`` names (``hango/config.py`` refuses any other). Each provider's defaults
sit in its registry row (``hango/providers/__init__.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import ClassVar

from hango.messages import Message, is_sent


@dataclass(frozen=True)
class CacheRules:
    """How one provider caches prompts: whether, for how long, from which prefix length, how far back.

    ``lookback_blocks``: a breakpoint finds a cached prefix only if it ends at most this many
    blocks before it, where a tool, a system block and each content block of a message the
    provider receives are one block each (``blocks_of``). ``max_breakpoints``: the most
    breakpoints one request may carry. ``volatile_system``: the system blocks (by contributor)
    that change between turns and so never carry a breakpoint.
    """

    # The keys ``HANGO_CACHE_RULES`` may set, per provider.
    CONFIGURABLE: ClassVar[tuple[str, ...]] = ("enabled", "ttl_seconds", "minimum_tokens", "minimums")

    enabled: bool = True
    ttl_seconds: float = 300.0
    minimum_tokens: int = 1024
    # (pattern searched in the bare model name, minimum); the first match wins.
    minimums: tuple[tuple[str, int], ...] = ()
    lookback_blocks: int = 20
    max_breakpoints: int = 4
    volatile_system: frozenset[str] = frozenset({"todo"})

    def minimum_for(self, model: str) -> int:
        """The shortest prefix (in tokens) the provider caches for ``model`` (a bare name)."""
        for pattern, tokens in self.minimums:
            if re.search(pattern, model):
                return tokens
        return self.minimum_tokens

    def of_model(self, model: str) -> CacheRules:
        """These rules as they apply to ``model`` (a bare name) alone: its minimum for every model."""
        return replace(self, minimum_tokens=self.minimum_for(model), minimums=())

    @staticmethod
    def blocks_of(message: Message) -> int:
        """How many lookback blocks ``message`` counts: its content blocks the provider receives."""
        return sum(1 for block in message.content if is_sent(block))


UNCACHED = CacheRules(enabled=False)  # a provider without a prompt cache
