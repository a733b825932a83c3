"""The prompt contributors: filesystem, skills, memory and todo blocks, and their run hooks."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from hango.agent.chain import Chain
from hango.agent.deps import RunContext
from hango.agent.middleware import memory, skills
from hango.agent.middleware.filesystem import INSTRUCTIONS, FilesystemMiddleware
from hango.agent.middleware.memory import EMPTY, MemoryMiddleware, bounded
from hango.agent.middleware.skills import SkillsMiddleware
from hango.agent.middleware.todo import TodoMiddleware
from hango.agent.parts import SourcedBlock, kind_of
from hango.agent.state import RunState, Skill
from hango.agent.tools.base import ToolContext, run_tool
from hango.agent.toolset import toolset_of
from hango.messages import Block, ToolUseBlock
from hango.store import TenantStore
from tests.support.sql import count_statements


def with_agent(state: RunState, **changes) -> RunState:
    """``state`` with its agent's tools or settings changed."""
    return dataclasses.replace(state, agent=dataclasses.replace(state.agent, **changes))


def parts(blocks: list[SourcedBlock]) -> list[str]:
    return [block.part for block in blocks]


def prepare(middleware, state: RunState, store: TenantStore, engine: sa.Engine) -> list[str]:
    """Run ``middleware.before_run`` with the store in its run context; the statements it ran."""
    with count_statements(engine) as statements:
        middleware.before_run(state, RunContext(store, None))
    return statements


def blocks(middleware, state: RunState) -> list[SourcedBlock]:
    return middleware.system_blocks(state.agent, state, toolset_of(state.agent, state))


# --- filesystem ----------------------------------------------------------------------------


def test_filesystem_block_and_tools(state: RunState) -> None:
    middleware = FilesystemMiddleware()
    assert blocks(middleware, state) == [SourcedBlock("system:filesystem", Block(INSTRUCTIONS))]
    assert "/memories/ is your memory" in INSTRUCTIONS
    assert "/skills/<name>/SKILL.md" in INSTRUCTIONS
    names = [tool.name for tool in middleware.tools(state.agent, state)]
    assert names == ["ls", "read_file", "write_file", "edit_file", "glob", "grep"]


def test_filesystem_block_needs_one_filesystem_tool(state: RunState) -> None:
    middleware = FilesystemMiddleware()
    assert parts(blocks(middleware, with_agent(state, tools=("grep",)))) == ["system:filesystem"]
    without = with_agent(state, tools=("task", "write_todos"))
    assert blocks(middleware, without) == []
    assert len(middleware.tools(without.agent, without)) == 6


# --- skills --------------------------------------------------------------------------------


def add_skills(store: TenantStore, state: RunState, *names: str) -> None:
    for name in names:
        store.skills.create(
            state.agent.id, name, description=f"about {name}", body=f"how to {name}", allowed_tools=["grep"]
        )


def test_skills_load_in_one_query_into_the_index(
    store: TenantStore, state: RunState, engine: sa.Engine
) -> None:
    add_skills(store, state, "review", "deploy")
    assert len(prepare(SkillsMiddleware(), state, store, engine)) == 1
    assert state.skills == [
        Skill("deploy", "about deploy", "how to deploy", ("grep",)),
        Skill("review", "about review", "how to review", ("grep",)),
    ]
    [block] = blocks(SkillsMiddleware(), state)
    assert block.part == "system:skills"
    header = skills.HEADER + skills.READ_HINT + "\n\n"
    assert block.block.text == header + "Available skills:\n- deploy: about deploy\n- review: about review"
    assert "read_file /skills/<name>/SKILL.md" in skills.READ_HINT


def test_skills_index_without_skills(store: TenantStore, state: RunState, engine: sa.Engine) -> None:
    prepare(SkillsMiddleware(), state, store, engine)
    assert blocks(SkillsMiddleware(), state) == [
        SourcedBlock("system:skills", Block(skills.HEADER + skills.READ_HINT + "\n\nNo skills yet."))
    ]


