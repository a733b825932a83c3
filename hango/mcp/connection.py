"""Sessions with MCP servers, driven from sync code through one long-lived event loop per process.

All MCP client work runs on one anyio blocking portal (a thread with its own
event loop), started on first use in each process (a forked worker starts its
own). A ``Connection`` holds one initialized ``ClientSession`` open in a task on
that loop; sync callers send it requests through the portal, each under a
deadline. A Streamable HTTP connection goes only to the address its URL was
checked to resolve to (``hango.mcp.addresses``), reads at most the answer cap
per HTTP answer, and follows no redirect off the URL's origin (the SDK's rule).

What a failure leaves of a connection (``docs/reliability.md``, "An MCP connection's
life"): a JSON-RPC error answer, a missed deadline and a cancel end their request
only (the SDK sends ``notifications/cancelled`` with its id) and keep the session;
an HTTP 404 on a request carrying the session id means the server no longer knows
the session (restarted, or expired it): the connection is lost and the request
never ran; a transport that ended (a process exit, a passed answer cap, garbage)
breaks the connection.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import math
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import httpcore2
import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, INVALID_REQUEST

from hango.config import Config
from hango.mcp.addresses import Network, RefusedAddress, check_endpoint_async, parse_url
from hango.mcp.catalog import CatalogServer
from hango.mcp.stdio import stdio_streams

T = TypeVar("T")
HTTP_FALLBACK = "Server returned an error response"  # the SDK's message for an HTTP error status

SESSION_LOST = "the server no longer knows its session"
SESSION_HEADER = "mcp-session-id"


class ServerFailure(Exception):
    """An MCP server could not be reached or did not answer properly; the message is safe to show.

    ``broken``: the connection is not to be used again (the next call opens a new one).
    ``never_ran``: the server refused the request's session, so the request provably did not run.
    """

    def __init__(self, message: str, broken: bool = True, never_ran: bool = False) -> None:
        super().__init__(message)
        self.broken, self.never_ran = broken, never_ran


class Stopped(Exception):
    """A cancel stopped the request before its answer came."""


class AnswerTooLarge(ServerFailure):
    """An answer passed the size cap."""


class NoAnswerInTime(ServerFailure):
    """A request passed its deadline: that request is cancelled, the session stays (the protocol's rule)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, broken=False)


@dataclass(frozen=True)
class Limits:
    """The deadlines and caps of every MCP exchange (``HANGO_MCP_*``)."""

    connect_timeout: float
    call_timeout: float
    max_answer_bytes: int
    allowed: tuple[Network, ...] = ()
    pool_idle_seconds: float = 300.0  # a held connection no call used for this long is closed
    pool_max: int = 32  # connections one process holds at most (the least recently used goes first)

    @classmethod
    def from_config(cls, config: Config) -> Limits:
        return cls(
            config.mcp_connect_timeout,
            config.mcp_call_timeout,
            config.mcp_max_answer_bytes,
            tuple(config.mcp_networks),
            config.mcp_pool_idle_seconds,
            config.mcp_pool_max,
        )


@dataclass(frozen=True)
class Target:
    """Where one server is: an operator catalog command, or a URL with its (opened) headers."""

    name: str
    command: CatalogServer | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # secrets: never in a repr or log


# -- the loop ---------------------------------------------------------------------------------


class PerProcess(Generic[T]):
    """One ``make()`` per process, made on first use: a forked child makes its own."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make, self._lock = make, threading.Lock()
        self._made: tuple[int, T] | None = None

    def __call__(self) -> T:
        with self._lock:
            if self._made is None or self._made[0] != os.getpid():
                self._made = (os.getpid(), self._make())
            return self._made[1]


def _start_portal() -> BlockingPortal:
    manager = start_blocking_portal()
    started = manager.__enter__()
    atexit.register(manager.__exit__, None, None, None)
    return started


portal = PerProcess(_start_portal)  # this process's event loop thread for MCP work


# -- HTTP with a checked address and an answer cap --------------------------------------------


class _PinnedBackend(httpcore2.AsyncNetworkBackend):
    """Connects every TCP stream to one checked address, whatever the host name (TLS still checks the name)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.inner = httpcore2.AnyIOBackend()

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return await self.inner.connect_tcp(self.address, port, timeout, local_address, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, transport: _GuardedTransport) -> None:
        self.inner, self.transport, self.read = inner, transport, 0

    async def __aiter__(self):
        async for chunk in self.inner:
            self.read += len(chunk)
            if self.read > self.transport.cap:
                # the SDK turns a broken stream into its own error: the connection remembers why
                reason = f"the answer passed {self.transport.cap:,} bytes"
                self.transport.ended(reason)
                raise AnswerTooLarge(reason)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _GuardedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport on a pool pinned to ``address``, each answer's body capped at ``cap`` bytes."""

    def __init__(self, address: str, cap: int, connection: Connection) -> None:
        super().__init__()
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(), network_backend=_PinnedBackend(address)
        )
        self.cap, self.ended, self.lost = cap, connection.end, connection.lose
        self.connection = connection

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await super().handle_async_request(request)
        if response.status_code == 404 and SESSION_HEADER in request.headers:
            self.lost()  # the spec's word for a session the server ended: a new one must be started
        if response.status_code >= 400:
            # the SDK reports a refused request without its status: the connection keeps it to say so
            self.connection.http_status = response.status_code
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self),
            extensions=response.extensions,
        )


