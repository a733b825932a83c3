"""The ``task`` tool: a subagent through the same chain, with a fresh history kept out of the session."""

from __future__ import annotations

from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.reliability.anthropic_rules import problem as anthropic_problem
from tests.runtime.chat import shape, tool_call
from tests.runtime.conftest import OpenChat

TASK = "Count the files in / and answer with the number."


def test_task_runs_a_subagent_with_a_fresh_history(open_chat: OpenChat, fake: FakeProviderServer) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.validator = anthropic_problem
    fake.reply(
        tool_call("toolu_task", "task", {"description": TASK}),  # the parent delegates
        tool_call("toolu_ls", "ls", {}),  # the subagent uses a tool of its own
        "There are 2 entries.",  # the subagent's final answer
        "The subagent counted 2 entries.",  # the parent's final answer
    )

    response = chat.say("How many files are there? Ask a subagent.")

    assert response.status_code == 201, response.get_json()
    parent, child, child_again, parent_again = fake.bodies(MESSAGES)
    assert child["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": TASK, "cache_control": {"type": "ephemeral"}}]}
    ]
    assert [m["role"] for m in child_again["messages"]] == ["user", "assistant", "user"]
    assert "task" in _tool_names(parent)
    assert "task" not in _tool_names(child)
    assert child["system"][0] == parent["system"][0]  # the same agent, through the same chain
    run_id = response.get_json()["run"]["id"]
    assert [purpose for purpose, _ in chat.usage()] == ["run", "subagent", "subagent", "run"]
    assert {run for _, run in chat.usage()} == {run_id}
    history = chat.messages()
    assert shape(history) == [
        (1, "user", ["text"]),
        (2, "assistant", ["tool_use"]),
        (3, "user", ["tool_result"]),
        (4, "assistant", ["text"]),
    ]
    assert history[2]["content"][0]["content"] == "There are 2 entries."
    assert parent_again["messages"][-1]["content"][0]["content"] == "There are 2 entries."


def _tool_names(body: dict) -> list[str]:
    return [tool["name"] for tool in body["tools"]]


def test_a_failed_subagent_call_leaves_the_session_as_it_was(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.reply(tool_call("toolu_task", "task", {"description": TASK}))
    fake.validator = lambda body: "refused" if len(fake.requests) > 1 else None  # the subagent's call fails
    before = chat.stored()

    response = chat.say("Ask a subagent.")

    assert response.status_code == 502
    assert chat.stored() == before
    assert chat.runs()[-1]["status"] == "failed"
