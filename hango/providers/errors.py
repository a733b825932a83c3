"""Provider failures as domain exceptions, free of Flask and of any SDK's types.

The hierarchy, by cause (``HangoError``, ``BadGateway`` and ``GatewayTimeout`` are in
``hango.errors``, whose status and code the API's one error handler turns into the
JSON envelope). Like httpx's ``TimeoutException``, a timeout has its own branch,
so callers tell it apart by class; ``ProviderFailure`` catches both::

    HangoError
     ├── BadGateway                 502 provider_error
     │    └── ProviderError         a model call failed: HTTP error, refused
     │                              connection, unreadable answer
     └── GatewayTimeout             504 provider_timeout
          └── ProviderTimeout       no answer within the call's timeout

    ProviderFailure                 the base both provider errors share
     ├── ProviderError
     └── ProviderTimeout

``details`` is a JSON-safe dict for the error envelope, e.g.
``{"provider": "anthropic", "host": "api.anthropic.com", "attempt": 1, "status": 400,
"provider_message": "..."}``: ``host`` (the base URL's host and port) tells a wrong base
URL from a flaky network, ``attempt`` says whether the request was sent once more
(``hango.providers.resend``). It never holds the API key: ``sdk_errors`` redacts the key
from whatever the provider said.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from hango.call_log import host_of
from hango.errors import BadGateway, GatewayTimeout, HangoError
from hango.providers.resend import attempt_of

_MESSAGE_LIMIT = 500
_REDACTED = "[redacted]"


class ProviderFailure(HangoError):
    """A model provider call did not give an answer; ``details`` say which provider and why."""

    details: dict[str, Any]

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message, details=dict(details or {}))


class ProviderError(ProviderFailure, BadGateway):
    """A model provider call failed (502)."""


class ProviderTimeout(ProviderFailure, GatewayTimeout):
    """A model provider did not answer within the call's timeout (504)."""


def provider_message(body: object) -> str | None:
    """The human-readable message of an error body, in the Anthropic or the OpenAI shape."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return error["message"]
        return None
    if isinstance(body, str) and body.strip():
        return body.strip()
    return None


def redact(text: str, secret: str | None) -> str:
    """``text`` without ``secret`` in it, cut to a length fit for an error envelope."""
    if secret:
        text = text.replace(secret, _REDACTED)
    return text[:_MESSAGE_LIMIT]


@contextmanager
def sdk_errors(provider: str, sdk: ModuleType, secret: str | None, base_url: object) -> Iterator[None]:
    """Turn the errors of an official SDK (``anthropic`` or ``openai``) into ``ProviderError``.

    Both SDKs share the names used here: ``APITimeoutError``, ``APIStatusError``
    and their base ``APIError``. An answer the adapter cannot read (a body that is
    not JSON, or JSON without the documented fields) is a provider failure too:
    the SDKs do not validate answers, so it surfaces as a ``ValueError``,
    ``TypeError``, ``AttributeError`` or ``KeyError`` from decoding or converting it.
    """
    where = {"provider": provider, "host": host_of(base_url)}
    try:
        yield
    except sdk.APITimeoutError as exc:
        details: dict[str, Any] = {**where, "attempt": attempt_of(exc.request)}
        raise ProviderTimeout(f"{provider} did not answer in time", details) from exc
    except sdk.APIStatusError as exc:
        details = {**where, "attempt": attempt_of(exc.request), "status": exc.status_code}
        message = provider_message(exc.body)
        if message is not None:
            details["provider_message"] = redact(message, secret)
        raise ProviderError(f"{provider} answered HTTP {exc.status_code}", details) from exc
    except sdk.APIError as exc:
        details = {
            **where,
            "attempt": attempt_of(exc.request),
            "provider_message": redact(exc.message, secret),
        }
        raise ProviderError(f"{provider} call failed", details) from exc
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ProviderError(f"{provider} sent an unreadable answer", where) from exc
