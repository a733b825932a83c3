"""What a failed outbound call (a model provider's, an MCP server's) leaves in the log.

One WARNING line per failed call, on the ``hango.calls`` logger::

    provider call failed: anthropic host=api.anthropic.com run=3f0c… attempt=2:
    ProviderError: anthropic call failed <- APIConnectionError: Connection error.
    <- RemoteProtocolError: Server disconnected without sending a response.

The exception chain is given by type and message, so an operator tells a wrong base URL
(a refused connection or a name that does not resolve, every time) from a flaky network
(a dropped connection now and then). Never content: an error that carries an HTTP answer
is told by its status (its body is the provider's, quoted redacted in the run's error
details), and one raised while reading an answer (``ValueError``, ``KeyError`` …, which
may quote it) by its type alone. The same facts ride on the record (``extra``):
``call_kind``, ``call_target``, ``call_host``, ``run_id``, ``attempt``.
"""

from __future__ import annotations

import logging
import uuid
from urllib.parse import urlsplit

log = logging.getLogger("hango.calls")

_MESSAGE_LIMIT = 300
# Raised while decoding or converting an answer: their messages may quote it.
_QUOTING = (ValueError, TypeError, AttributeError, KeyError)


def host_of(url: object) -> str:
    """The host of ``url`` with its port when it names one: where calls go, never a credential."""
    parts = urlsplit(str(url))
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def failed_call(
    kind: str,
    target: str,
    run_id: uuid.UUID | None,
    failure: BaseException,
    *,
    host: str | None = None,
    attempt: int | None = None,
) -> None:
    """Log one failed call of ``kind`` (``provider``, ``mcp``) to ``target`` at WARNING, with why."""
    log.warning(
        "%s call failed: %s host=%s run=%s attempt=%s: %s",
        kind,
        target,
        host or "-",
        run_id or "-",
        attempt or "-",
        chain(failure),
        extra={
            "call_kind": kind,
            "call_target": target,
            "call_host": host,
            "run_id": None if run_id is None else str(run_id),
            "attempt": attempt,
        },
    )


def chain(failure: BaseException) -> str:
    """``failure`` and its causes, outermost first: ``Type: message <- Type: message``."""
    said: list[str] = []
    seen: set[int] = set()
    exc: BaseException | None = failure
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        said.append(_said(exc))
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return " <- ".join(said)


def _said(exc: BaseException) -> str:
    name = type(exc).__name__
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        return f"{name}: HTTP {status}"
    if isinstance(exc, _QUOTING) and not isinstance(exc, OSError):  # an SSL certificate error is both
        return name
    text = " ".join(str(exc).split())[:_MESSAGE_LIMIT]
    return f"{name}: {text}" if text else name
