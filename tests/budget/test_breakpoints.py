"""Prompt-cache breakpoints: the last stable system block and the last message, never ``system:todo``.

First on drafts (every placement, by example and as a property), then on the
wire: what the real Anthropic SDK sends the fake server, and that the OpenAI
adapter drops the marks.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hango.agent.cache_breakpoints import PLACEMENT, with_breakpoints
from hango.agent.draft import Draft
from hango.agent.parts import SourcedBlock, SourcedMessage, memory_part, message_part, system_part
from hango.messages import Block, Message, TextBlock, ToolUseBlock
from tests.budget.conftest import FAKE_MODEL, make_agent, make_session, say
from tests.fakes.provider_server import CHAT_COMPLETIONS, MESSAGES, FakeProviderServer
from tests.support.clients import As

TODO = system_part("todo")
STABLE = (
    system_part("agent"),
    system_part("filesystem"),
    system_part("skills"),
    memory_part("/memories/a.md"),
)


def draft(parts: list[str], messages: int = 3, marked: bool = False) -> Draft:
    """A draft with one block per part id and ``messages`` alternating messages, all marked when ``marked``."""
    system = tuple(SourcedBlock(part, Block(f"block {part}", marked)) for part in parts)
    history = tuple(
        SourcedMessage(
            message_part(i + 1), Message("user" if i % 2 == 0 else "assistant", (TextBlock("m"),), marked)
        )
        for i in range(messages)
    )
    return Draft("offline/echo", system, (), history)


def marks(d: Draft) -> tuple[list[str], list[int]]:
    """The parts of the marked system blocks, and the indexes of the marked messages."""
    system = [s.part for s in d.system if s.block.cache_control]
    return system, [i for i, m in enumerate(d.messages) if m.message.cache_control]


def test_the_last_stable_block_and_the_last_message_carry_the_breakpoints() -> None:
    assert marks(with_breakpoints(draft([*STABLE, TODO]))) == ([STABLE[-1]], [2])


def test_todo_as_the_last_block_passes_the_mark_to_the_block_before_it() -> None:
    assert marks(with_breakpoints(draft([system_part("agent"), TODO]))) == ([system_part("agent")], [2])


def test_todo_as_the_only_block_carries_no_mark() -> None:
    assert marks(with_breakpoints(draft([TODO]))) == ([], [2])


def test_todo_between_stable_blocks_is_skipped() -> None:
    parts = [system_part("agent"), TODO, system_part("skills")]
    assert marks(with_breakpoints(draft(parts))) == ([system_part("skills")], [2])


def test_nothing_to_mark_leaves_no_mark() -> None:
    assert marks(with_breakpoints(draft([], messages=0))) == ([], [])


def test_earlier_marks_are_cleared() -> None:
    assert marks(with_breakpoints(draft([*STABLE, TODO], messages=5, marked=True))) == ([STABLE[-1]], [4])


@given(
    st.lists(st.sampled_from([*STABLE, TODO]), max_size=8),
    st.integers(0, 6),
    st.booleans(),
)
def test_breakpoints_as_a_property(parts: list[str], messages: int, marked: bool) -> None:
    system, history = marks(with_breakpoints(draft(parts, messages, marked)))
    stable = [i for i, part in enumerate(parts) if part != TODO]

    assert TODO not in system
    assert len(system) + len(history) <= min(2, PLACEMENT.max_breakpoints)
    assert system == ([parts[stable[-1]]] if stable else [])
    assert history == ([messages - 1] if messages else [])


# -- on the wire -------------------------------------------------------------------------------


def cache_marks(body: Any) -> list[str]:
    """Where ``cache_control`` is in a Messages API body: ``system[i]``, ``messages[i][j]``, ``tools[i]``."""
    found = [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    found += [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    for i, message in enumerate(body["messages"]):
        blocks = message["content"] if isinstance(message["content"], list) else []
        found += [f"messages[{i}][{j}]" for j, b in enumerate(blocks) if "cache_control" in b]
    assert json.dumps(body).count("cache_control") == len(found)
    return found


def agent_with_todo_and_memory(who: As, model: str) -> str:
    """An agent whose system blocks end with a memory file and then ``system:todo``."""
    agent = make_agent(who, model=model, tools=["ls", "write_todos"], settings={"skills": False})
    assert who.put(f"/v1/agents/{agent}/memory/notes.md", json={"content": "prefers tea"}).status_code == 200
    return make_session(who, agent)


def test_the_anthropic_wire_carries_the_marks_on_the_memory_block_and_the_last_message(
    fake: FakeProviderServer, fake_owner: As
) -> None:
    session = agent_with_todo_and_memory(fake_owner, FAKE_MODEL)
    fake.reply(
        Message("assistant", (TextBlock("looking"), ToolUseBlock("toolu_1", "ls", {"path": "/"}))), "done"
    )

    say(fake_owner, session, "what is there?")
    say(fake_owner, session, "thanks")

    bodies = fake.bodies(MESSAGES)
    assert len(bodies) == 3
    for body in bodies:
        texts = [b["text"] for b in body["system"]]
        assert texts[-1].startswith("Your todo list") and texts[-2].startswith(
            "Memory file /memories/notes.md"
        )
        last = len(body["messages"]) - 1
        assert cache_marks(body) == [
            f"system[{len(texts) - 2}]",
            f"messages[{last}][{len(body['messages'][last]['content']) - 1}]",
        ]
    assert bodies[1]["messages"][-1]["content"][-1]["type"] == "tool_result"


def test_the_openai_adapter_drops_the_marks(fake: FakeProviderServer, fake_owner: As) -> None:
    session = agent_with_todo_and_memory(fake_owner, "openai/gpt-fake")

    say(fake_owner, session, "hello")

    [body] = fake.bodies(CHAT_COMPLETIONS)
    assert "cache_control" not in json.dumps(body)
    assert "prefers tea" in body["messages"][0]["content"]
