"""What the log says of a failed provider call: the exception chain by type and message, never content."""

from __future__ import annotations

import pytest

from hango.call_log import chain
from hango.providers.anthropic import AnthropicProvider
from hango.providers.errors import ProviderError
from tests.fakes.provider_server import FakeProviderServer
from tests.providers import adapter_fixture, raised_by, request

CANARY = "words of the conversation 51c7"

provider = adapter_fixture(AnthropicProvider)


def test_an_http_error_is_told_by_its_status_not_its_body(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    server.fail(500, {"type": "error", "error": {"type": "api_error", "message": f"echo: {CANARY}"}})

    said = chain(raised_by(lambda: provider.complete(request())))

    assert said == "ProviderError: anthropic answered HTTP 500 <- InternalServerError: HTTP 500"


def test_a_failure_while_reading_an_answer_is_told_by_its_type_alone() -> None:
    with pytest.raises(ProviderError) as raised:
        try:
            raise ValueError(f"Expecting value near {CANARY!r}")
        except ValueError as exc:
            raise ProviderError("anthropic sent an unreadable answer") from exc

    assert chain(raised.value) == "ProviderError: anthropic sent an unreadable answer <- ValueError"
