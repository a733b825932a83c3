"""Domain errors, free of Flask; ``hango.api`` maps them to JSON responses in one place.

HangoError (500 internal_error)
├── BadRequest (400)          ├── Conflict (409)
├── Unauthorized (401)        ├── PreconditionFailed (412)
├── QuotaExhausted (402)      ├── PayloadTooLarge (413)
├── Forbidden (403)           ├── UnsupportedMedia (415)
├── NotFound (404)            ├── Unprocessable (422)
├── RateLimited (429)         ├── ServiceUnavailable (503)
├── BadGateway (502)          └── GatewayTimeout (504)
├── Cancelled (409)
└── Interrupted (503)
"""

from __future__ import annotations

from typing import Any


class HangoError(Exception):
    status = 500
    code = "internal_error"
    default_message = "internal error"

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message or self.default_message)
        self.message = message or self.default_message
        if code:
            self.code = code
        self.details = details
        self.headers = headers or {}


class BadRequest(HangoError):
    status, code, default_message = 400, "bad_request", "bad request"


class Unauthorized(HangoError):
    status, code, default_message = 401, "unauthorized", "a valid API key is required"


class QuotaExhausted(HangoError):
    status, code, default_message = (
        402,
        "quota_exhausted",
        "the tenant's token quota for this month is used up",
    )


class Forbidden(HangoError):
    """The caller sees the object but may not change it (what they may not see is NotFound)."""

    status, code, default_message = 403, "forbidden", "the caller may not change this"


class NotFound(HangoError):
    status, code, default_message = 404, "not_found", "not found"


class Conflict(HangoError):
    status, code, default_message = 409, "conflict", "conflict"


class PreconditionFailed(HangoError):
    status, code, default_message = 412, "precondition_failed", "the object changed since it was read"


class PayloadTooLarge(HangoError):
    status, code, default_message = 413, "payload_too_large", "the request body is too large"


class UnsupportedMedia(HangoError):
    status, code, default_message = 415, "unsupported_media_type", "the body must be JSON"


class Unprocessable(HangoError):
    status, code, default_message = 422, "invalid", "the request is not valid"


class RateLimited(HangoError):
    status, code, default_message = 429, "rate_limited", "too many requests for this member's API keys"


class BadGateway(HangoError):
    status, code, default_message = 502, "provider_error", "the model provider failed"


class ServiceUnavailable(HangoError):
    status, code, default_message = 503, "unavailable", "the service is unavailable, try again"


class GatewayTimeout(HangoError):
    status, code, default_message = 504, "provider_timeout", "the model provider did not answer in time"


class Cancelled(HangoError):
    """A run stopped at a step boundary because its cancel was requested."""

    status, code, default_message = 409, "cancelled", "the run was cancelled"


class Interrupted(HangoError):
    """A run stopped because its worker stopped: killed (the reaper says so) or shutting down."""

    status, code, default_message = 503, "interrupted", "the run's worker stopped before the run finished"
