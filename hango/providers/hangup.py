"""Hanging up a model call in flight: a cancel closes the call's connection instead of waiting for its answer.

The SDKs read an answer with a blocking ``recv`` bounded by the call's timeout;
closing the HTTP client from another thread does not wake it (on Linux, closing a
socket another thread waits on leaves that thread waiting), so a cancelled run would
hold its slot and its provider call until the deadline. ``socket.shutdown`` does
wake it. The adapters' HTTP clients open their connections through ``_Backend``,
whose streams note which socket the current call (``Hangup``, set for the calling
thread by ``calling``) is reading or writing; ``Hangup.hang_up`` (from a watcher
thread) shuts that socket down, and any the call touches afterwards. The call then
fails with a connection error, which the caller, seeing ``hung_up``, reports as a
cancel. Only the socket a call is using at that moment is ever touched: a pooled
connection idle or used by another run's call is left alone.

The same streams note, for the request being sent (``Exchange``, set by ``exchanging``),
whether the connection it is written to had answered an earlier request and whether any
answer byte came back: what ``hango.providers.resend`` needs to know that a request is
safe to send once more.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import httpcore2
import httpx2

_current: ContextVar[Hangup | None] = ContextVar("hango_model_call", default=None)
_exchange: ContextVar[Exchange | None] = ContextVar("hango_exchange", default=None)


class Hangup:
    """One model call that a cancel may hang up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.hung_up = False

    def hang_up(self) -> None:
        """Close the call's connection now (from any thread); the call fails at once."""
        with self._lock:
            self.hung_up = True
            if self._socket is not None:
                _shut(self._socket)

    @contextlib.contextmanager
    def using(self, sock: socket.socket) -> Iterator[None]:
        """The call reads or writes ``sock`` in this block (a call hung up before shuts it at once)."""
        with self._lock:
            if self.hung_up:
                _shut(sock)
            self._socket = sock
        try:
            yield
        finally:
            with self._lock:
                self._socket = None


def calling(call: Hangup) -> contextlib.AbstractContextManager[None]:
    """The provider call made in this block (on this thread) is ``call``."""
    return _holding(_current, call)


def current_call() -> Hangup | None:
    """The model call made on this thread now, if a cancel may hang it up."""
    return _current.get()


class Exchange:
    """One sending of a request: what its connection had done before, and whether an answer began."""

    def __init__(self, fresh_only: bool = False) -> None:
        self.fresh_only = fresh_only  # a connection that answered before is not to carry it
        self.reused: bool | None = None  # its connection had answered an earlier request (None: not written)
        self.answered = False  # at least one byte of an answer was read


def exchanging(exchange: Exchange) -> contextlib.AbstractContextManager[None]:
    """The request sent in this block (on this thread) is ``exchange``."""
    return _holding(_exchange, exchange)


@contextlib.contextmanager
def _holding(var: ContextVar[Any], value: object) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, even under TLS: ``SSLSocket.shutdown`` would unwrap the TLS
    # object under the thread that is reading through it.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Stream(httpcore2.NetworkStream):
    """A connection's stream whose reads and writes the current call (if any) may hang up."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner
        self._answered = False  # an answer byte came on this connection (it served a request)

    def _watched(self) -> contextlib.AbstractContextManager[None]:
        call, sock = _current.get(), self._inner.get_extra_info("socket")
        return contextlib.nullcontext() if call is None or sock is None else call.using(sock)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with self._watched():
            data = self._inner.read(max_bytes, timeout)
        exchange = _exchange.get()
        if data and exchange is not None:
            exchange.answered = True
        self._answered = self._answered or bool(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        exchange = _exchange.get()
        if exchange is not None and exchange.reused is None:
            exchange.reused = self._answered
        with self._watched():
            self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> httpcore2.NetworkStream:
        return _Stream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._answered:
            # httpcore asks this of its idle connections before reusing one, and closes a readable one
            # (a peer's close is what makes an idle connection readable). A request to be sent on a new
            # connection says so: the idle connections it meets are closed, as likely closed by the peer
            # as the one that dropped it, and a new one is opened.
            exchange = _exchange.get()
            if exchange is not None and exchange.fresh_only:
                return True
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.SyncBackend):
    """httpcore's own network backend, its streams ``_Stream``."""

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore2.NetworkStream:
        return _Stream(super().connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.NetworkStream:
        return _Stream(super().connect_unix_socket(*args, **kwargs))


def hangs_up(client: httpx2.Client) -> httpx2.Client:
    """``client`` (an SDK's default HTTP client, with its settings) opening its connections through ``_Backend``.

    httpx builds each transport's connection pool itself and offers no way to hand it a network
    backend, so the backend is set on the pools it built, before any connection is opened.
    """
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        if pool is not None:
            pool._network_backend = _Backend()
    return client
