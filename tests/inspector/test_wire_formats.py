"""The exact wire body: inspect's ``?format=anthropic|openai`` is what the next run POSTs, through the SDKs.

The golden test covers both providers, a dangling ``tool_use`` (closed in memory
by inspect, stored by the run under the same seq) and replaced and excluded parts.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.fakes.provider_server import CHAT_COMPLETIONS, MESSAGES
from tests.inspector.conftest import Lab, assistant, by_id, calls, excluding, override_set, user
from tests.support.world import row_counts

NEW_TURN = "What should we do next?"
# 1 user · 2 assistant · 3 user · 4 assistant tool_use t1, never answered (a crash mid-turn)
DANGLING = [user("plan the launch"), assistant("on it"), user("check the files"), calls("t1", text="looking")]
PATHS = {"anthropic": MESSAGES, "openai": CHAT_COMPLETIONS}


def _without_new_turn(wire_format: str, body: dict[str, Any]) -> dict[str, Any]:
    """The run's first body minus its new user message (merged into the repair message on Anthropic)."""
    body = copy.deepcopy(body)
    last = body["messages"][-1]
    if wire_format == "openai":
        assert last == {"role": "user", "content": NEW_TURN}
        body["messages"].pop()
        return body
    assert last["content"][-1]["text"] == NEW_TURN
    last["content"].pop()
    return body


def _without_message_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """The message breakpoint sits on the last message: the new turn in the run, the repair in inspect."""
    body = copy.deepcopy(body)
    for message in body["messages"]:
        if isinstance(message["content"], list):
            for block in message["content"]:
                block.pop("cache_control", None)
    return body


def _furnished(lab: Lab, model: str) -> tuple[str, str]:
    agent = lab.agent(model=model, tools=["ls", "read_file", "grep", "write_todos"])
    lab.memory(agent, "/memories/AGENTS.md", "the team writes short notes")
    session = lab.session(agent, DANGLING)
    assert lab.put_agent(agent, override_set(["tool:grep"], {"system:agent": "Be brief."})).status_code == 200
    assert lab.put_session(session, override_set(replace={"message:1": "plan it"})).status_code == 200
    return agent, session


@pytest.mark.parametrize(
    ("wire_format", "model"), [("anthropic", "anthropic/claude-test"), ("openai", "openai/gpt-test")]
)
def test_inspect_equals_the_next_runs_first_request_in_the_providers_wire_format(
    lab: Lab, wire_format: str, model: str
):
    _, session = _furnished(lab, model)
    counts = row_counts(lab.engine)

    inspected = lab.inspect(session, format=wire_format)
    parts = lab.inspect(session)
    assert row_counts(lab.engine) == counts  # the repair was made in memory only
    assert lab.say(session, NEW_TURN).status_code == 201

    first_call = lab.fake.bodies(PATHS[wire_format])[0]
    assert _without_message_breakpoints(_without_new_turn(wire_format, first_call)) == (
        _without_message_breakpoints(inspected)
    )
    assert inspected["max_tokens"] == parts["output_reserve"]
    stored = lab.messages(session)
    repair = by_id(parts)["message:5"]
    assert (stored[4]["seq"], stored[4]["content"][0]["type"]) == (5, "tool_result")
    assert repair["included"] and "interrupted" in repair["preview"]
    assert "grep" not in json.dumps(inspected["tools"])


def test_the_anthropic_body_carries_cache_control_objects_and_the_bare_model(lab: Lab):
    _, session = _furnished(lab, "anthropic/claude-test")

    body = lab.inspect(session, format="anthropic")

    assert body["model"] == "claude-test"
    marked = [b for b in body["system"] if "cache_control" in b]
    assert [b["cache_control"] for b in marked] == [{"type": "ephemeral"}]
    assert body["system"][0] == {"type": "text", "text": "Be brief."}
    assert body["messages"][0]["content"] == [{"type": "text", "text": "plan it"}]


def test_put_and_inspect_see_the_dangling_tool_use_repair_and_the_run_honours_the_set(lab: Lab):
    agent = lab.agent(model="anthropic/claude-test")
    session = lab.session(agent, DANGLING)

    put = lab.put_session(session, excluding("message:4"))

    assert put.status_code == 200, put.get_json()
    assert put.get_json()["added"] == ["message:5"]
    assert lab.say(session, NEW_TURN).status_code == 201
    sent = lab.fake.bodies(MESSAGES)[0]
    assert [[b.get("text") for b in m["content"]] for m in sent["messages"]] == [
        ["plan the launch"],
        ["on it"],
        ["check the files", NEW_TURN],  # same-role messages merged once 4 and 5 are left out
    ]
