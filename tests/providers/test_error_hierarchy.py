"""Errors by cause: a provider's timeout has its own branch, apart from the 502 failures."""

from __future__ import annotations

from hango.errors import BadGateway, GatewayTimeout
from hango.providers.errors import ProviderError, ProviderFailure, ProviderTimeout


def test_timeouts_get_their_own_branch_of_the_hierarchy() -> None:
    timeout = ProviderTimeout("anthropic did not answer in time", {"provider": "anthropic"})

    assert isinstance(timeout, GatewayTimeout)
    assert not isinstance(timeout, BadGateway)
    assert not isinstance(timeout, ProviderError)
    assert (timeout.status, timeout.code) == (504, "provider_timeout")
    assert timeout.details == {"provider": "anthropic"}


def test_a_provider_error_is_a_bad_gateway_and_no_timeout() -> None:
    error = ProviderError("openai answered HTTP 500", {"provider": "openai", "status": 500})

    assert isinstance(error, BadGateway)
    assert not isinstance(error, GatewayTimeout)
    assert (error.status, error.code) == (502, "provider_error")


def test_provider_failure_catches_both_causes() -> None:
    assert issubclass(ProviderError, ProviderFailure)
    assert issubclass(ProviderTimeout, ProviderFailure)
