"""The Messages API's own request rules, written from its 400 answers and not from hango's validator.

``problem(body)`` returns the text the real API answers (HTTP 400
``invalid_request_error``) for the first rule a ``POST /v1/messages`` body
breaks, or None. It is the fake provider's ``validator``: a request hango
should never have sent is answered the way the real API answers it, and
``Ledger`` counts every one of them over a whole test run.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_BREAKPOINTS = 4


def problem(body: dict[str, Any]) -> str | None:
    """The real API's 400 text for the first broken rule of ``body``, or None when it would be accepted."""
    for check in (_system_problem, _shape_problem, _content_problem, _pairing_problem, _cache_problem):
        found = check(body)
        if found:
            return found
    return None


def _texts(blocks: list[dict[str, Any]]) -> Iterator[str]:
    return (b.get("text", "") for b in blocks if b.get("type") == "text")


def _system_problem(body: dict[str, Any]) -> str | None:
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    if any(not text for text in _texts(system)):
        return "system: text content blocks must be non-empty"
    if any(not text.strip() for text in _texts(system)):
        return "system: text content blocks must contain non-whitespace text"
    names = [t.get("name") for t in body.get("tools") or []]
    if len(names) != len(set(names)):
        return "tools: Tool names must be unique."
    return None


def _shape_problem(body: dict[str, Any]) -> str | None:
    messages = body.get("messages") or []
    if not messages:
        return "messages: at least one message is required"
    if messages[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    for before, after in itertools.pairwise(messages):
        if before["role"] == after["role"]:
            role = after["role"]
            return f'messages: roles must alternate between "user" and "assistant", but found multiple "{role}" roles in a row'
    return None


def _content_problem(body: dict[str, Any]) -> str | None:
    messages = body["messages"]
    for index, message in enumerate(messages):
        content = message["content"]
        final_assistant = index == len(messages) - 1 and message["role"] == "assistant"
        if not content and not final_assistant:
            return f"messages.{index}: all messages must have non-empty content except for the optional final assistant message"
        if any(not text for text in _texts(content)):
            return "messages: text content blocks must be non-empty"
        if any(not text.strip() for text in _texts(content)):
            return "messages: text content blocks must contain non-whitespace text"
    return None


def _pairing_problem(body: dict[str, Any]) -> str | None:
    messages = body["messages"]
    asked: set[str] = set()
    for index, message in enumerate(messages):
        content = message["content"]
        for position, block in enumerate(content):
            if block["type"] == "tool_result" and block["tool_use_id"] not in asked:
                return (
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {block['tool_use_id']}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
        # The answers must open the next message: a text block before them breaks the pairing.
        leading = _leading_results(messages[index + 1]["content"]) if index + 1 < len(messages) else set()
        uses = [b["id"] for b in content if b["type"] == "tool_use"]
        missing = [u for u in uses if u not in leading]
        if missing:
            return (
                f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message."
            )
        if len(uses) != len(set(uses)):
            return f"messages.{index}.content: `tool_use` ids must be unique"
        asked = set(uses)
    return None


def _leading_results(content: list[dict[str, Any]]) -> set[str]:
    ids = set()
    for block in content:
        if block["type"] != "tool_result":
            break
        ids.add(block["tool_use_id"])
    return ids


def _cache_problem(body: dict[str, Any]) -> str | None:
    blocks = [*(body.get("system") or []), *(b for m in body["messages"] for b in m["content"])]
    marked = [b for b in blocks if isinstance(b, dict) and b.get("cache_control")]
    if len(marked) > MAX_BREAKPOINTS:
        return (
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marked)}."
        )
    return None


@dataclass
class Ledger:
    """Every request the fake provider judged, and the invalid ones with the API's answer."""

    checked: int = 0
    invalid: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> str | None:
        """The ``FakeProviderServer`` validator: judge one body (messages and count_tokens alike)."""
        verdict = problem(body)
        with self._lock:
            self.checked += 1
            if verdict is not None:
                self.invalid.append((verdict, body))
        return verdict
