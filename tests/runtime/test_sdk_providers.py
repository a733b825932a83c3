"""Each SDK provider through a run: the real SDK over HTTP to the fake server, driven by the chat API."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes.provider_server import CHAT_COMPLETIONS, MESSAGES, FakeProviderServer
from tests.runtime.chat import Chat, shape, tool_call
from tests.runtime.conftest import OpenChat
from tests.support.clients import error_code

# Functional, not a performance assert: a 5 s deadline against a 30 s hang. The deadline leaves a
# loaded machine seconds to reach the provider (with 1 s, the run's own set-up could spend it first,
# and the run then ended ``run_timeout`` before the call that was to time out).
RUN_TIMEOUT = 5
TIMEOUT_BOUND = 20.0
CANARY = "a message no log may quote 7f3e"


def _anthropic_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    last = body["messages"][-1]["content"]
    return [(b["tool_use_id"], b["content"]) for b in last if b["type"] == "tool_result"]


def _openai_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _anthropic_calls(body: dict[str, Any]) -> list[str]:
    return [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]


def _openai_calls(body: dict[str, Any]) -> list[str]:
    return [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]


@dataclass(frozen=True)
class Wire:
    """One SDK provider: the model name and how its wire format carries tool calls and results."""

    model: str
    path: str
    calls: Callable[[dict[str, Any]], list[str]]
    results: Callable[[dict[str, Any]], list[tuple[str, str]]]


WIRES = [
    Wire("anthropic/claude-test", MESSAGES, _anthropic_calls, _anthropic_results),
    Wire("openai/gpt-test", CHAT_COMPLETIONS, _openai_calls, _openai_results),
]


@pytest.fixture(params=WIRES, ids=lambda wire: wire.model.partition("/")[0])
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param


@pytest.fixture
def chat(open_chat: OpenChat, wire: Wire) -> Chat:
    return open_chat(wire.model)


@pytest.fixture
def slow_chat(open_chat: OpenChat, wire: Wire) -> Chat:
    """A chat whose runs have ``RUN_TIMEOUT`` seconds (``HANGO_RUN_TIMEOUT``)."""
    return open_chat(wire.model, run_timeout=RUN_TIMEOUT)


def test_tool_calls_both_ways(chat: Chat, fake: FakeProviderServer, wire: Wire) -> None:
    fake.reply(
        tool_call("call_1", "write_file", {"path": "/plan.md", "content": "ship it"}, "Writing."), "Done."
    )

    response = chat.say("Write the plan.")

    assert response.status_code == 201, response.get_json()
    assert chat.file("/plan.md") == "ship it"  # the tool ran on the session's stored files
    first, second = fake.bodies(wire.path)
    assert wire.calls(first) == []
    assert wire.calls(second) == ["call_1"]  # the tool call went back as the API's own shape
    assert [call for call, _ in wire.results(second)] == ["call_1"]
    assert "/plan.md" in wire.results(second)[0][1]
    assert shape(chat.messages()) == [
        (1, "user", ["text"]),
        (2, "assistant", ["text", "tool_use"]),
        (3, "user", ["tool_result"]),
        (4, "assistant", ["text"]),
    ]
    assert chat.messages()[-1]["content"] == [{"type": "text", "text": "Done."}]
    run = response.get_json()["run"]
    assert (run["status"], run["stop_reason"]) == ("completed", "end_turn")


def test_provider_error_is_502_with_its_message(chat: Chat, fake: FakeProviderServer, wire: Wire) -> None:
    fake.fail(500, _error_body(wire, "the model is overloaded"))

    response = chat.say("Hello?")

    assert response.status_code == 502
    assert error_code(response) == "provider_error"
    details = response.get_json()["error"]["details"]
    assert details == {
        "provider": wire.model.partition("/")[0],
        "host": fake.url.removeprefix("http://"),
        "attempt": 1,
        "status": 500,
        "provider_message": "the model is overloaded",
    }


@pytest.mark.parametrize("failure", ["dropped", "refused"])
def test_a_failed_provider_call_says_why(
    chat: Chat, fake: FakeProviderServer, wire: Wire, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    """A dropped connection (a flaky network) and a refused one (a wrong base URL, nothing listening)
    each leave one WARNING with the exception chain, the provider, host, run and attempt; no content."""
    host = fake.url.removeprefix("http://")
    fake.drop() if failure == "dropped" else fake.close()
    caplog.set_level(logging.WARNING, logger="hango.calls")

    response = chat.say(CANARY)

    assert response.status_code == 502
    run = chat.runs()[-1]
    assert run["error"]["details"]["host"] == host  # stored with the run
    [record] = [r for r in caplog.records if r.name == "hango.calls"]
    provider = wire.model.partition("/")[0]
    assert record.levelno == logging.WARNING
    assert (record.call_kind, record.call_target, record.call_host) == ("provider", provider, host)
    assert (record.run_id, record.attempt) == (run["id"], 1)
    said = record.getMessage()
    assert f"provider call failed: {provider} host={host} run={run['id']} attempt=1: " in said
    assert f"ProviderError: {provider} call failed <- APIConnectionError: Connection error. <- " in said
    cause = {
        "dropped": "RemoteProtocolError: Server disconnected without sending a response.",
        "refused": "ConnectError: [Errno 111] Connection refused",
    }[failure]
    assert cause in said
    assert CANARY not in caplog.text


def test_timeout_is_504_within_the_bound(slow_chat: Chat, fake: FakeProviderServer) -> None:
    fake.hang(30)
    started = time.monotonic()

    response = slow_chat.say("Hello?")

    assert time.monotonic() - started < TIMEOUT_BOUND
    assert response.status_code == 504
    assert error_code(response) == "provider_timeout"
    assert len(fake.requests) == 1  # the call that timed out reached the provider


@pytest.mark.parametrize("failure", ["error", "timeout"])
def test_session_unchanged_after_a_failed_call(
    slow_chat: Chat, fake: FakeProviderServer, failure: str
) -> None:
    fake.reply(tool_call("call_1", "write_file", {"path": "/a.md", "content": "a"}), "Written.")
    assert slow_chat.say("Write /a.md.").status_code == 201
    before = slow_chat.stored()
    fake.fail(500) if failure == "error" else fake.hang(30)

    response = slow_chat.say("And now?")

    assert response.status_code == (502 if failure == "error" else 504)
    assert slow_chat.stored() == before
    failed = slow_chat.runs()[-1]
    assert failed["status"] == ("failed" if failure == "error" else "timeout")
    assert failed["error"]["code"] == response.get_json()["error"]["code"]
    assert len(slow_chat.runs()) == 2


def test_a_failure_after_a_tool_turn_keeps_that_turn(chat: Chat, fake: FakeProviderServer) -> None:
    fake.reply(tool_call("call_1", "write_file", {"path": "/a.md", "content": "a"}))
    fake.validator = lambda body: "refused" if len(fake.requests) > 1 else None  # the second call fails

    assert chat.say("Write /a.md.").status_code == 502

    # The turn before the failed call was committed: history is valid and ends on its results.
    assert shape(chat.messages()) == [
        (1, "user", ["text"]),
        (2, "assistant", ["tool_use"]),
        (3, "user", ["tool_result"]),
    ]
    assert chat.file("/a.md") == "a"
    assert chat.runs()[-1]["status"] == "failed"


def _error_body(wire: Wire, message: str) -> dict[str, Any]:
    if wire.path == MESSAGES:
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
