"""Provider-neutral request types, shaped like the Anthropic Messages API.

Content blocks are stored in ``messages.content`` as the dicts that
``block_to_dict`` produces, so the stored shape and the canonical shape are one.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ServerToolBlock:
    """A block of a tool the provider runs itself (Anthropic's ``server_tool_use`` and its result, e.g.
    ``tool_search_tool_result``), kept as the provider gave it: the API reads it back in the history."""

    data: dict[str, Any]

    @property
    def referenced_tools(self) -> tuple[str, ...]:
        """The tools a tool search result references (``tool_reference`` blocks), by name; none for others."""
        content = self.data.get("content")
        if self.data.get("type") != TOOL_SEARCH_RESULT or not isinstance(content, dict):
            return ()
        references = content.get("tool_references") or ()
        return tuple(r["tool_name"] for r in references if isinstance(r, dict) and "tool_name" in r)


SERVER_TOOL_BLOCKS = frozenset({"server_tool_use", "tool_search_tool_result"})
TOOL_SEARCH_RESULT = "tool_search_tool_result"

ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | ServerToolBlock


@dataclass(frozen=True)
class Block:
    """One system block; ``cache_control`` marks a prompt-cache breakpoint."""

    text: str
    cache_control: bool = False


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    input_schema: dict[str, Any]
    # the inspector's part id, when the name is a substitute it cannot be read from (never sent)
    part: str | None = field(default=None, compare=False)
    # sent with the provider's deferred loading (Anthropic's ``defer_loading``): not input until referenced
    deferred: bool = False


@dataclass(frozen=True)
class Message:
    """One message; ``cache_control`` puts a breakpoint on its last content block."""

    role: Role
    content: tuple[ContentBlock, ...]
    cache_control: bool = False


@dataclass(frozen=True)
class Request:
    model: str
    system: tuple[Block, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    messages: tuple[Message, ...] = ()
    max_tokens: int = 4096
    # the provider's own search over the ``deferred`` tools (``"bm25"``), carried with them; None: no search
    tool_search: str | None = None


@dataclass(frozen=True)
class Usage:
    """A call's tokens as the provider reported them: ``input_tokens`` excludes the cache reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def prompt_tokens(self) -> int:
        """The prompt the provider counted: read from the cache, written to it, and neither."""
        return prompt_tokens(self)


# The token fields of a call's usage, everywhere they are named: ``Usage``, a call's usage dict, the
# ``usage_records`` columns and the API's ``usage`` objects.
TOKEN_FIELDS = tuple(f.name for f in fields(Usage))


def prompt_tokens(usage: Any) -> Any:
    """The prompt the provider counted (read from the cache, written to it, and neither) of a usage: a
    ``Usage``, a stored row or a table's columns (then a SQL expression), or a usage mapping (a call's
    usage dict, the API's ``usage`` object)."""
    get = usage.__getitem__ if isinstance(usage, Mapping) else functools.partial(getattr, usage)
    return get("input_tokens") + get("cache_read_tokens") + get("cache_write_tokens")


@dataclass(frozen=True)
class Response:
    message: Message
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    tool_searches: int = 0  # the provider's own tool searches the answer made (``usage.server_tool_use``)


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    """The stored (and Anthropic) JSON shape of a content block."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ServerToolBlock):
        return block.data
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content,
        "is_error": block.is_error,
    }


def block_from_dict(data: dict[str, Any]) -> ContentBlock:
    """Parse one stored content block; raises ``ValueError`` on an unknown type."""
    kind = data.get("type")
    # positional arguments: a history of 10,000 messages is parsed on every inspect and run
    if kind == "text":
        return TextBlock(data["text"])
    if kind == "tool_use":
        return ToolUseBlock(data["id"], data["name"], dict(data.get("input") or {}))
    if kind == "tool_result":
        return ToolResultBlock(
            data["tool_use_id"], data.get("content", ""), bool(data.get("is_error", False))
        )
    if kind in SERVER_TOOL_BLOCKS:
        return ServerToolBlock(data)
    raise ValueError(f"unknown content block type: {kind!r}")


def referenced_tools(messages: Iterable[Message]) -> frozenset[str]:
    """The tools the provider's search results in ``messages`` reference: the ones it loads from them."""
    return frozenset(
        name
        for message in messages
        if len(message.content) > 1  # a search's answer holds its call, its result and more
        for block in message.content
        if isinstance(block, ServerToolBlock)
        for name in block.referenced_tools
    )


def message_to_dict(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": [block_to_dict(b) for b in message.content]}


def message_from_dict(data: dict[str, Any]) -> Message:
    return Message(role=data["role"], content=tuple(block_from_dict(b) for b in data["content"]))


def text_of(message: Message) -> str:
    """The concatenated text blocks of a message the provider receives (``is_sent``: no blank text)."""
    return "\n".join(b.text for b in message.content if isinstance(b, TextBlock) and is_sent(b))


def is_sent(block: ContentBlock) -> bool:
    """Whether the provider receives ``block``: every block but a blank text (the adapters leave it out)."""
    # ``isspace`` tells a blank text without copying it, as ``strip`` would
    return not isinstance(block, TextBlock) or (bool(block.text) and not block.text.isspace())


def holds_text(message: Message) -> bool:
    """True when ``message`` sends at least one text block (``is_sent``: a tool-only message, or one whose
    texts are blank, holds none)."""
    return any(isinstance(b, TextBlock) and is_sent(b) for b in message.content)
