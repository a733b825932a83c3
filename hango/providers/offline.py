"""``offline/echo``: a built-in, deterministic stand-in for a model. Not a language model.

It needs no network and no key, so the whole product works on a machine without
either, and its answer makes "what did the model see?" checkable by eye: it
states how many system blocks, tools and messages it received, the tool names,
and the last user text (quoted, cut to 200 characters).

Tool calls are asked for in the last user message, one per line, each line of
exactly this form (NAME is letters, digits, ``_`` or ``-``; the JSON must be an
object)::

    /tool NAME {json-object}

for example ``/tool read_file {"path": "/notes.md"}``. Several such lines give
several tool_use blocks in one answer, with ids ``toolu_offline_<messages>_<n>``
and stop reason ``tool_use``. If any ``/tool`` line is malformed, no tool is
called and the answer says which line was wrong. When the last user message
holds only tool results, the answer summarizes them and ends the turn, so a run
never loops on the same call. The tool name is not checked against the
request's tools: calling an unknown tool is a case worth testing.

Token usage is a character count // 4 (at least 1) of the request's and the
answer's JSON, all of the prompt as uncached input. There is no token counter.
The gateway then counts the prompt once in the one cache model's units and
splits it into cache read, cache write and uncached input as its reference
model's cache would (``ProviderSpec.simulates``,
``hango/agent/ledger/simulated_cache.py``), and its calls are priced at that
model's prices, labelled simulated.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hango.messages import (
    Message,
    Request,
    Response,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    holds_text,
    message_to_dict,
    text_of,
)
from hango.providers.base import ProviderSettings

LABEL = "[offline/echo · not a language model]"
_TOOL_LINE = re.compile(r"/tool (?P<name>[A-Za-z0-9_-]+) (?P<args>\{.*\})")
_QUOTE_LIMIT = 200
_RESULT_LIMIT = 100


class MalformedToolLine(ValueError):
    """A ``/tool`` line that is not ``/tool NAME {json-object}``."""


class OfflineProvider:
    """The ``offline`` provider: answers by describing the request."""

    name = "offline"

    def __init__(self, settings: ProviderSettings | None = None) -> None:
        """The offline provider needs no settings: it never leaves the process."""

    def complete(self, request: Request, *, timeout: float | None = None) -> Response:
        """Describe ``request``, and call the tools its last user message asks for."""
        content, stop_reason = _answer(request)
        message = Message(role="assistant", content=content)
        usage = Usage(
            input_tokens=_tokens(_request_json(request)),
            output_tokens=_tokens(json.dumps(message_to_dict(message))),
        )
        return Response(message=message, stop_reason=stop_reason, usage=usage)

    def count_tokens(self, request: Request, *, timeout: float | None = None) -> int | None:
        """No token counter: callers use the estimator."""
        return None

    def close(self) -> None:
        """Nothing to release."""


def _answer(request: Request) -> tuple[tuple[TextBlock | ToolUseBlock, ...], str]:
    description = _describe(request)
    last = request.messages[-1] if request.messages else None
    if last is None or last.role != "user":
        return (TextBlock(description),), "end_turn"
    if last.content and all(isinstance(b, ToolResultBlock) for b in last.content):
        return (TextBlock(f"{description}\n{_summarize_results(last)}"),), "end_turn"
    try:
        calls = parse_tool_lines(text_of(last), len(request.messages))
    except MalformedToolLine as exc:
        return (TextBlock(f"{description}\n{exc}"),), "end_turn"
    if not calls:
        return (TextBlock(description),), "end_turn"
    names = ", ".join(call.name for call in calls)
    return (TextBlock(f"{description}\nCalling {len(calls)} tool(s): {names}."), *calls), "tool_use"


def _describe(request: Request) -> str:
    tools = ", ".join(tool.name for tool in request.tools) or "none"
    return (
        f"{LABEL} I received {len(request.system)} system block(s), "
        f"{len(request.tools)} tool(s) ({tools}) and {len(request.messages)} message(s). "
        f"Last user text: {_quote(_last_user_text(request.messages), _QUOTE_LIMIT)}."
    )


def _last_user_text(messages: tuple[Message, ...]) -> str | None:
    for message in reversed(messages):
        if message.role == "user" and holds_text(message):
            return text_of(message)
    return None


def _quote(text: str | None, limit: int) -> str:
    if text is None:
        return "(none)"
    return json.dumps(text[:limit] + ("…" if len(text) > limit else ""), ensure_ascii=False)


def parse_tool_lines(text: str, message_count: int) -> list[ToolUseBlock]:
    """The tool calls that ``/tool NAME {json-object}`` lines of ``text`` ask for."""
    calls: list[ToolUseBlock] = []
    for line in map(str.strip, text.splitlines()):
        if line != "/tool" and not line.startswith("/tool "):
            continue
        match = _TOOL_LINE.fullmatch(line)
        arguments = _json_object(match.group("args")) if match else None
        if match is None or arguments is None:
            raise MalformedToolLine(
                f"The line {_quote(line, _RESULT_LIMIT)} is malformed, so no tool was called: "
                "expected /tool NAME {json-object}."
            )
        calls.append(ToolUseBlock(f"toolu_offline_{message_count}_{len(calls)}", match["name"], arguments))
    return calls


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _summarize_results(message: Message) -> str:
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    lines = [f"Received {len(results)} tool result(s):"]
    for result in results:
        flag = " (error)" if result.is_error else ""
        lines.append(f"- {result.tool_use_id}{flag}: {_quote(result.content, _RESULT_LIMIT)}")
    return "\n".join(lines)


def _request_json(request: Request) -> str:
    payload = {
        "system": [block.text for block in request.system],
        "tools": [[tool.name, tool.description, tool.input_schema] for tool in request.tools],
        "messages": [message_to_dict(message) for message in request.messages],
    }
    return json.dumps(payload, sort_keys=True)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)
