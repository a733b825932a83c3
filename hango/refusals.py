"""What gunicorn refuses before hango sees it, answered in hango's JSON error envelope.

gunicorn answers a request it cannot parse itself (a header over
``limit_request_field_size``, control bytes in a header, a request line over
``limit_request_line``) with an HTML page from ``gunicorn.util.write_error``, and
offers no hook for that page. ``gunicorn.conf.py`` installs ``write_error`` here in
its place in each worker, so these answers carry the envelope every other error
does, ``{"error": {"code", "message", "details"}}``, with the same status.
"""

from __future__ import annotations

import json
import socket

from gunicorn import util

CODES = {
    400: "bad_request",
    403: "forbidden",
    414: "request_line_too_long",
    417: "expectation_failed",
    431: "header_too_large",
    500: "internal_error",
    501: "not_implemented",
}
_MESSAGE_LIMIT = 200  # gunicorn's message may quote the header it refused: never echo all of it


def write_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's ``util.write_error``, with the JSON envelope for a body."""
    error = {"code": CODES.get(status_int, "http_error"), "message": (mesg or reason)[:_MESSAGE_LIMIT]}
    body = json.dumps({"error": {**error, "details": None}}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


def install() -> None:
    """Answer gunicorn's own refusals with ``write_error`` (in a gunicorn worker, before it serves)."""
    util.write_error = write_error
