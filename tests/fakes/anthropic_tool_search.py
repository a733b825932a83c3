"""Anthropic's deferred tool loading as its documentation describes it, for the fake provider server.

A tool with ``defer_loading: true`` is sent but is no input until a ``tool_reference`` in the
conversation (a ``tool_search_tool_result`` block the search returned) names it
(``loaded_body``: what the fake counts); a request whose tools are all deferred is refused
with HTTP 400 ``invalid_request_error`` (``deferral_problem``). ``search_answer`` scripts an
answer in which the BM25 search ran: its ``server_tool_use`` and ``tool_search_tool_result``
blocks, then what the model does with the tools it found, and ``usage.server_tool_use``
counts the search (``tool_searches``).
"""

from __future__ import annotations

from typing import Any

from hango.messages import ContentBlock, Message, Response, ServerToolBlock, TextBlock

BM25 = "tool_search_tool_bm25"
ALL_DEFERRED = "All tools have defer_loading set. At least one tool must be non-deferred."


def deferral_problem(body: dict[str, Any]) -> str | None:
    """Why the API refuses ``body``'s deferred tools (every tool deferred), or None."""
    tools = body.get("tools") or []
    if tools and all(isinstance(t, dict) and t.get("defer_loading") for t in tools):
        return ALL_DEFERRED
    return None


def referenced(body: dict[str, Any]) -> set[str]:
    """The tools the conversation's ``tool_reference`` blocks name: the deferred ones loaded."""
    names = set()
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            found = block.get("content") if isinstance(block, dict) else None
            if block.get("type") == "tool_search_tool_result" and isinstance(found, dict):
                names |= {
                    r.get("tool_name") for r in found.get("tool_references") or [] if isinstance(r, dict)
                }
    return names


def loaded_body(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the model reads it: the deferred tools no ``tool_reference`` names left out."""
    tools = body.get("tools")
    if not isinstance(tools, list) or not any(isinstance(t, dict) and t.get("defer_loading") for t in tools):
        return body
    loaded = referenced(body)
    kept = [
        t for t in tools if not (isinstance(t, dict) and t.get("defer_loading")) or t.get("name") in loaded
    ]
    return {**body, "tools": kept}


def tool_searches(message: Message) -> int:
    """The searches an answer's blocks made: its ``server_tool_use`` blocks of a tool search."""
    return sum(
        1
        for b in message.content
        if isinstance(b, ServerToolBlock)
        and b.data.get("type") == "server_tool_use"
        and str(b.data.get("name", "")).startswith("tool_search_tool_")
    )


def search_answer(query: str, found: list[str], then: ContentBlock | str, *, number: int = 1) -> Message:
    """An answer in which the BM25 search for ``query`` found the tools ``found``, then ``then`` (a call
    of one, or a text): the blocks as the API returns them."""
    use_id = f"srvtoolu_fake_{number}"
    use = {"type": "server_tool_use", "id": use_id, "name": BM25, "input": {"query": query}}
    result = {
        "type": "tool_search_tool_result",
        "tool_use_id": use_id,
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": name} for name in found],
        },
    }
    last = TextBlock(then) if isinstance(then, str) else then
    return Message("assistant", (ServerToolBlock(use), ServerToolBlock(result), last))


def server_tool_usage(response: Response) -> dict[str, Any]:
    """``usage.server_tool_use`` of an answer that searched (every count the SDK's model needs)."""
    return {"web_search_requests": 0, "web_fetch_requests": 0, "tool_search_requests": response.tool_searches}
