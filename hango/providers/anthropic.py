"""The ``anthropic`` provider: the Messages API through the official SDK, with a token counter.

The canonical types are shaped like this API, so the conversion is mostly
direct. What it adds: ``cache_control`` breakpoints on the system blocks and
messages that ask for one, consecutive same-role messages merged (the API
rejects them), and blank text blocks dropped (the API rejects those too).

A request with deferred tools (a native deferral) sends them with ``defer_loading``
and Anthropic's BM25 tool search (generally available in the SDK's Messages API:
no beta header); the answer's ``server_tool_use`` and ``tool_search_tool_result``
blocks are kept as they came (``ServerToolBlock``), since the API reads them back
in the history to load the tools their ``tool_reference`` blocks name.
"""

from __future__ import annotations

from typing import Any

import anthropic

from hango.messages import (
    SERVER_TOOL_BLOCKS,
    Message,
    Request,
    Response,
    ServerToolBlock,
    TextBlock,
    ToolDef,
    ToolUseBlock,
    Usage,
    block_to_dict,
    is_sent,
)
from hango.providers.base import ProviderSettings, merge_same_role
from hango.providers.errors import ProviderError, sdk_errors
from hango.providers.hangup import hangs_up
from hango.providers.resend import resends

_EPHEMERAL = {"type": "ephemeral"}
# the provider's tool searches a request may carry (``Request.tool_search``), as the API names them
SEARCH_TOOLS = {"bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}}


class AnthropicProvider:
    """Calls ``POST /v1/messages`` and ``/v1/messages/count_tokens``."""

    name = "anthropic"

    def __init__(self, settings: ProviderSettings) -> None:
        self._settings = settings
        self._client: anthropic.Anthropic | None = None
        if settings.anthropic_api_key:
            # The key comes from hango's config only: passing it stops the SDK from
            # searching the environment and profile files. Retries are the caller's
            # choice, and hango writes its own spans (content only when the tenant allows).
            self._client = anthropic.Anthropic(
                api_key=settings.anthropic_api_key,
                base_url=settings.anthropic_base_url,
                timeout=settings.timeout,
                max_retries=0,
                # a cancel hangs up; a request a closed keep-alive connection dropped is sent once more
                http_client=resends(hangs_up(anthropic.DefaultHttpxClient(timeout=settings.timeout))),
                open_telemetry=False,
            )

    def complete(self, request: Request, *, timeout: float | None = None) -> Response:
        """Send ``request`` to the Messages API and return the canonical answer."""
        client = self._sdk()
        with sdk_errors(self.name, anthropic, self._settings.anthropic_api_key, client.base_url):
            answer = client.messages.create(**wire_body(request), timeout=self._timeout(timeout))
            return parse_message(answer)

    def count_tokens(self, request: Request, *, timeout: float | None = None) -> int | None:
        """The API's count of the input tokens ``request`` would use."""
        client = self._sdk()
        with sdk_errors(self.name, anthropic, self._settings.anthropic_api_key, client.base_url):
            counted = client.messages.count_tokens(**request_payload(request), timeout=self._timeout(timeout))
            return int(counted.input_tokens)

    def close(self) -> None:
        """Close the SDK client's connections."""
        if self._client is not None:
            self._client.close()

    def _sdk(self) -> anthropic.Anthropic:
        if self._client is None:
            raise ProviderError(
                "no Anthropic API key is configured (ANTHROPIC_API_KEY)", {"provider": self.name}
            )
        return self._client

    def _timeout(self, timeout: float | None) -> float:
        return self._settings.timeout if timeout is None else timeout


def wire_body(request: Request) -> dict[str, Any]:
    """The exact ``POST /v1/messages`` body for ``request``: what ``complete`` hands the SDK."""
    return {**request_payload(request), "max_tokens": request.max_tokens}


def request_payload(request: Request) -> dict[str, Any]:
    """The ``messages.create`` / ``count_tokens`` arguments for ``request`` (``max_tokens`` aside)."""
    payload: dict[str, Any] = {
        "model": request.model,
        "messages": [
            _wire_message(m, request.tool_search is not None) for m in merge_same_role(request.messages)
        ],
    }
    if request.system:
        payload["system"] = [
            _cached({"type": "text", "text": b.text}, b.cache_control) for b in request.system
        ]
    if request.tools:
        payload["tools"] = [_wire_tool(t) for t in request.tools]
        if request.tool_search is not None:
            payload["tools"].append(SEARCH_TOOLS[request.tool_search])
    return payload


def _wire_tool(tool: ToolDef) -> dict[str, Any]:
    wire = {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
    return {**wire, "defer_loading": True} if tool.deferred else wire


def _wire_message(message: Message, searching: bool) -> dict[str, Any]:
    """The message as sent; a search's server blocks only while the request carries the search (an
    agent that left native deferral has its found tools sent loaded: the blocks would name no tool)."""
    blocks = [
        block_to_dict(b)
        for b in message.content
        if is_sent(b) and (searching or not isinstance(b, ServerToolBlock))
    ]
    if blocks and message.cache_control:
        blocks[-1] = _cached(blocks[-1], True)
    return {"role": message.role, "content": blocks}


def _cached(block: dict[str, Any], cache_control: bool) -> dict[str, Any]:
    return {**block, "cache_control": _EPHEMERAL} if cache_control else block


def parse_message(answer: anthropic.types.Message) -> Response:
    """The canonical response for a Messages API answer: its text, tool_use and server tool blocks (others,
    such as thinking, are left out)."""
    content: list[TextBlock | ToolUseBlock | ServerToolBlock] = []
    for block in answer.content:
        if block.type == "text":
            content.append(TextBlock(block.text))
        elif block.type == "tool_use":
            content.append(ToolUseBlock(block.id, block.name, dict(block.input)))
        elif block.type in SERVER_TOOL_BLOCKS:  # replayed as they came: the API reads them back
            content.append(ServerToolBlock(block.model_dump(mode="json", exclude_none=True)))
    usage = answer.usage
    return Response(
        message=Message("assistant", tuple(content)),
        stop_reason=answer.stop_reason or "end_turn",
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        tool_searches=tool_searches(usage),
    )


def tool_searches(usage: anthropic.types.Usage) -> int:
    """The tool searches an answer made, from ``usage.server_tool_use.tool_search_requests`` (a count
    the SDK's model keeps as an extra field); 0 when the answer reports none."""
    server = getattr(usage, "server_tool_use", None)
    return int(getattr(server, "tool_search_requests", None) or 0)
