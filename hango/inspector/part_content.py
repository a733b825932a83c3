"""One part's whole content (inspect's ``full=``): what it holds before overrides and what is sent."""

from __future__ import annotations

from typing import Any

from hango.agent.draft import Draft
from hango.agent.estimator import estimate_block, estimate_message, estimate_tool
from hango.agent.overrides import REPLACE
from hango.agent.parts import MalformedPart, PartID, kind_of, part_of
from hango.errors import NotFound, Unprocessable
from hango.inspector.inspection import Assembly
from hango.messages import block_to_dict


def full_part(assembly: Assembly, part: PartID) -> dict[str, Any]:
    """One part's whole content before overrides and, when it is replaced, the replacement that is sent."""
    try:
        kind = kind_of(part)
    except MalformedPart:
        raise Unprocessable(
            f"{part!r} is not a part id", code="malformed_part", details={"parts": [part]}
        ) from None
    found = content_of(assembly.draft, part)
    if found is None:
        raise NotFound(f"{part} is not part of this session's next request")
    content, tokens = found
    override = assembly.state.overrides.get(part)
    replaced = override is not None and override.action == REPLACE
    sent = content_of(assembly.captured, part) if replaced else None
    return {
        "id": part,
        "kind": kind,
        "content": content,
        "original_tokens": tokens,
        "replacement": override.replacement if replaced else None,
        "tokens": tokens if sent is None else sent[1],
    }


def content_of(draft: Draft, part: PartID) -> tuple[Any, int] | None:
    """``part``'s content in ``draft`` and its estimate (only that part is estimated), or None."""
    for sourced in draft.system:
        if sourced.part == part:
            return sourced.block.text, estimate_block(sourced.block)
    for tool in draft.every_tool:
        if part_of(tool) == part:
            return {"description": tool.description, "input_schema": tool.input_schema}, estimate_tool(tool)
    for message in draft.messages:
        if message.part == part:
            return [block_to_dict(b) for b in message.message.content], estimate_message(message.message)
    return None
