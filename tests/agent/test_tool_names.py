"""The system prompt tells the model only what it has: contributors name only the tools a request carries.

"Carries" means after the agent's tool list, its skills' ``allowed_tools`` and
the tool overrides are applied — what the allowlist slot lets through.
"""

from __future__ import annotations

import re
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from hango.agent.assembly import capture
from hango.agent.options import BUILTIN_TOOLS
from hango.agent.overrides import EXCLUDE, Override, Overrides
from hango.agent.parts import tool_part
from hango.agent.stack import build_chain
from hango.agent.state import AgentConfig, Caller, RunState, Skill

USER_TEXT = ("system:agent", "system:memory:")  # what the user wrote is theirs to word


def state_of(
    tools: tuple[str, ...],
    skill_tools: tuple[str, ...] = (),
    excluded: tuple[str, ...] = (),
    memory: dict[str, str] | None = None,
) -> RunState:
    agent = AgentConfig(uuid.uuid4(), uuid.uuid4(), "a", "offline/echo", "You help.", tools, {}, 200_000)
    return RunState(
        uuid.uuid4(),
        uuid.uuid4(),
        agent,
        Caller(None, None),
        skills=[Skill("deploy", "ship the release", "how", skill_tools)] if skill_tools else [],
        todos=[{"content": "ship", "status": "pending"}],
        memory=memory if memory is not None else {},
        overrides=Overrides.of([Override(tool_part(t), EXCLUDE) for t in excluded], []),
    )


def sent(state: RunState) -> tuple[dict[str, str], set[str]]:
    """The request's system text by part (contributors only) and its tool names."""
    draft = capture(build_chain(), state)
    system = {s.part: s.block.text for s in draft.system if not s.part.startswith(USER_TEXT)}
    return system, {t.name for t in draft.tools}


def named(text: str) -> set[str]:
    return {t for t in BUILTIN_TOOLS if re.search(rf"(?<![\w/-]){re.escape(t)}(?![\w-])", text)}


def test_the_filesystem_block_names_only_the_filesystem_tools_sent():
    system, tools = sent(state_of(("ls",)))
    assert tools == {"ls"}
    assert named(system["system:filesystem"]) == {"ls"}
    assert "the tool ls." in system["system:filesystem"]


def test_the_filesystem_block_follows_skills_and_tool_overrides():
    system, tools = sent(
        state_of(("ls", "edit_file", "grep"), skill_tools=("read_file",), excluded=("grep",))
    )
    assert tools == {"ls", "edit_file", "read_file"}
    assert named(system["system:filesystem"]) == {"ls", "read_file", "edit_file"}


def test_the_filesystem_block_is_left_out_when_no_filesystem_tool_is_sent():
    system, _ = sent(state_of(("ls", "write_todos"), excluded=("ls",)))
    assert "system:filesystem" not in system


def test_the_skills_block_names_read_file_only_when_it_is_sent():
    without, _ = sent(state_of(("ls",), skill_tools=("grep",)))
    with_it, _ = sent(state_of(("read_file",), skill_tools=("grep",)))
    assert named(without["system:skills"]) == set()
    assert named(with_it["system:skills"]) == {"read_file"}


def test_the_subagent_block_is_sent_only_with_the_task_tool():
    excluded, _ = sent(state_of(("task", "ls"), excluded=("task",)))
    carried, _ = sent(state_of(("task", "ls")))
    assert "system:subagent" not in excluded
    assert "task" in named(carried["system:subagent"])


def test_the_todo_block_names_write_todos_only_when_it_is_sent():
    excluded, _ = sent(state_of(("write_todos",), excluded=("write_todos",)))
    carried, _ = sent(state_of(("write_todos",)))
    assert named(excluded["system:todo"]) == set() and "ship" in excluded["system:todo"]
    assert named(carried["system:todo"]) == {"write_todos"}


def test_the_memory_blocks_name_no_tool():
    cut = state_of(("ls",), memory={"/memories/a.md": "x" * 300_000})
    system, _ = sent(state_of(("ls",)))
    assert named(system["system:memory"]) == set()
    blocks = capture(build_chain(), cut).system
    assert named(next(b.block.text for b in blocks if b.part == "system:memory:/memories/a.md")) == set()


TOOLS = st.lists(st.sampled_from(BUILTIN_TOOLS), unique=True).map(tuple)


@settings(max_examples=200, deadline=None)
@given(tools=TOOLS, skill_tools=TOOLS, excluded=TOOLS)
def test_no_tool_name_appears_in_the_system_text_unless_the_request_carries_it(tools, skill_tools, excluded):
    system, carried = sent(state_of(tools, skill_tools, excluded))
    for part, text in system.items():
        assert named(text) <= carried, part