async def _http_streams(stack: contextlib.AsyncExitStack, connection: Connection):
    target, limits = connection.target, connection.limits
    try:
        address = await check_endpoint_async(parse_url(target.url or ""), limits.allowed)
    except RefusedAddress as exc:
        raise ServerFailure(str(exc)) from None
    client = httpx2.AsyncClient(
        transport=_GuardedTransport(address, limits.max_answer_bytes, connection),
        headers=target.headers,
        timeout=httpx2.Timeout(limits.call_timeout, connect=limits.connect_timeout),
    )
    await stack.enter_async_context(client)
    # the transport's cap bounds every answer, an SSE stream's events included, so it is the one rule
    streams = streamable_http_client(target.url or "", http_client=client, max_sse_event_size=None)
    return await stack.enter_async_context(streams)


async def _stdio_streams(stack: contextlib.AsyncExitStack, connection: Connection):
    command = connection.target.command
    assert command is not None
    streams = stdio_streams(command, connection.limits.max_answer_bytes, connection.end)
    return await stack.enter_async_context(streams)


# -- a held session ---------------------------------------------------------------------------


class Stop:
    """A request a cancel may stop from another thread: its task on the loop is cancelled at once (the
    SDK then sends the server ``notifications/cancelled`` with its id; the session stays)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._future: concurrent.futures.Future | None = None
        self.stopped = False

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            if self._future is not None:
                self._future.cancel()

    def watch(self, future: concurrent.futures.Future) -> None:
        """``future`` is the request now in flight (one stopped before is cancelled at once)."""
        with self._lock:
            self._future = future
            if self.stopped:
                future.cancel()


class Connection:
    """One initialized session with one server, held open on the MCP loop until closed or dead."""

    def __init__(self, target: Target, limits: Limits) -> None:
        self.target, self.limits = target, limits
        self.session: ClientSession | None = None
        self.ended: str | None = None  # why the server's answers stopped, once its transport said so
        self.lost = False  # the server answered 404 to the session: its requests were refused unread
        self.http_status: int | None = None  # the last HTTP error status the server answered
        self._closed: anyio.Event | None = None
        self._done = False

    @classmethod
    def open(cls, target: Target, limits: Limits) -> Connection:
        """Start the server (stdio) or reach it (HTTP) and initialize the session, within the connect deadline."""
        connection = cls(target, limits)
        ready: threading.Event = threading.Event()
        failure: list[BaseException] = []
        portal().start_task_soon(connection._hold, ready, failure)
        if not ready.wait(limits.connect_timeout + 5) and not failure:
            connection.close()
            raise ServerFailure(f"server {target.name!r} did not start within {limits.connect_timeout:g} s")
        if failure:
            raise ServerFailure(f"server {target.name!r}: {connection.ended or connection.told(failure[0])}")
        return connection

    def end(self, reason: str) -> None:
        """The transport's word that the server's answers stopped, and why (the first reason stays)."""
        self.ended = self.ended or reason

    def lose(self) -> None:
        """The server no longer knows the session: every later request on it is refused."""
        self.lost = True
        self.end(SESSION_LOST)

    async def _hold(self, ready: threading.Event, failure: list[BaseException]) -> None:
        self._closed = anyio.Event()
        try:
            # one scope around the whole hold (the SDK's task groups must close inside it): the connect
            # deadline first, lifted once the session is up
            with anyio.CancelScope(deadline=anyio.current_time() + self.limits.connect_timeout) as scope:
                async with contextlib.AsyncExitStack() as stack:
                    if self.target.url is not None:
                        read, write = await _http_streams(stack, self)
                    else:
                        read, write = await _stdio_streams(stack, self)
                    session = ClientSession(read, write, read_timeout_seconds=self.limits.call_timeout)
                    self.session = await stack.enter_async_context(session)
                    await self.session.initialize()
                    scope.deadline = math.inf
                    ready.set()
                    await self._closed.wait()
            if scope.cancelled_caught and not ready.is_set():
                failure.append(TimeoutError())
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:  # a dead server is a value here, never a crash of the loop
            failure.append(exc)
        finally:
            self._done = True
            ready.set()

    @property
    def alive(self) -> bool:
        return self.session is not None and not self._done and self.ended is None

    def request(
        self,
        work: Callable[[ClientSession], Awaitable[T]],
        timeout: float | None = None,
        stop: Stop | None = None,
    ) -> T:
        """Send one request on the session under ``timeout`` (the call deadline when None); every failure
        is a ServerFailure, a request ``stop`` stopped raises ``Stopped``."""
        session = self.session
        if session is None or not self.alive:
            raise ServerFailure(f"server {self.target.name!r} is not running", never_ran=True)  # nothing sent
        deadline = self.limits.call_timeout if timeout is None else timeout

        async def bounded() -> T:
            with anyio.fail_after(deadline):
                return await work(session)

        future = portal().start_task_soon(bounded)
        if stop is not None:
            stop.watch(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise Stopped() from None
        except TimeoutError:
            raise NoAnswerInTime(f"server {self.target.name!r}: no answer in time ({deadline:g} s)") from None
        except BaseException as failure:  # the server's fault, told to the caller
            raise self._failure(failure) from None

    def _failure(self, failure: BaseException) -> ServerFailure:
        name = self.target.name
        if isinstance(failure, MCPError) and failure.code == INVALID_REQUEST and self.lost:
            return ServerFailure(f"server {name!r}: {SESSION_LOST}", never_ran=True)
        if isinstance(failure, MCPError) and failure.code != CONNECTION_CLOSED and self.ended is None:
            # a JSON-RPC error answer: the server is well, the request was not
            return ServerFailure(f"server {name!r}: {self.told(failure)}", broken=False)
        return ServerFailure(f"server {name!r}: {self.ended or describe(failure, self.limits)}")

    def told(self, failure: BaseException) -> str:
        """``describe(failure)``, with the HTTP status when the SDK stood a generic error in for it."""
        while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
            failure = failure.exceptions[0]
        status = self.http_status
        if isinstance(failure, MCPError) and failure.message == HTTP_FALLBACK and status is not None:
            refused = " (the server refused the credentials in its headers)" if status in (401, 403) else ""
            return f"the server answered HTTP {status}{refused}"
        return describe(failure)

    def close(self) -> None:
        """Stop the session (and a stdio server's process) without waiting for it to go."""
        closed = self._closed
        if closed is not None and not self._done:
            portal().call(closed.set)


def describe(exc: BaseException, limits: Limits | None = None) -> str:
    """What went wrong, in words safe to show a tenant: never a header, never a traceback."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "no answer in time" + (f" ({limits.call_timeout:g} s)" if limits else "")
    if isinstance(exc, ServerFailure):
        return str(exc)
    if isinstance(exc, MCPError):
        return f"the server answered with error {exc.code}: {exc.message[:500]}"
    if isinstance(exc, FileNotFoundError):
        return "its command was not found"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, httpx2.TransportError | OSError | anyio.ClosedResourceError | anyio.EndOfStream):
        return f"the connection failed ({type(exc).__name__})"
    return f"the exchange failed ({type(exc).__name__})"
