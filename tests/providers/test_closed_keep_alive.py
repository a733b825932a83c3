"""A request a closed keep-alive connection dropped is sent once more, on a new connection, and only then.

Both SDK adapters, through their official SDKs, against the fake provider server serving
keep-alive connections; what is resent is counted in the requests the server received.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from hango.providers import Provider
from hango.providers.anthropic import AnthropicProvider
from hango.providers.errors import ProviderError
from hango.providers.hangup import Hangup, calling
from hango.providers.openai import OpenAIProvider
from tests.fakes.provider_server import DEFAULT_TEXT, FakeProviderServer
from tests.providers import raised_by, request
from tests.support.net import wait_until

ADAPTERS = [AnthropicProvider, OpenAIProvider]


@pytest.fixture(params=ADAPTERS, ids=["anthropic", "openai"])
def adapter(request: pytest.FixtureRequest) -> type:
    return request.param


def _provider(server: FakeProviderServer, adapter: type) -> Iterator[Provider]:
    made = adapter(server.settings(timeout=10))
    try:
        yield made
    finally:
        made.close()
        server.close()


@pytest.fixture
def dropping(adapter: type) -> Iterator[tuple[FakeProviderServer, Provider]]:
    """A keep-alive server that drops the second request on each connection, and the adapter."""
    server = FakeProviderServer(keep_alive=True, drop_reused=True)
    for made in _provider(server, adapter):
        yield server, made


@pytest.fixture
def keeping(adapter: type) -> Iterator[tuple[FakeProviderServer, Provider]]:
    """A keep-alive server that answers every request (unless scripted), and the adapter."""
    server = FakeProviderServer(keep_alive=True)
    for made in _provider(server, adapter):
        yield server, made


def _answer(provider: Provider) -> str:
    return provider.complete(request()).message.content[0].text


def test_a_closed_keep_alive_connection_does_not_fail_the_call(
    dropping: tuple[FakeProviderServer, Provider],
) -> None:
    server, provider = dropping

    answers = [_answer(provider) for _ in range(5)]

    assert answers == [DEFAULT_TEXT] * 5
    # The first call opens a connection; each later one is dropped on the reused connection and
    # answered once more on a new one: 1 + 4 × 2 requests over 5 connections.
    assert len(server.requests) == 9
    assert server.connections == 5


def test_a_resent_request_goes_on_a_new_connection_not_another_idle_one(
    dropping: tuple[FakeProviderServer, Provider],
) -> None:
    server, provider = dropping
    both_in = threading.Barrier(2, timeout=30)

    def together(body: object) -> None:  # each request waits for the other: two connections
        both_in.wait()

    server.validator = together
    pair = [threading.Thread(target=_answer, args=(provider,)) for _ in range(2)]
    for thread in pair:
        thread.start()
    for thread in pair:
        thread.join()
    assert server.connections == 2  # two idle connections, each of which drops its next request
    server.validator = None

    assert _answer(provider) == DEFAULT_TEXT
    assert len(server.requests) == 4  # the two, the dropped one, and the one resent on a third connection
    assert server.connections == 3


def test_a_request_dropped_on_a_fresh_connection_is_not_sent_again(
    keeping: tuple[FakeProviderServer, Provider],
) -> None:
    server, provider = keeping
    server.drop()

    error = raised_by(lambda: provider.complete(request()))

    assert type(error) is ProviderError
    assert error.details["attempt"] == 1
    assert len(server.requests) == 1


def test_a_request_whose_answer_began_is_not_sent_again(
    keeping: tuple[FakeProviderServer, Provider],
) -> None:
    server, provider = keeping
    assert _answer(provider) == DEFAULT_TEXT  # the connection is reused from here on
    server.cut()  # the start of a status line, then a close: the server read the request

    error = raised_by(lambda: provider.complete(request()))

    assert type(error) is ProviderError
    assert error.details["attempt"] == 1
    assert len(server.requests) == 2


def test_a_hung_up_call_is_not_sent_again(keeping: tuple[FakeProviderServer, Provider]) -> None:
    server, provider = keeping
    assert _answer(provider) == DEFAULT_TEXT  # the next call goes out on this reused connection
    server.hang(30)
    call = Hangup()

    def cancel() -> None:
        wait_until(lambda: len(server.requests) == 2, timeout=30, interval=0.02)
        call.hang_up()

    canceller = threading.Thread(target=cancel)
    canceller.start()
    with calling(call):
        error = raised_by(lambda: provider.complete(request()))
    canceller.join()

    assert call.hung_up
    assert type(error) is ProviderError  # the connection error its caller reports as a cancel
    assert error.details["attempt"] == 1
    assert len(server.requests) == 2
    assert server.connections == 1
