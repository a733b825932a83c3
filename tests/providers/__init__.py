"""Provider tests: request builders, and the error contract both SDK adapters must keep.

A test module sets ``provider = adapter_fixture(SomeProvider)`` and subclasses
``ErrorContract`` as ``TestErrorContract``; the contract then runs against that
adapter through its real SDK and the fake server (the ``server`` fixture of this
package's conftest).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hango.messages import Block, Message, Request, TextBlock, ToolDef, ToolResultBlock, ToolUseBlock
from hango.providers import Provider, ProviderSettings, close_providers, provider_for
from hango.providers.errors import ProviderError, ProviderFailure, ProviderTimeout
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer

READ_FILE = ToolDef(
    "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
)


def user(text: str, cache_control: bool = False) -> Message:
    """A user message with one text block."""
    return Message("user", (TextBlock(text),), cache_control)


def tool_turn() -> tuple[Message, Message]:
    """An assistant tool call and the user message with its (error) result."""
    call = Message(
        "assistant", (TextBlock("Let me look."), ToolUseBlock("toolu_1", "read_file", {"path": "/a"}))
    )
    result = Message("user", (ToolResultBlock("toolu_1", "no such file", is_error=True),))
    return call, result


def request(*messages: Message, system: tuple[Block, ...] = (), tools: tuple[ToolDef, ...] = ()) -> Request:
    """A request for the bare model name ``test-model`` (one user "hi" when no messages are given)."""
    return Request(model="test-model", system=system, tools=tools, messages=messages or (user("hi"),))


def raised_by(call: Callable[[], object]) -> ProviderFailure:
    """The ``ProviderFailure`` (error or timeout) that ``call`` raises."""
    with pytest.raises(ProviderFailure) as raised:
        call()
    return raised.value


def adapter_fixture(adapter: Callable[[ProviderSettings], Provider]) -> Any:
    """A ``provider`` fixture: ``adapter`` pointed at the test's fake server, closed afterwards."""

    @pytest.fixture
    def provider(server: FakeProviderServer) -> Iterator[Provider]:
        made = adapter(server.settings(timeout=5))
        yield made
        made.close()

    return provider


class ErrorContract:
    """How every SDK adapter fails: as ``ProviderError``/``ProviderTimeout``, without the key."""

    name: str
    model: str

    @staticmethod
    def error_body(message: str) -> dict[str, Any]:
        """An error body in the API's own shape."""
        raise AssertionError("each API module defines its error shape")

    @pytest.mark.parametrize("status", [400, 500])
    def test_http_errors_carry_status_and_message(
        self, server: FakeProviderServer, provider: Provider, status: int
    ) -> None:
        server.fail(status, self.error_body("model is sad"))

        error = raised_by(lambda: provider.complete(request()))

        assert type(error) is ProviderError
        assert error.details == {
            "provider": self.name,
            "host": server.url.removeprefix("http://"),  # where it failed: a wrong base URL shows here
            "attempt": 1,
            "status": status,
            "provider_message": "model is sad",
        }

    @pytest.mark.parametrize("wrong", ["garbage", "shape"])
    def test_an_unreadable_answer_is_a_provider_error(
        self, server: FakeProviderServer, provider: Provider, wrong: str
    ) -> None:
        server.garbage() if wrong == "garbage" else server.reply({"unexpected": "shape"})

        error = raised_by(lambda: provider.complete(request()))

        assert error.message == f"{self.name} sent an unreadable answer"

    def test_a_hanging_provider_times_out(self, server: FakeProviderServer, provider: Provider) -> None:
        server.hang(30)
        started = time.monotonic()

        with pytest.raises(ProviderTimeout):
            provider.complete(request(), timeout=1)

        assert time.monotonic() - started < 10

    def test_the_settings_timeout_is_the_default(self, server: FakeProviderServer) -> None:
        server.hang(30)
        adapter, _ = provider_for(f"{self.name}/{self.model}", server.settings(timeout=0.5))
        try:
            with pytest.raises(ProviderTimeout):
                adapter.complete(request())
        finally:
            close_providers()

    def test_the_api_key_never_reaches_an_error(self, server: FakeProviderServer, provider: Provider) -> None:
        server.fail(401, self.error_body(f"bad key {TEST_API_KEY}"))
        errors = [raised_by(lambda: provider.complete(request()))]
        server.hang(5)
        errors.append(raised_by(lambda: provider.complete(request(), timeout=0.2)))
        server.close()  # nothing listens any more: a connection error
        errors.append(raised_by(lambda: provider.complete(request())))

        assert errors[0].details["provider_message"] == "bad key [redacted]"
        assert "provider_message" in errors[2].details
        for error in errors:
            assert TEST_API_KEY not in f"{error} {error.message} {json.dumps(error.details)}"

    def test_provider_for_reuses_one_working_adapter(self, server: FakeProviderServer) -> None:
        adapter, model = provider_for(f"{self.name}/{self.model}", server.settings())
        try:
            answer = adapter.complete(request())
            assert model == self.model
            assert answer.message.content == (TextBlock("Hello from the fake provider."),)
            assert provider_for(f"{self.name}/other-model", server.settings())[0] is adapter
        finally:
            close_providers()
