"""Overrides in real runs: what the fake Anthropic server receives, and the golden "inspect = next run"."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest

from hango.cli import demo
from hango.config import load_config
from hango.messages import Message, ToolUseBlock
from hango.store import TenantStore
from hango.store.context_overrides import StoredOverride, Target
from hango.telemetry import names
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import (
    ANTHROPIC,
    Lab,
    assistant,
    by_id,
    calls,
    excluding,
    fake_config,
    override_set,
    results,
    user,
)
from tests.support.clients import As

SECRET_FIFTH = "the fifth message says: pineapple"


def sent(lab: Lab, index: int = 0) -> dict[str, Any]:
    """The ``index``-th /v1/messages body the fake server received."""
    return lab.fake.bodies(MESSAGES)[index]


def texts(body: dict[str, Any]) -> list[str]:
    """Every text and tool result content of a wire body's messages, in order."""
    return [
        block.get("text") or block.get("content") or block.get("name")
        for message in body["messages"]
        for block in message["content"]
    ]


def system_texts(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The first line of each system block of a wire body, and whether it carries a breakpoint."""
    return [(b["text"].split("\n")[0], "cache_control" in b) for b in body["system"]]


def test_excluded_message_is_not_sent_in_the_next_run_but_still_stored(lab: Lab):
    session = lab.session(
        lab.agent(),
        [
            user("one"),
            assistant("two"),
            user("three"),
            assistant("four"),
            user(SECRET_FIFTH),
            assistant("six"),
        ],
    )
    assert lab.put_session(session, excluding("message:5")).status_code == 200

    assert lab.say(session, "seven").status_code == 201

    wire = json.dumps(sent(lab))
    assert "pineapple" not in wire
    assert texts(sent(lab)) == ["one", "two", "three", "four", "six", "seven"]
    stored = [m["content"][0]["text"] for m in lab.messages(session)]
    assert stored[4] == SECRET_FIFTH and len(stored) == 8


def test_a_replaced_message_sends_the_new_text_and_keeps_its_tool_blocks(lab: Lab):
    session = lab.session(
        lab.agent(), [user("start"), calls("t1", text="long musing"), results("t1"), assistant("ok")]
    )
    assert lab.put_session(session, override_set(replace={"message:2": "short"})).status_code == 200

    lab.say(session, "next")

    assert sent(lab)["messages"][1]["content"] == [
        {"type": "text", "text": "short"},
        {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
    ]


def test_an_excluded_tool_is_absent_from_the_request_even_when_a_skills_allowed_tools_names_it(lab: Lab):
    agent = lab.agent(tools=["ls", "read_file"])
    lab.skill(agent, "search", ["grep"])
    session = lab.session(agent, [user("hi"), assistant("hello")])
    lab.say(session, "first")
    assert [t["name"] for t in sent(lab, 0)["tools"]] == ["ls", "read_file", "grep"]

    assert lab.put_agent(agent, excluding("tool:grep")).status_code == 200
    lab.fake.reply(Message("assistant", (ToolUseBlock("g1", "grep", {"pattern": "x"}),)), "done")
    assert lab.say(session, "second").status_code == 201

    assert [t["name"] for t in sent(lab, 1)["tools"]] == ["ls", "read_file"]
    assert [t["name"] for t in sent(lab, 2)["tools"]] == ["ls", "read_file"]
    result = sent(lab, 2)["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "g1" and result["is_error"] is True
    assert [p["id"] for p in lab.inspect(session)["tools"]] == ["tool:ls", "tool:read_file", "tool:grep"]
    assert by_id(lab.inspect(session))["tool:grep"]["included"] is False


@pytest.mark.parametrize(
    ("excluded", "marked"),
    [
        # a system part before the breakpoint is excluded: the mark stays on the last stable block
        ("system:filesystem", "Memory file /memories/AGENTS.md:"),
        # the last stable block itself is excluded: the mark moves to the one before it
        ("system:memory:/memories/AGENTS.md", "Skills are instructions for particular"),
    ],
)
def test_the_cache_breakpoint_lands_on_a_sent_block_when_a_system_part_is_excluded(
    lab: Lab, excluded: str, marked: str
):
    agent = lab.agent()
    lab.memory(agent, "/memories/AGENTS.md", "short notes")
    session = lab.session(agent, [user("hi")])
    assert lab.put_agent(agent, excluding(excluded)).status_code == 200

    shown = lab.inspect(session)
    lab.say(session, "go")

    system = system_texts(sent(lab))
    marks = [text for text, cached in system if cached]
    assert len(marks) == 1 and marks[0].startswith(marked)
    assert len(system) == 5
    # the one cache model: every sent part up to the last message's breakpoint is a cached prefix,
    # the volatile todo list too; the last stable block sent is the one the system mark is on
    sent_system = [p for p in shown["system"] if p["included"]]
    assert all(p["cached_prefix"] for p in sent_system)
    stable = [p["id"] for p in sent_system if p["id"] != "system:todo"]
    assert by_id(shown)[stable[-1]]["preview"].startswith(marked)


def test_chat_spans_of_a_run_carry_the_number_of_active_overrides(lab: Lab, spans):
    agent = lab.agent()
    session = lab.session(agent, [user("one"), assistant("two"), user("three"), assistant("four")])
    lab.put_agent(agent, excluding("system:subagent", "tool:task"))
    lab.put_session(session, excluding("message:2"))
    lab.fake.reply(Message("assistant", (ToolUseBlock("l1", "ls", {}),)), "done")
    spans()  # forget the spans of the set-up

    assert lab.say(session, "five").status_code == 201

    chats = [s for s in spans() if s.name == names.SPAN_CHAT]
    assert len(chats) == 2
    for span in chats:
        assert span.attributes[names.CONTEXT_OVERRIDES] == 3
        assert span.attributes[names.CONTEXT_EXCLUDED_TOKENS] > 0
        assert span.attributes[names.CONTEXT_TRY] is False


def test_overrides_are_loaded_once_per_run(lab: Lab):
    agent = lab.agent()
    session = lab.session(agent, [user("one"), assistant("two")])
    changed = []

    def change_mid_run(body: dict) -> None:
        if not changed:  # the first call of the run: exclude message 2 from now on
            owner = uuid.UUID(lab.tenant.owner.user_id)
            rows = [StoredOverride("message:2", "exclude", None, None)]
            lab.store(
                lambda s: s.context_overrides.replace(Target("session", uuid.UUID(session)), rows, owner)
            )
            changed.append(True)

    lab.fake.validator = change_mid_run
    lab.fake.reply(Message("assistant", (ToolUseBlock("l1", "ls", {}),)), "done")
    assert lab.say(session, "three").status_code == 201
    lab.say(session, "four")

    assert texts(sent(lab, 0))[:2] == ["one", "two"]
    assert texts(sent(lab, 1))[:2] == ["one", "two"]  # same run, second turn: unchanged
    assert texts(sent(lab, 2))[:2] == ["one", "three"]  # the next run sees the change


def test_a_stored_set_gone_bad_is_sent_without_message_overrides(lab: Lab, caplog, spans):
    session = lab.session(lab.agent(), [user("one"), assistant("two")])
    owner = uuid.UUID(lab.tenant.owner.user_id)
    bad = [StoredOverride("message:1", "exclude", None, None)]  # the history would start with "two"
    lab.store(lambda s: s.context_overrides.replace(Target("session", uuid.UUID(session)), bad, owner))

    with caplog.at_level(logging.ERROR):
        assert lab.say(session, "three").status_code == 201

    assert texts(sent(lab)) == ["one", "two", "three"]
    assert any(
        "starts_with_assistant" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR
    )
    events = [e.name for s in spans() for e in s.events]
    assert names.EVENT_OVERRIDES_DROPPED in events


def normalised(body: dict[str, Any]) -> dict[str, Any]:
    """A wire body without message breakpoints (the next run moves that one to its new message)."""
    messages = [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
        for m in body["messages"]
    ]
    return {**body, "messages": messages}


def test_inspect_equals_the_next_runs_first_request_minus_its_new_user_message(
    make_app, fake, engine, database_url
):
    seeded = demo.seed(engine, load_config(overrides={"database_url": database_url}))
    tenant, agent_id = uuid.UUID(seeded["tenant_id"]), uuid.UUID(seeded["agent_id"])
    with engine.begin() as conn:
        TenantStore(conn, tenant).agents.update(agent_id, model=ANTHROPIC)
    owner = As(make_app(**fake_config(fake)).test_client(), seeded["owner_key"], str(tenant), "", "owner")
    path = f"/v1/sessions/{seeded['session_id']}"
    assert (
        owner.put(f"/v1/agents/{agent_id}/context-overrides", json=excluding("system:subagent")).status_code
        == 200
    )
    assert owner.put(f"{path}/context-overrides", json=excluding("message:2")).status_code == 200

    inspected = owner.get(f"{path}/context", query_string={"format": "anthropic"}).get_json()
    parts = owner.get(f"{path}/context").get_json()
    assert (
        owner.post_and_wait(f"{path}/messages", json={"content": "What should we do next?"}).status_code
        == 201
    )

    first_call = fake.bodies(MESSAGES)[0]
    assert first_call["messages"][-1]["content"] == [
        {"type": "text", "text": "What should we do next?", "cache_control": {"type": "ephemeral"}}
    ]
    assert normalised({**first_call, "messages": first_call["messages"][:-1]}) == normalised(inspected)
    assert sum(p["included"] for p in parts["messages"]) == 22 - 2 and len(inspected["system"]) == 5


def test_the_demo_runs_each_turn_on_the_sessions_current_state_no_call_carries_a_stale_todo_list(
    make_app, fake, engine, database_url
):
    seeded = demo.seed(engine, load_config(overrides={"database_url": database_url}))
    owner = As(
        make_app(**fake_config(fake)).test_client(), seeded["owner_key"], seeded["tenant_id"], "", "owner"
    )
    path = f"/v1/sessions/{seeded['session_id']}"
    calls = list(reversed(owner.get(f"{path}/calls", query_string={"limit": 100}).get_json()["items"]))

    todo = [
        next(p for p in owner.get(f"{path}/calls/{c['id']}").get_json()["parts"] if p["id"] == "system:todo")
        for c in calls
    ]

    # the todo list is written by the third turn: every call after that one carries it as it is now
    written = next(i for i, part in enumerate(todo) if not part["changed_since_call"])
    assert written > 0 and all(not part["changed_since_call"] for part in todo[written:])
    assert not [c for c in calls[written + 1 :] if (c["cache"] or {}).get("miss_part") == "system:todo"]


def test_the_summary_part_can_be_excluded_and_replaced(lab: Lab):
    session = lab.session(lab.agent(), [user("one"), assistant("two"), user("three"), assistant("four")])
    lab.summary(session, 2, "they counted to two")

    assert lab.put_session(session, excluding("summary")).status_code == 200
    lab.say(session, "five")
    assert lab.put_session(session, override_set(replace={"summary": "counting"})).status_code == 200
    lab.say(session, "six")

    assert texts(sent(lab, 0)) == ["three", "four", "five"]
    assert texts(sent(lab, 1))[0] == "counting"
