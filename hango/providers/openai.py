"""The ``openai`` provider: chat completions through the official SDK, against any compatible server.

OpenAI itself, vLLM, Ollama and llama.cpp all serve ``POST <base_url>/chat/completions``.
The conversion from the canonical (Anthropic-shaped) request:

- system blocks are joined into one ``system`` message; ``cache_control`` is
  dropped (these servers cache prefixes on their own, with no breakpoints);
- an assistant ``tool_use`` block becomes a ``tool_calls`` entry (arguments as a
  JSON string); each user ``tool_result`` block becomes its own ``role: "tool"``
  message, and the user's text after them one ``user`` message. The API has no
  error flag on a tool result, so an error result's content starts with ``Error:``;
- ``max_tokens`` is sent as ``max_tokens``, which every compatible server reads.

And back: ``tool_calls`` become tool_use blocks, the finish reason maps to the
canonical stop reason, and usage is split so that, as with Anthropic,
``input_tokens`` excludes the cache reads (``prompt_tokens`` includes them):
input + output + cache tokens is then what the call cost, with nothing counted twice.
There is no token counter.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from hango.messages import (
    Message,
    Request,
    Response,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    holds_text,
    text_of,
)
from hango.providers.base import ProviderSettings, merge_same_role
from hango.providers.errors import ProviderError, sdk_errors
from hango.providers.hangup import hangs_up
from hango.providers.resend import resends

# Local compatible servers need no key, but the SDK refuses to start without one.
_NO_KEY = "no-key"
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAIProvider:
    """Calls ``POST <base_url>/chat/completions``."""

    name = "openai"

    def __init__(self, settings: ProviderSettings) -> None:
        self._settings = settings
        self._client = openai.OpenAI(
            api_key=settings.openai_api_key or _NO_KEY,
            base_url=settings.openai_base_url,
            timeout=settings.timeout,
            max_retries=0,
            # a cancel hangs up; a request a closed keep-alive connection dropped is sent once more
            http_client=resends(hangs_up(openai.DefaultHttpxClient(timeout=settings.timeout))),
        )

    def complete(self, request: Request, *, timeout: float | None = None) -> Response:
        """Send ``request`` as a chat completion and return the canonical answer."""
        timeout = self._settings.timeout if timeout is None else timeout
        with sdk_errors(self.name, openai, self._settings.openai_api_key, self._client.base_url):
            answer = self._client.chat.completions.create(**wire_body(request), timeout=timeout)
            return parse_completion(answer)

    def count_tokens(self, request: Request, *, timeout: float | None = None) -> int | None:
        """No token counter in this API: callers use the estimator."""
        return None

    def close(self) -> None:
        """Close the SDK client's connections."""
        self._client.close()


def wire_body(request: Request) -> dict[str, Any]:
    """The exact ``POST /chat/completions`` body for ``request``: the ``chat.completions.create`` arguments."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": "\n\n".join(b.text for b in request.system)})
    for message in merge_same_role(request.messages):
        messages.extend(_wire_messages(message))
    payload: dict[str, Any] = {"model": request.model, "messages": messages, "max_tokens": request.max_tokens}
    if request.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in request.tools
        ]
    return payload


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return [_assistant_message(message)]
    return _user_messages(message)


def _assistant_message(message: Message) -> dict[str, Any]:
    text = text_of(message)
    calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
    if not calls:
        return {"role": "assistant", "content": text}
    tool_calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.input)}}
        for c in calls
    ]
    return {"role": "assistant", "content": text or None, "tool_calls": tool_calls}


def _user_messages(message: Message) -> list[dict[str, Any]]:
    """One ``tool`` message per tool result, then the user's text, in the order the API wants."""
    wires: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b.tool_use_id, "content": _result_text(b)}
        for b in message.content
        if isinstance(b, ToolResultBlock)
    ]
    if holds_text(message):
        wires.append({"role": "user", "content": text_of(message)})
    return wires


def _result_text(result: ToolResultBlock) -> str:
    return f"Error: {result.content}" if result.is_error else result.content


def parse_completion(answer: openai.types.chat.ChatCompletion) -> Response:
    """The canonical response for a chat completion (its first choice)."""
    choice = answer.choices[0]
    content: list[TextBlock | ToolUseBlock] = []
    if choice.message.content:
        content.append(TextBlock(choice.message.content))
    for call in choice.message.tool_calls or ():
        content.append(
            ToolUseBlock(call.id, call.function.name, _arguments(call.function.name, call.function.arguments))
        )
    # Some compatible servers finish a tool call with "stop"; the blocks say what happened.
    calls = any(isinstance(b, ToolUseBlock) for b in content)
    stop_reason = "tool_use" if calls else _STOP_REASONS.get(choice.finish_reason, choice.finish_reason)
    return Response(Message("assistant", tuple(content)), stop_reason or "end_turn", _usage(answer.usage))


def _arguments(tool: str, arguments: str | None) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ProviderError(
            "openai sent a tool call whose arguments are not a JSON object",
            {"provider": "openai", "tool": tool},
        )
    return value


def _usage(usage: openai.types.CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens if details else None) or 0
    return Usage(
        input_tokens=max(0, usage.prompt_tokens - cached),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cached,
    )
