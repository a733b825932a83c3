"""A fake of Anthropic's prompt cache, written from its documentation, not from hango's model of it.

The rules it follows (Anthropic, "Prompt caching"):

- the prefix is read in the order tools, system, messages; every tool definition, system
  block and message content block is one **block**;
- a ``cache_control`` mark on a block is a breakpoint: the prefix through that block is
  written to the cache (at most ``MAX_BREAKPOINTS`` per request);
- a prefix shorter than the model's minimum is not cached (1,024 tokens for most Claude
  models, 2,048 for Haiku), mark or not;
- a breakpoint finds a cached prefix that ends on it or on a block boundary at most
  ``LOOKBACK_BLOCKS`` blocks before it, never further: a hit is the same prefix, byte for byte;
- an entry lives ``ttl_seconds`` (5 minutes by default) from its last write or read;
- usage: ``cache_read_input_tokens`` is the longest prefix found, ``cache_creation_input_tokens``
  what the last breakpoint writes beyond it, ``input_tokens`` the rest.

Tokens are counted in this fake's own units (a block's JSON, four characters a token), not
with hango's estimator, so a verdict has to hold in provider units. Time is the fake's
``clock``, so a test moves past a lifetime without waiting.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hango.messages import Response, Usage

LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4
DEFAULT_TTL_SECONDS = 300.0


def minimum_tokens(model: str) -> int:
    """The shortest prefix the model caches: 2,048 tokens for Haiku, 1,024 for the others."""
    return 2048 if "haiku" in model else 1024


def block_tokens(block: dict[str, Any]) -> int:
    """A block's tokens in this fake's units: its JSON (without the mark), four characters a token."""
    return max(1, len(json.dumps(_unmarked(block), sort_keys=True, ensure_ascii=False)) // 4)


def _unmarked(block: dict[str, Any]) -> dict[str, Any]:
    """The block without its cache mark or the role this fake tags it with."""
    return {k: v for k, v in block.items() if k not in ("cache_control", "_role")}


def blocks_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every block of a Messages API body, in the order the cache reads them."""
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    content = [b for m in body.get("messages", []) for b in _content(m)]
    return [*body.get("tools", []), *system, *content]


def _content(message: dict[str, Any]) -> list[dict[str, Any]]:
    # The role is part of what a block means: the same text from the user and the assistant differs.
    blocks = message["content"]
    if isinstance(blocks, str):
        blocks = [{"type": "text", "text": blocks}]
    return [{**b, "_role": message["role"]} for b in blocks]


@dataclass
class Entry:
    expires: float


@dataclass(frozen=True)
class Outcome:
    """What one request read, wrote and paid for in full, in this fake's tokens."""

    read: int
    written: int
    uncached: int


class AnthropicCache:
    """The cache of one organization: prefix entries by model and prefix hash."""

    def __init__(
        self,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        minimum: Callable[[str], int] = minimum_tokens,
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self.minimum = minimum
        self.entries: dict[str, Entry] = {}
        self.outcomes: list[Outcome] = []
        self._lock = threading.Lock()

    def answer(self, response: Response, body: dict[str, Any]) -> Response:
        """``response`` with the usage this cache gives ``body`` (its output tokens kept)."""
        outcome = self.send(body)
        usage = Usage(outcome.uncached, response.usage.output_tokens, outcome.read, outcome.written)
        return replace(response, usage=usage)

    def send(self, body: dict[str, Any]) -> Outcome:
        """Look the request's breakpoints up, then write them; the outcome is also kept in ``outcomes``."""
        blocks = blocks_of(body)
        marks = [i for i, b in enumerate(blocks) if "cache_control" in b]
        assert len(marks) <= MAX_BREAKPOINTS, f"{len(marks)} breakpoints: the API refuses more than 4"
        through, keys, total, digest = [], [], 0, hashlib.sha256(body.get("model", "").encode())
        for block in blocks:
            total += block_tokens(block)
            digest.update(
                json.dumps({**_unmarked(block), "role": block.get("_role")}, sort_keys=True).encode()
            )
            through.append(total)
            keys.append(digest.hexdigest())
        with self._lock:
            now = self.clock()
            self.entries = {k: e for k, e in self.entries.items() if e.expires > now}
            hit = self._longest_hit(marks, keys)
            read = through[hit] if hit is not None else 0
            if hit is not None:
                self.entries[keys[hit]].expires = now + self.ttl_seconds  # a read refreshes the lifetime
            minimum = self.minimum(body.get("model", ""))
            written_through = 0
            for mark in marks:
                if through[mark] >= minimum:
                    self.entries[keys[mark]] = Entry(now + self.ttl_seconds)
                    written_through = through[mark]
            outcome = Outcome(read, max(0, written_through - read), total - max(read, written_through))
            self.outcomes.append(outcome)
        return outcome

    def _longest_hit(self, marks: list[int], keys: list[str]) -> int | None:
        """The last block of the longest cached prefix some breakpoint finds within its lookback."""
        found = [
            at
            for mark in marks
            for at in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1)
            if keys[at] in self.entries
        ]
        return max(found, default=None)