def test_skills_load_is_bounded(
    store: TenantStore, state: RunState, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(skills, "MAX_SKILLS", 2)
    add_skills(store, state, "c", "a", "b")
    prepare(SkillsMiddleware(), state, store, engine)
    assert [skill.name for skill in state.skills] == ["a", "b"]


def test_disabled_skills_load_and_emit_nothing(
    store: TenantStore, state: RunState, engine: sa.Engine
) -> None:
    add_skills(store, state, "deploy")
    disabled = with_agent(state, settings={"skills": False})
    assert prepare(SkillsMiddleware(), disabled, store, engine) == []
    assert disabled.skills == []
    assert blocks(SkillsMiddleware(), disabled) == []


# --- memory --------------------------------------------------------------------------------


def add_memory(store: TenantStore, state: RunState, files: dict[str, str]) -> None:
    for path, content in files.items():
        store.memory_files.put(state.agent.id, path, content)


def test_memory_loads_in_one_query_one_block_per_file_by_path(
    store: TenantStore, state: RunState, engine: sa.Engine
) -> None:
    add_memory(
        store, state, {"/memories/b.md": "bee", "/memories/AGENTS.md": "be kind", "/memories/a/x.md": "ax"}
    )
    assert len(prepare(MemoryMiddleware(), state, store, engine)) == 1
    assert blocks(MemoryMiddleware(), state) == [
        SourcedBlock(
            "system:memory:/memories/AGENTS.md", Block("Memory file /memories/AGENTS.md:\n\nbe kind")
        ),
        SourcedBlock("system:memory:/memories/a/x.md", Block("Memory file /memories/a/x.md:\n\nax")),
        SourcedBlock("system:memory:/memories/b.md", Block("Memory file /memories/b.md:\n\nbee")),
    ]


def test_empty_memory_emits_its_instructions(store: TenantStore, state: RunState, engine: sa.Engine) -> None:
    prepare(MemoryMiddleware(), state, store, engine)
    assert blocks(MemoryMiddleware(), state) == [SourcedBlock("system:memory", Block(EMPTY))]
    assert "/memories/" in EMPTY


def test_disabled_memory_loads_and_emits_nothing(
    store: TenantStore, state: RunState, engine: sa.Engine
) -> None:
    add_memory(store, state, {"/memories/a.md": "a"})
    disabled = with_agent(state, settings={"memory": False})
    assert prepare(MemoryMiddleware(), disabled, store, engine) == []
    assert disabled.memory == {}
    assert blocks(MemoryMiddleware(), disabled) == []


def test_memory_file_count_is_bounded_by_path(
    store: TenantStore, state: RunState, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "MAX_MEMORY_FILES", 2)
    add_memory(store, state, {"/memories/c.md": "c", "/memories/a.md": "a", "/memories/b.md": "b"})
    prepare(MemoryMiddleware(), state, store, engine)
    assert state.memory == {"/memories/a.md": "a", "/memories/b.md": "b"}


def test_memory_budget_cuts_one_file_and_drops_the_rest(
    store: TenantStore, state: RunState, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "MAX_MEMORY_CHARS", 10)
    add_memory(
        store, state, {"/memories/a.md": "123456", "/memories/b.md": "abcdefgh", "/memories/c.md": "c"}
    )
    prepare(MemoryMiddleware(), state, store, engine)
    assert state.memory == {"/memories/a.md": "123456", "/memories/b.md": "abcd" + memory.CUT_NOTE}
    assert bounded(state.memory) == state.memory


def test_memory_written_by_a_tool_shows_in_the_next_blocks(
    ctx: ToolContext, store: TenantStore, state: RunState, engine: sa.Engine
) -> None:
    prepare(MemoryMiddleware(), state, store, engine)
    [write_file] = [tool for tool in ctx.chain.tools(state).values() if tool.name == "write_file"]
    use = ToolUseBlock("toolu_1", "write_file", {"path": "/memories/new.md", "content": "remember"})
    assert not run_tool(write_file, use, ctx).is_error
    assert parts(blocks(MemoryMiddleware(), state)) == ["system:memory:/memories/new.md"]


# --- todo ----------------------------------------------------------------------------------


def test_todo_block_shows_the_list(state: RunState) -> None:
    middleware = TodoMiddleware()
    header = "Your todo list for this session (replace it with write_todos as the work moves on):\n\n"
    assert blocks(middleware, state) == [SourcedBlock("system:todo", Block(header + "no todos yet"))]
    state.todos = [{"content": "plan", "status": "completed"}, {"content": "build", "status": "pending"}]
    assert blocks(middleware, state) == [
        SourcedBlock("system:todo", Block(header + "1. [x] plan\n2. [ ] build"))
    ]
    assert [tool.name for tool in middleware.tools(state.agent, state)] == ["write_todos"]


def test_todo_block_needs_write_todos(state: RunState) -> None:
    assert blocks(TodoMiddleware(), with_agent(state, tools=("ls",))) == []


# --- together ------------------------------------------------------------------------------


def test_contributors_emit_valid_parts_in_stack_order(
    store: TenantStore, state: RunState, engine: sa.Engine
) -> None:
    add_skills(store, state, "deploy")
    add_memory(store, state, {"/memories/b.md": "b", "/memories/a.md": "a"})
    chain = Chain([FilesystemMiddleware(), SkillsMiddleware(), MemoryMiddleware(), TodoMiddleware()])
    with count_statements(engine) as statements:
        chain.before_run(state, RunContext(store, None))
    assert len(statements) == 2
    ids = parts(chain.system_blocks(state))
    assert ids == [
        "system:agent",
        "system:filesystem",
        "system:skills",
        "system:memory:/memories/a.md",
        "system:memory:/memories/b.md",
        "system:todo",
    ]
    assert {kind_of(part) for part in ids} == {"system"}
