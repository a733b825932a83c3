"""A cancel during a hanging model call hangs the call up: the run ends ``cancelled``, not at its deadline.

The fake provider hangs far longer than the test waits, and the run deadline is 120 s:
a run whose call is not hung up is still ``running`` when the worker thread is given up on,
and would end ``timeout`` much later. Runs, compactions and whole-turn tries alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.chat import Chat
from tests.runtime.conftest import OpenChat
from tests.runtime.test_scratch_turn import seed_history
from tests.support.net import wait_until
from tests.support.queue import drain

WAIT = 60.0
HANG = 600.0  # longer than anything here waits: closing the fake ends it
RUN_TIMEOUT = 120.0


def events(chat: Chat, run_id: str) -> list[str]:
    return [s["kind"] for s in chat.who.get(f"/v1/runs/{run_id}/events").get_json()["items"]]


QUEUE: dict[str, Callable[[Chat], Any]] = {
    "run": lambda chat: chat.who.post(f"/v1/sessions/{chat.session_id}/messages", json={"content": "go"}),
    "compaction": lambda chat: chat.who.post(f"/v1/sessions/{chat.session_id}/compact", json={}),
    "turn try": lambda chat: chat.who.post(
        f"/v1/sessions/{chat.session_id}/context/try", json={"mode": "turn", "message": "go"}
    ),
}


@pytest.mark.parametrize("kind", QUEUE)
def test_a_cancel_during_a_hanging_model_call_hangs_it_up_and_the_run_ends_cancelled(
    open_chat: OpenChat, fake: FakeProviderServer, kind: str
) -> None:
    """Issue 38 §3: the provider call is aborted, so the run ends ``cancelled`` long before its deadline."""
    chat = open_chat("anthropic/claude-test", run_timeout=RUN_TIMEOUT)
    seed_history(chat, turns=3, words=400)  # a history with a place to cut, for the compaction
    before = chat.messages()
    fake.hang(HANG, times=1, path=MESSAGES)
    queued = QUEUE[kind](chat)
    assert queued.status_code == 202, queued.get_json()
    run_id = queued.get_json()["id"]
    worker = threading.Thread(target=drain, args=(chat.who.client.application,), daemon=True)
    worker.start()
    wait_until(lambda: len(fake.bodies(MESSAGES)) == 1, timeout=WAIT)  # the call is in flight

    asked = chat.who.post(f"/v1/runs/{run_id}/cancel")
    worker.join(WAIT)

    assert asked.status_code == 202 and asked.get_json()["status"] == "running"
    assert not worker.is_alive()  # the worker is free: it did not wait for the provider
    run = chat.who.get(f"/v1/runs/{run_id}").get_json()
    assert (run["status"], run["state"]) == ("cancelled", "cancelled")
    assert "model_call_finished" not in events(chat, run_id)
    assert chat.messages() == before  # nothing stored: no message, no summary
    assert (
        chat.who.get(f"/v1/sessions/{chat.session_id}/context").get_json()["messages"][0]["id"] != "summary"
    )
