"""Golden tests of assembled requests: exactly what a model receives.

The demo agent's next request is assembled from the seeded demo session by the
assembly path that runs, inspect, try and the override checks share
(``prepare_session``, then the chain run to ``capture``); an anthropic agent's run
is recorded on the wire by the fake server. The snapshots are JSON files in
``tests/runtime/golden/``. After an intended change to a prompt, a tool definition
or the assembly, regenerate them and review the diff::

    HANGO_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/runtime/test_golden.py -p no:cacheprovider
"""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hango.agent.assembly import capture, prepare_session
from hango.agent.cache_breakpoints import PLACEMENT
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.state import Caller
from hango.cli import demo
from hango.config import Config, load_config
from hango.inspector.trying import new_turn
from hango.messages import Message, TextBlock, block_to_dict
from hango.store import TenantStore
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.chat import tool_call
from tests.runtime.conftest import OpenChat
from tests.support.golden import assert_golden

GOLDEN = Path(__file__).parent / "golden"

NEXT_TEXT = "What should we do next?"
DEMO_SYSTEM_PARTS = [
    "system:agent",
    "system:filesystem",
    "system:subagent",
    "system:skills",
    "system:memory:/memories/AGENTS.md",
    "system:todo",
]
DEMO_TOOLS = ["ls", "read_file", "write_file", "edit_file", "glob", "grep", "task", "write_todos"]


@pytest.fixture
def demo_config(database_url: str) -> Config:
    return load_config(overrides={"database_url": database_url})


@pytest.fixture
def demo_request(engine: sa.Engine, demo_config: Config, clean_db: None) -> Draft:
    """The request the demo agent's model gets for one more user text in the seeded demo session."""
    seeded = demo.seed(engine, demo_config)
    return next_request(Deps(engine, demo_config), uuid.UUID(seeded["tenant_id"]), seeded["session_id"])


def next_request(deps: Deps, tenant_id: uuid.UUID, session_id: str) -> Draft:
    """The session's next call for one more user text, prepared and captured by inspect's own path."""
    with deps.engine.connect() as conn:
        store = TenantStore(conn, tenant_id)
        session = store.sessions.get(uuid.UUID(session_id))
        prepared = prepare_session(deps, store, session, Caller(None, None))
    prepared.state.history.append(new_turn(prepared.state, NEXT_TEXT))
    return capture(prepared.chain, prepared.state)


def test_demo_system_blocks_in_order(demo_request: Draft) -> None:
    assert [s.part for s in demo_request.system] == DEMO_SYSTEM_PARTS
    assert [s.block.cache_control for s in demo_request.system] == [False] * 4 + [True, False]
    assert_golden(
        GOLDEN / "demo_system.json",
        [
            {"part": s.part, "text": s.block.text, "cache_control": s.block.cache_control}
            for s in demo_request.system
        ],
    )


def test_demo_tools(demo_request: Draft) -> None:
    assert [t.name for t in demo_request.tools] == DEMO_TOOLS
    assert_golden(
        GOLDEN / "demo_tools.json",
        [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in demo_request.tools
        ],
    )


def test_demo_messages(demo_request: Draft) -> None:
    messages = demo_request.messages
    count = len(demo.TURNS) * 2 + sum(text.count("/tool ") > 0 for text in demo.TURNS) * 2 + 1
    assert [m.part for m in messages] == [f"message:{seq}" for seq in range(1, count + 1)]
    assert [m.message.role for m in messages] == ["user", "assistant"] * (count // 2) + ["user"]
    # the last message carries a breakpoint, and bridges (the demo holds more than 20 blocks) each
    # end at most 20 blocks before the next breakpoint: the next turn finds this one's cache
    marked = [i for i, m in enumerate(messages) if m.message.cache_control]
    ends = list(itertools.accumulate(len(m.message.content) for m in messages))
    assert marked[-1] == count - 1 and 1 < len(marked) <= 3
    assert all(ends[b] - ends[a] <= PLACEMENT.lookback_blocks for a, b in itertools.pairwise(marked))
    assert messages[-1].message.content == (TextBlock(NEXT_TEXT),)
    assert_golden(GOLDEN / "demo_messages.json", [_sourced_message(m.part, m.message) for m in messages])


def _sourced_message(part: str, message: Message) -> dict[str, Any]:
    return {"part": part, "role": message.role, "content": [block_to_dict(b) for b in message.content]}


def test_anthropic_run_on_the_wire(open_chat: OpenChat, fake: FakeProviderServer) -> None:
    chat = open_chat("anthropic/claude-test")
    for path, content in demo.MEMORY.items():
        assert (
            chat.who.put(f"/v1/agents/{chat.agent_id}/memory{path}", json={"content": content}).status_code
            == 200
        )
    for skill in demo.SKILLS:
        assert chat.who.post(f"/v1/agents/{chat.agent_id}/skills", json=skill).status_code == 201
    fake.reply(
        tool_call(
            "toolu_01", "write_todos", {"todos": [{"content": "ship", "status": "in_progress"}]}, "Planning."
        ),
        "Planned.",
    )

    assert chat.say("Plan the launch.").status_code == 201

    first, second = fake.bodies(MESSAGES)
    cached = [
        [i for i, block in enumerate(body["system"]) if "cache_control" in block] for body in (first, second)
    ]
    assert cached == [[4], [4]]  # the memory block: the last stable one, before the volatile todo list
    assert [m["content"][-1].get("cache_control") for m in second["messages"]] == [
        None,
        None,
        {"type": "ephemeral"},
    ]
    assert second["system"][5]["text"].endswith("1. [~] ship")  # the todo written by the first turn
    assert_golden(GOLDEN / "anthropic_wire.json", [first, second])
