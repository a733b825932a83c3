"""How the inspector names parts for people: labels, the tools a message holds, one-line previews."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hango.agent.parts import (
    PREVIEW_CHARS,
    SCRATCH_PART_KIND,
    SUMMARY,
    PartID,
    is_server_part,
    seq_of,
    shown_tool_name,
    tool_server,
)
from hango.messages import ContentBlock, Message, ServerToolBlock, TextBlock, ToolResultBlock, ToolUseBlock

# ``json.dumps(value, ensure_ascii=False)`` exactly, without building an encoder for every call
_json = json.JSONEncoder(ensure_ascii=False).encode


def label_of(part: PartID) -> str:
    """A short label for a part id: ``agent``, ``memory /memories/AGENTS.md``, ``read_file``, ``#7``,
    ``git/git_status``, ``server git`` (``tool:git/*``)."""
    if part == SUMMARY:
        return "summary"
    if is_server_part(part):
        return f"server {tool_server(part)}"
    kind, _, rest = part.partition(":")
    if kind == "system":
        return rest.replace("memory:", "memory ", 1)
    if kind == SCRATCH_PART_KIND:
        return f"try #{seq_of(part)}"
    return f"#{rest}" if kind == "message" else rest


def message_label(part: PartID, message: Message, tool_names: dict[str, str]) -> str:
    """``#7 assistant · tool_use read_file`` — seq, role, and what the message holds."""
    return labelled(part, message, held(message, tool_names)[0])


def labelled(part: PartID, message: Message, kinds: list[str]) -> str:
    """A message's label from the kinds ``held`` found in it."""
    if part == SUMMARY:
        return "summary of earlier messages"
    return f"{label_of(part)} {message.role} · {', '.join(kinds)}"


def held(message: Message, tool_names: dict[str, str]) -> tuple[list[str], tuple[str, ...]]:
    """What the blocks hold, each once in order: kinds (``text``, ``tool_use read_file``, ``tool_result
    grep``: a result names the tool it answers) and the tools called or answered (most messages call
    none: the shared empty tuple), an MCP server's tool as ``<server>/<tool>`` (``shown_tool_name``)."""
    content = message.content
    if len(content) == 1 and isinstance(content[0], TextBlock):  # most messages: one text
        return ["text"], ()
    kinds: list[str] = []
    tools: list[str] = []
    for block in content:
        if isinstance(block, ToolUseBlock):
            tool: str | None = shown_tool_name(block.name)
            kind = f"tool_use {tool}"
        elif isinstance(block, ToolResultBlock):
            answered = tool_names.get(block.tool_use_id)
            tool = "?" if answered is None else shown_tool_name(answered)
            kind = f"tool_result {tool}"
        else:
            tool, kind = None, "text"
        if kind not in kinds:
            kinds.append(kind)
        if tool is not None and tool not in tools:
            tools.append(tool)
    return kinds, tuple(tools)


def message_preview(message: Message) -> str:
    """A message's first 200 characters as one line (text, tool calls, results); stops once it has them.

    No block is rendered whole: texts are sliced, and a tool call's input is
    clipped before it is written as JSON (``clipped``), so the cost follows the
    preview's length, not the message's.
    """
    content = message.content
    if len(content) == 1 and isinstance(content[0], TextBlock):  # most messages: one text
        return content[0].text[: PREVIEW_CHARS + 1]
    text = ""
    for block in content:
        if len(text) >= PREVIEW_CHARS:
            break
        # one character more than a preview shows, so a block that long still reads as cut
        text += (" · " if text else "") + _block_text(block)[: PREVIEW_CHARS + 1]
    return text


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return f"{block.name}({_json(clipped(block.input, PREVIEW_CHARS))})"
    if isinstance(block, ServerToolBlock):
        return _json(clipped(block.data, PREVIEW_CHARS))
    return block.content


def clipped(value: Any, limit: int) -> Any:
    """``value`` (parsed JSON) cut so that its JSON text starts with the same ``limit`` characters.

    A string keeps its first ``limit`` characters and a list or object its first
    ``limit`` items: each of them writes at least one character, so whatever is
    cut starts past ``limit`` characters of the text.
    """
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, list):
        return [clipped(item, limit) for item in value[:limit]]
    if isinstance(value, dict):
        items = itertools.islice(value.items(), limit)
        return {clipped(key, limit): clipped(item, limit) for key, item in items}
    return value
