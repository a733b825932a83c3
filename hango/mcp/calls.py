"""A run's tool calls on MCP servers: a pool of held connections per process, by tenant and server.

The model's call to ``<server>__<tool>`` becomes ``tools/call`` on the connection
this process holds for (tenant, server): opened (a stdio server's process started)
at the first call, shared by the calls after it, concurrent ones included, and never
shared between two tenants, whose keys differ. A call's deadline or cancel ends that
call only (``hango.mcp.connection``); a connection that broke is forgotten at once
and closed once no call uses it; one whose session the server refused is replaced,
and the call, which never ran, is tried once more on the new session.

The pool is bounded (``HANGO_MCP_POOL_MAX``, ``HANGO_MCP_POOL_IDLE_SECONDS``): a
connection no call used for the idle time is closed, and past the cap the least
recently used idle one goes. A connection to a server deleted, or attached to no
agent any more, is closed at the next sweep once the process was told how to check
(``watch``, the worker's database). No connection is closed while a call uses it.
The answer comes back as text the model can read, an error result when the server
failed, and never longer than ``MAX_RESULT_CHARS``. ``close_all`` ends every
connection (a worker's shutdown).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp import types

from hango.mcp.connection import Connection, Limits, PerProcess, ServerFailure, Stop, Target

MAX_RESULT_CHARS = 100_000  # what one tool result hands the model at most (the rest is cut, and said so)
MAX_SWEEP_INTERVAL = 5.0  # seconds between the pool's sweeps at most (a deleted server ends within it)

Key = tuple[uuid.UUID, uuid.UUID]  # (tenant, server)
Kept = Callable[[set[Key]], set[Key]]  # of these keys, the ones whose server still exists and is attached

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    """What the model receives of one call: the text, and whether it is an error result; ``failure``,
    the server's failure behind an error answer, is for the log (``hango.call_log``), not the model."""

    text: str
    is_error: bool
    failure: ServerFailure | None = None


@dataclass(eq=False)
class _Held:
    """One pooled connection, the calls using it now, and when the last one ended."""

    connection: Connection
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)
    retired: bool = False  # forgotten by the pool: closed when its last call ends

    def idle_for(self, now: float) -> float:
        return now - self.last_used if self.users == 0 else 0.0


class Pool:
    """The connections of one process, by tenant and server, least recently used first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: OrderedDict[Key, _Held] = OrderedDict()
        self._opening: dict[Key, threading.Lock] = {}
        self._bounds = Limits(0, 0, 0)
        self._kept: Kept | None = None
        self._sweeper: threading.Thread | None = None
        self._stopped = threading.Event()

    @contextlib.contextmanager
    def lease(self, key: Key, target: Callable[[], Target], limits: Limits) -> Iterator[Connection]:
        """The live connection for ``key`` (opened now when there is none or it died), held for one call:
        the pool never closes it meanwhile. A broken one is forgotten, and closed when no call uses it."""
        held = self._take(key, target, limits)
        try:
            yield held.connection
        except ServerFailure as exc:
            if exc.broken:
                self._retire(key, held)
            raise
        finally:
            self._give_back(held)

    def _take(self, key: Key, target: Callable[[], Target], limits: Limits) -> _Held:
        with self._lock:
            self._bounds = limits
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:
            with self._lock:
                held = self._held.get(key)
                if held is not None and held.connection.alive:
                    held.users += 1
                    self._held.move_to_end(key)
                    return held
            if held is not None:
                self._retire(key, held)
            connection = Connection.open(target(), limits)
            with self._lock:
                held = self._held[key] = _Held(connection, users=1)
            self._start_sweeping()
            self.sweep()  # a new connection may pass the cap: the least recently used idle one goes
            return held

    def _give_back(self, held: _Held) -> None:
        with self._lock:
            held.users -= 1
            held.last_used = time.monotonic()
            done = held.retired and held.users == 0
        if done:
            held.connection.close()

    def _retire(self, key: Key, held: _Held) -> None:
        """Forget ``held`` so the next call opens a new connection; close it now if no call uses it."""
        with self._lock:
            if self._held.get(key) is held:
                del self._held[key]
            held.retired = True
            unused = held.users == 0
        if unused:
            held.connection.close()

    def watch(self, kept: Kept | None) -> None:
        """Check at each sweep which held servers still exist and are attached (the worker's database)."""
        self._kept = kept

    def sweep(self) -> None:
        """Close the idle connections: unused past the idle time, past the cap (least recently used
        first), or to a server ``watch`` says is gone. A connection in use is never closed here."""
        now = time.monotonic()
        with self._lock:
            idle = [key for key, held in self._held.items() if held.users == 0]
            bounds = self._bounds
        gone = self._gone(set(idle)) if idle else set()
        with self._lock:
            ending = [
                key
                for key in idle
                if key in self._held
                and self._held[key].users == 0
                and (key in gone or self._held[key].idle_for(now) >= bounds.pool_idle_seconds)
            ]
            over = len(self._held) - len(ending) - bounds.pool_max
            for key, held in self._held.items():
                if over <= 0:
                    break
                if held.users == 0 and key not in ending:
                    ending.append(key)
                    over -= 1
            closing = [self._held.pop(key) for key in ending]
        for held in closing:
            held.connection.close()

    def _gone(self, keys: set[Key]) -> set[Key]:
        if self._kept is None:
            return set()
        try:
            return keys - self._kept(keys)
        except Exception:  # the database is away: keep every connection until it answers again
            log.warning("could not check which MCP servers still exist", exc_info=True)
            return set()

    def _start_sweeping(self) -> None:
        with self._lock:
            if self._sweeper is not None:
                return
            self._sweeper = threading.Thread(
                target=self._sweep_until_stopped, name="hango-mcp-pool", daemon=True
            )
        self._sweeper.start()

    def _sweep_until_stopped(self) -> None:
        while not self._stopped.wait(min(MAX_SWEEP_INTERVAL, max(0.1, self._bounds.pool_idle_seconds / 4))):
            self.sweep()

    def held(self) -> int:
        """How many connections the pool holds now."""
        with self._lock:
            return len(self._held)

    def close_all(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), OrderedDict()
        for entry in held:
            entry.connection.close()


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
    raises ``Stopped`` (the server is told to cancel it; its connection serves the next calls). A call
    the server refused with its session, so never ran, is tried once more on a new session."""
    deadline = time.monotonic() + timeout
    try:
        return _call_once(call, limits, timeout, stop)
    except ServerFailure as exc:
        if not exc.never_ran:
            return Answer(str(exc), True, exc)
    try:  # on a new session, in the time left: the refused call never ran
        return _call_once(call, limits, max(0.0, deadline - time.monotonic()), stop)
    except ServerFailure as exc:
        return Answer(str(exc), True, exc)


def _call_once(call: ServerCall, limits: Limits, timeout: float, stop: Stop | None) -> Answer:
    with pool().lease(call.key, call.target, limits) as connection:
        result = connection.request(
            lambda session: session.call_tool(call.tool, call.arguments), timeout, stop
        )
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
