"""Sending a model request once more when a closed keep-alive connection dropped it unread.

A provider (or a proxy in front of it) closes an idle keep-alive connection when it
likes; a request written to it just then fails before any answer, though the server
never read it. The SDKs are given ``max_retries=0`` (their back-off could overrun a
call's deadline or delay a cancel), so ``resends`` wraps the adapters' HTTP transport
instead: a request is sent once more, at once and on a new connection, exactly when

- the connection it was written to had answered an earlier request (a reused keep-alive
  connection: a fresh one that fails says something about the server, not the pool),
- it failed before any answer byte came (reset, closed, or cut before the status line;
  never a timeout, never once an answer began), and
- its call was not hung up by a cancel (``hango.providers.hangup``).

Never otherwise, and never more than once. The facts come from the connection's own
stream (``hangup.Exchange``); the failed send is logged at INFO.
"""

from __future__ import annotations

import logging

import httpx2

from hango.providers.hangup import Exchange, current_call, exchanging

log = logging.getLogger(__name__)

ATTEMPT = "hango.attempt"  # the request extension that says which sending of it this is: 1, or 2
# A connection closed, reset or cut before the answer; timeouts are no part of it (their own branch in httpx).
_DROPPED = (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError)


def attempt_of(request: httpx2.Request | None) -> int:
    """Which sending of ``request`` this was (1 unless it was sent once more)."""
    return 1 if request is None else int(request.extensions.get(ATTEMPT, 1))


def may_resend(exchange: Exchange, request: httpx2.Request, failure: Exception) -> bool:
    """True when ``request`` failed unread on a reused connection and its call was not hung up."""
    call = current_call()
    return (
        isinstance(failure, _DROPPED)
        and exchange.reused is True
        and not exchange.answered
        and not (call is not None and call.hung_up)
        and isinstance(request.stream, httpx2.ByteStream)  # its body can be sent again as it was
    )


class _ResendOnce(httpx2.BaseTransport):
    """A transport that sends a request dropped by a closed keep-alive connection once more."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        first = Exchange()
        try:
            with exchanging(first):
                return self._inner.handle_request(request)
        except _DROPPED as failure:
            if not may_resend(first, request, failure):
                raise
            log.info(
                "resending a request a reused connection dropped: host=%s %s: %s",
                request.url.netloc.decode(),
                type(failure).__name__,
                failure,
            )
        request.extensions[ATTEMPT] = 2
        with exchanging(Exchange(fresh_only=True)):
            return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def resends(client: httpx2.Client) -> httpx2.Client:
    """``client`` (an SDK's HTTP client) with its transports wrapped in ``_ResendOnce``.

    httpx offers no hook between a client and the transports it built from its settings, so
    the wrapper replaces them on the client, before any request is sent.
    """
    client._transport = _ResendOnce(client._transport)
    client._mounts = {
        pattern: None if transport is None else _ResendOnce(transport)
        for pattern, transport in client._mounts.items()
    }
    return client
