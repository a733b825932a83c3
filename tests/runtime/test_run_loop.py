"""The run loop end to end through ``POST /v1/sessions/{id}/messages``: offline and on the fake Anthropic."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable

import pytest
from werkzeug.test import TestResponse

from hango.agent.assembly import INTERRUPTED
from hango.agent.tools import todos
from hango.store import TenantStore
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.reliability.anthropic_rules import problem as anthropic_problem
from tests.runtime.chat import Chat, shape, tool_call, tool_calls
from tests.runtime.conftest import OpenChat
from tests.support.clients import error_code
from tests.support.net import wait_until

WRITE = {"path": "/notes.md", "content": "one\ntwo\n"}
READ = {"path": "/notes.md"}


def _offline(fake: FakeProviderServer) -> str:
    return f"Take notes.\n/tool write_file {json.dumps(WRITE)}\n/tool read_file {json.dumps(READ)}"


def _anthropic(fake: FakeProviderServer) -> str:
    fake.reply(
        tool_calls(("toolu_w", "write_file", WRITE), ("toolu_r", "read_file", READ), text="Both."), "Noted."
    )
    return "Take notes."


# model → how to make its model call write_file then read_file in one answer; returns the user text
SCRIPTS: dict[str, Callable[[FakeProviderServer], str]] = {
    "offline/echo": _offline,
    "anthropic/claude-test": _anthropic,
}


@pytest.fixture
def anthropic_chat(open_chat: OpenChat, fake: FakeProviderServer) -> Chat:
    """An anthropic agent on a fake server that rejects, as the API does, any invalid history."""
    fake.validator = anthropic_problem
    return open_chat("anthropic/claude-test")


@pytest.mark.parametrize("model", SCRIPTS)
def test_a_run_executes_tools_and_stores_every_turn(
    open_chat: OpenChat, fake: FakeProviderServer, model: str
) -> None:
    chat = open_chat(model)
    fake.validator = anthropic_problem

    response = chat.say(SCRIPTS[model](fake))

    assert response.status_code == 201, response.get_json()
    run, new = response.get_json()["run"], response.get_json()["messages"]
    assert (run["status"], run["stop_reason"]) == ("completed", "end_turn")
    assert new == chat.messages()
    assert shape(new) == [
        (1, "user", ["text"]),
        (2, "assistant", ["text", "tool_use", "tool_use"]),
        (3, "user", ["tool_result", "tool_result"]),  # one message holds all results of the turn
        (4, "assistant", ["text"]),
    ]
    uses = [b["id"] for b in new[1]["content"] if b["type"] == "tool_use"]
    results = new[2]["content"]
    assert [r["tool_use_id"] for r in results] == uses
    assert [r["is_error"] for r in results] == [False, False]
    assert "two" in results[1]["content"]  # read_file saw what write_file stored in the same turn
    assert {m["run_id"] for m in new} == {run["id"]}
    assert chat.usage() == [("run", run["id"])] * 2

    again = chat.say("Thanks.")
    assert [m["seq"] for m in again.get_json()["messages"]] == [5, 6]


def test_max_turns_ends_on_tool_results_and_the_next_text_still_works(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test", max_turns=2)
    fake.validator = anthropic_problem
    fake.reply(tool_call("toolu_1", "ls", {}), tool_call("toolu_2", "ls", {}), "Finally done.")

    stopped = chat.say("Keep looking.")

    assert stopped.status_code == 201
    run = stopped.get_json()["run"]
    assert (run["status"], run["stop_reason"]) == ("max_turns", "max_turns")
    assert shape(chat.messages())[-1] == (5, "user", ["tool_result"])
    assert len(fake.bodies(MESSAGES)) == 2

    resumed = chat.say("Go on.")

    assert resumed.status_code == 201, resumed.get_json()
    assert resumed.get_json()["run"]["status"] == "completed"
    assert shape(resumed.get_json()["messages"]) == [(6, "user", ["text"]), (7, "assistant", ["text"])]
    last = fake.bodies(MESSAGES)[-1]["messages"][-1]
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]  # merged into one user message


def test_a_concurrent_run_on_the_session_is_409(anthropic_chat: Chat, fake: FakeProviderServer) -> None:
    fake.hang(30)
    first: list[TestResponse] = []
    thread = threading.Thread(target=lambda: first.append(anthropic_chat.say("Take your time.")))
    thread.start()
    try:
        wait_until(lambda: bool(fake.bodies(MESSAGES)), timeout=60, interval=0.02)

        second = anthropic_chat.say("Are you there?")

        assert second.status_code == 409
        assert error_code(second) == "session_busy"
    finally:
        fake.close()  # ends the hang: the first run gets its answer
        thread.join()
    assert first[0].status_code == 201
    assert shape(anthropic_chat.messages()) == [(1, "user", ["text"]), (2, "assistant", ["text"])]
    assert len(anthropic_chat.runs()) == 1


def test_the_same_idempotency_key_returns_the_same_run(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")
    first = chat.say("/tool ls {}", key="retry-1")
    history, usage = chat.messages(), chat.usage()

    retried = chat.say("/tool ls {}", key="retry-1")

    assert retried.status_code == 201
    assert retried.get_json() == first.get_json()
    assert chat.messages() == history
    assert chat.usage() == usage
    assert len(chat.runs()) == 1
    assert chat.say("/tool ls {}", key="retry-2").get_json()["run"]["id"] != first.get_json()["run"]["id"]


def test_a_dangling_tool_use_is_repaired_before_the_next_message(
    anthropic_chat: Chat, fake: FakeProviderServer
) -> None:
    _crash_mid_turn(anthropic_chat)

    response = anthropic_chat.say("Where were we?")

    assert response.status_code == 201, response.get_json()
    history = anthropic_chat.messages()
    assert shape(history) == [
        (1, "user", ["text"]),
        (2, "assistant", ["tool_use"]),
        (3, "user", ["tool_result"]),
        (4, "user", ["text"]),
        (5, "assistant", ["text"]),
    ]
    assert history[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_lost", "content": INTERRUPTED, "is_error": True}
    ]
    assert "interrupted" in INTERRUPTED
    (sent,) = fake.bodies(MESSAGES)  # the validator let it through: the provider got a valid history
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    crashed, repairing = anthropic_chat.runs()
    assert (crashed["status"], crashed["error"]["code"]) == ("failed", "interrupted")
    assert crashed["finished_at"] is not None
    assert repairing["status"] == "completed"


def _crash_mid_turn(chat: Chat) -> None:
    """Store what a run that crashed after the model answered leaves: its row running, a tool_use without results."""
    with chat.engine.begin() as conn:
        store = TenantStore(conn, chat.tenant_id)
        session = uuid.UUID(chat.session_id)
        queued = store.runs.enqueue(session, uuid.UUID(chat.who.user_id), [{"type": "text", "text": "List."}])
        run = store.runs.start(queued.id)  # a worker took it, then died
        store.messages.append(session, "user", [{"type": "text", "text": "List the files."}], run.id)
        use = {"type": "tool_use", "id": "toolu_lost", "name": "ls", "input": {}}
        store.messages.append(session, "assistant", [use], run.id)


def test_a_nul_from_the_model_is_stored_as_a_replacement_character(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")

    response = chat.say('/tool write_file {"path": "/a.md", "content": "x\\u0000y"}')

    assert response.status_code == 201, response.get_json()
    assert chat.file("/a.md") == "x\ufffdy"  # PostgreSQL stores no NUL, in text or in jsonb
    assert chat.messages()[1]["content"][1]["input"]["content"] == "x\ufffdy"


def test_user_text_with_a_nul_is_refused(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")

    for content in ("a\u0000b", [{"type": "text", "text": "a\u0000b"}]):
        response = chat.who.post(f"/v1/sessions/{chat.session_id}/messages", json={"content": content})
        assert response.status_code == 422, response.get_json()
    assert chat.messages() == []
    assert chat.runs() == []


def test_a_bug_in_a_tool_fails_the_run_and_leaves_the_session_as_it_was(
    open_chat: OpenChat, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = open_chat("offline/echo")
    assert chat.say("Hello.").status_code == 201
    before = chat.stored()

    def broken(args: dict, ctx: object) -> str:
        raise RuntimeError("a bug")

    monkeypatch.setattr(todos, "write_todos", broken)
    response = chat.say('/tool write_todos {"todos": []}')

    assert response.status_code == 500
    assert chat.stored() == before
    failed = chat.runs()[-1]
    assert (failed["status"], failed["error"]["code"]) == ("failed", "internal_error")


@pytest.mark.parametrize("content", [" ", "\n\t", [{"type": "text", "text": "  "}], "a\x00b"])
def test_blank_or_nul_user_text_is_refused_and_nothing_is_stored(acme, content):
    agent = acme.member.post("/v1/agents", json={"name": "blank"}).get_json()
    session = acme.member.post("/v1/sessions", json={"agent_id": agent["id"]}).get_json()
    response = acme.member.post(f"/v1/sessions/{session['id']}/messages", json={"content": content})
    assert response.status_code == 422
    assert response.get_json()["error"]["code"] in ("invalid", "nul_character")
    assert acme.member.get(f"/v1/sessions/{session['id']}/messages").get_json()["items"] == []
