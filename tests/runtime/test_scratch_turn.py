"""A whole turn on a scratch copy of the session (issue 27): ``POST …/context/try`` with ``"mode": "turn"``."""

from __future__ import annotations

from typing import Any

from tests.fakes.provider_server import FakeProviderServer
from tests.runtime.chat import Chat, tool_call
from tests.runtime.conftest import OpenChat
from tests.support.queue import drain


def try_turn(chat: Chat, **body: Any) -> Any:
    return chat.who.post(f"/v1/sessions/{chat.session_id}/context/try", json={"mode": "turn", **body})


def ended(chat: Chat, sent: Any) -> dict[str, Any]:
    """Run the queued scratch run to its end in this process and read it back."""
    assert sent.status_code == 202, sent.get_json()
    drain(chat.who.client.application)
    run = chat.who.get(sent.headers["Location"])
    assert run.status_code == 200, run.get_json()
    return run.get_json()


def test_a_scratch_turn_is_a_queued_try_run_whose_result_says_what_the_turn_did(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.reply(
        tool_call("toolu_1", "write_file", {"path": "/notes.md", "content": "hello\n"}),
        tool_call("toolu_2", "read_file", {"path": "/notes.md"}),
        "Done.",
    )

    sent = try_turn(chat, message="Write a note.")

    assert sent.status_code == 202, sent.get_json()
    assert (sent.get_json()["kind"], sent.get_json()["status"]) == ("try", "queued")
    assert sent.headers["Location"] == f"/v1/runs/{sent.get_json()['id']}"
    run = ended(chat, sent)
    assert (run["status"], run["stop_reason"]) == ("completed", "end_turn")
    result = run["result"]
    assert [c["purpose"] for c in result["calls"]] == ["context_try"] * 3
    assert {c["run_id"] for c in result["calls"]} == {run["id"]}
    one = chat.who.get(f"/v1/sessions/{chat.session_id}/calls/{result['calls'][0]['id']}").get_json()
    assert result["calls"][0] == one
    assert [(t["call"], t["name"], t["is_error"]) for t in result["tools"]] == [
        (0, "write_file", False),
        (1, "read_file", False),
    ]
    assert "hello" in result["tools"][1]["result"]
    assert result["answer"] == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    assert result["changes"] == {
        "files": [
            {
                "path": "/notes.md",
                "change": "created",
                "diff": "--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hello\n",
            }
        ],
        "memory": [],
        "todos": None,
    }
    assert result["usage"]["input_tokens"] == sum(c["usage"]["input_tokens"] for c in result["calls"])
    assert chat.messages() == [] and chat.file("/notes.md") is None
