"""A run's tool calls on MCP servers: one held connection per tenant and server in each process.

The model's call to ``<server>__<tool>`` becomes ``tools/call`` on the connection
this process holds for (tenant, server): opened (a stdio server's process started)
at the first call, reused by the next ones, opened again once it broke (the
process exited, an answer passed the cap or was not JSON-RPC), missed a deadline
or was stopped by a cancel, and never shared between two tenants, whose keys
differ. The answer comes back as text the model can read, an error result when
the server failed, and never longer than ``MAX_RESULT_CHARS``. ``close_all`` ends every connection
(a worker's shutdown).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp import types

from hango.mcp.connection import Connection, Limits, PerProcess, ServerFailure, Stop, Stopped, Target

MAX_RESULT_CHARS = 100_000  # what one tool result hands the model at most (the rest is cut, and said so)

Key = tuple[uuid.UUID, uuid.UUID]  # (tenant, server)


@dataclass(frozen=True)
class Answer:
    """What the model receives of one call: the text, and whether it is an error result; ``failure``,
    the server's failure behind an error answer, is for the log (``hango.call_log``), not the model."""

    text: str
    is_error: bool
    failure: ServerFailure | None = None


class Pool:
    """The connections of one process, by tenant and server; each key opened by one caller at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Key, Connection] = {}
        self._opening: dict[Key, threading.Lock] = {}

    def connection(self, key: Key, target: Callable[[], Target], limits: Limits) -> Connection:
        """The live connection for ``key``, opened now when there is none (or it died)."""
        with self._lock:
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:
            held = self._held.get(key)
            if held is not None and held.alive:
                return held
            connection = Connection.open(target(), limits)
            with self._lock:
                self._held[key] = connection
            return connection

    def drop(self, key: Key, connection: Connection) -> None:
        """Close ``connection`` and forget it, so the next call to its server opens a new one."""
        with self._lock:
            if self._held.get(key) is connection:
                del self._held[key]
        connection.close()

    def close_all(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for connection in held:
            connection.close()


pool = PerProcess(Pool)  # this process's connections (a forked worker holds its own)


@dataclass(frozen=True)
class ServerCall:
    """One ``tools/call``: which tenant's server, how to reach it, the tool and its arguments."""

    key: Key
    target: Callable[[], Target]  # opened only when the process holds no live connection for ``key``
    tool: str
    arguments: dict[str, Any]


def call_tool(call: ServerCall, limits: Limits, timeout: float, stop: Stop | None = None) -> Answer:
    """Run ``call`` within ``timeout`` seconds; a server's failure is an error answer, a stopped call
    raises ``Stopped`` (and its connection is not used again: the server may still be working on it)."""
    held = pool()
    try:
        connection = held.connection(call.key, call.target, limits)
    except ServerFailure as exc:
        return Answer(str(exc), True, exc)
    try:
        result = connection.request(
            lambda session: session.call_tool(call.tool, call.arguments), timeout, stop
        )
    except Stopped:
        held.drop(call.key, connection)
        raise
    except ServerFailure as exc:
        if exc.broken:
            held.drop(call.key, connection)
        return Answer(str(exc), True, exc)
    return answer_of(result)


def answer_of(result: types.CallToolResult) -> Answer:
    """The result's content as text (what is not text is named), cut at ``MAX_RESULT_CHARS``."""
    texts = [_text_of(block) for block in result.content]
    if not texts and result.structured_content is not None:
        texts = [json.dumps(result.structured_content, ensure_ascii=False)]
    text = "\n".join(texts) or "(the tool returned no content)"
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[cut: the answer had {len(text):,} characters]"
    return Answer(text, bool(result.is_error))


def _text_of(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.mime_type} {block.type}, {len(block.data):,} base64 characters]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[resource {resource.uri}, {resource.mime_type or 'binary'}]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link {block.uri}: {block.name}]"
    return f"[{getattr(block, 'type', 'content')}]"
