"""Helpers of the call ledger tests: wire hashes computed independently, and the calls API."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hango.agent.parts import SourcedMessage, message_part
from hango.messages import Message, TextBlock
from tests.inspector.conftest import Lab

LONG_PROMPT = "You answer questions about the garden, its plants and their care. " * 160  # > 1,024 tokens


def digest(*fields: str) -> str:
    """The ledger's hash, computed here on its own: SHA-256 of the NUL-joined fields, 32 hex digits."""
    return hashlib.sha256("\x00".join(fields).encode()).hexdigest()[:32]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _block_fields(block: dict[str, Any]) -> list[str]:
    """One wire content block's fields (its cache mark is not content)."""
    if block["type"] == "text":
        return ["text", block["text"]]
    if block["type"] == "tool_use":
        return ["tool_use", block["id"], block["name"], _json(block["input"])]
    return ["tool_result", block["tool_use_id"], block["content"], "error" if block["is_error"] else "ok"]


def wire_hashes(body: dict[str, Any], blocks: list[int] | None = None) -> list[str]:
    """The hash of every part of a Messages API body the fake received: tools, system blocks, messages.

    The adapter merges consecutive messages of one role (the summary and the user message after it);
    ``blocks`` (content blocks per message part) splits them back where the parts were.
    """
    tools = [
        digest("tool", t["name"], t["description"], _json(t["input_schema"])) for t in body.get("tools", [])
    ]
    system = [digest("system", b["text"]) for b in body.get("system", [])]
    wire = [(m["role"], b) for m in body["messages"] for b in m["content"]]
    sizes = blocks if blocks is not None else [len(m["content"]) for m in body["messages"]]
    assert sum(sizes) == len(wire)
    messages, start = [], 0
    for size in sizes:
        chunk = wire[start : start + size]
        assert len({role for role, _ in chunk}) == 1
        messages.append(digest(chunk[0][0], *(f for _, b in chunk for f in _block_fields(b))))
        start += size
    return tools + system + messages


def listed_calls(lab: Lab, session_id: str, **query: Any) -> dict[str, Any]:
    response = lab.who.get(f"/v1/sessions/{session_id}/calls", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def oldest_first(lab: Lab, session_id: str) -> list[dict[str, Any]]:
    return list(reversed(listed_calls(lab, session_id)["items"]))


def call_detail(lab: Lab, session_id: str, call_id: str) -> dict[str, Any]:
    response = lab.who.get(f"/v1/sessions/{session_id}/calls/{call_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def sent_hashes(lab: Lab, session_id: str) -> list[list[str]]:
    """Every call's part hashes as the ledger has them, oldest call first."""
    return [
        [p["hash"] for p in call_detail(lab, session_id, c["id"])["parts"]]
        for c in oldest_first(lab, session_id)
    ]


def diff(lab: Lab, session_id: str, **query: str) -> dict[str, Any]:
    response = lab.who.get(f"/v1/sessions/{session_id}/context/diff", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def conversation(*blocks: int) -> tuple[SourcedMessage, ...]:
    """Messages of alternating roles with ``blocks`` text blocks each."""
    return tuple(
        SourcedMessage(
            message_part(i + 1),
            Message("user" if i % 2 == 0 else "assistant", tuple(TextBlock(f"b{j}") for j in range(n))),
        )
        for i, n in enumerate(blocks)
    )
