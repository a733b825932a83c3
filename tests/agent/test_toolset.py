"""The toolset: one frozen value per call naming each tool's part, source and state, read by every reader
of what a call carries, and the source a call of a tool is dispatched through."""

from __future__ import annotations

import dataclasses
import uuid
from types import SimpleNamespace

import pytest

from hango.agent.assembly import capture
from hango.agent.middleware.mcp_tools import Listed, McpToolsMiddleware, ServerTool, unavailable_tools
from hango.agent.overrides import EXCLUDE, Override, Overrides
from hango.agent.parts import server_part, server_tool_name, server_tool_part
from hango.agent.stack import build_chain
from hango.agent.state import RUN, AgentConfig, Caller, RunState, Skill, scratch_turn
from hango.agent.tools.base import ToolContext, ToolFailure
from hango.agent.toolset import AGENT, SKILLS, Toolset, ToolState, toolset_of
from hango.inspector.inspection import Assembly, parts_of
from hango.inspector.snapshot import Snapshot, ToolView
from hango.inspector.suggestions import Thresholds, suggest
from hango.mcp.tool_lists import TASK_REQUIRED
from hango.messages import ToolDef
from hango.store.messages import ToolUsage

SERVER = SimpleNamespace(id=uuid.UUID(int=7), name="time")


def served(tool: str) -> ServerTool:
    definition = ToolDef(
        server_tool_name("time", tool), "tells", {"type": "object"}, server_tool_part("time", tool)
    )
    return ServerTool(SERVER, tool, definition)


def state_of(excluded: tuple[str, ...] = (), mode=RUN) -> RunState:
    agent = AgentConfig(
        uuid.uuid4(), uuid.uuid4(), "a", "offline/echo", "You help.", ("ls", "task"), {}, 200_000
    )
    tools = {t.definition.name: t for t in (served("now"), served("zone"))}
    return RunState(
        uuid.uuid4(),
        uuid.uuid4(),
        agent,
        Caller(None, None),
        skills=[Skill("deploy", "ship", "how", ("grep",))],
        served_tools=tools,
        overrides=Overrides.of([Override(p, EXCLUDE) for p in excluded], []),
        mode=mode,
    )


def test_a_call_has_one_toolset_naming_each_tools_part_source_and_state():
    state = state_of(("tool:ls", server_part("time")))
    tools = toolset_of(state.agent, state)

    assert tools.states == (
        ToolState("grep", "tool:grep", SKILLS, True),
        ToolState("ls", "tool:ls", AGENT, True, "tool:ls"),
        ToolState("task", "tool:task", AGENT, True),
        ToolState("time__now", "tool:time/now", "tool:time/*", True, "tool:time/*"),
        ToolState("time__zone", "tool:time/zone", "tool:time/*", True, "tool:time/*"),
    )
    assert tools.sent == {"grep", "task"}
    assert tools.state("write_file") == ToolState("write_file", "tool:write_file", AGENT, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tools.sent = frozenset()  # type: ignore[misc]


def test_the_allowlist_slot_and_the_contributors_read_the_calls_toolset():
    state = state_of(("tool:task", server_tool_part("time", "now")))
    draft = capture(build_chain(), state)

    tools = toolset_of(state.agent, state)
    assert {t.name for t in draft.tools} == tools.sent == {"grep", "ls", "time__zone"}
    assert "system:subagent" not in {s.part for s in draft.system}  # ``task`` is not sent
    assert [entry.parts for entry in draft.report.left_out if entry.by == "tool_allowlist"] == [
        ("tool:task", "tool:time/now")
    ]


def test_a_server_tools_calls_answered_by_names_its_server_and_a_built_ins_nothing():
    state = state_of()
    tools: Toolset = toolset_of(state.agent, state)

    assert tools.answered_by("time__now") == {
        "server": "time",
        "server_id": str(SERVER.id),
        "server_tool": "now",
    }
    assert tools.answered_by("ls") == {}


def test_a_server_tools_span_attributes_are_its_sources_and_a_built_ins_none():
    state = state_of()
    tools = toolset_of(state.agent, state)

    assert tools.span_of("time__now") == {
        "hango.mcp.server": "time",
        "hango.mcp.server.id": str(SERVER.id),
        "hango.mcp.tool": "now",
    }
    assert tools.span_of("ls") == {}


def test_a_try_dispatches_a_server_tool_through_the_scratch_source_which_calls_no_server():
    """The try's source makes tools that refuse: nothing reaches a server, nothing is audited (no deps)."""
    middleware = McpToolsMiddleware()
    run_state, try_state = state_of(), state_of(mode=scratch_turn("t1"))
    ran = {t.name: t for t in middleware.tools(run_state.agent, run_state)}
    tried = {t.name: t for t in middleware.tools(try_state.agent, try_state)}

    assert [t.definition for t in tried.values()] == [t.definition for t in ran.values()]
    assert tried["time__now"].execute is not ran["time__now"].execute
    ctx = ToolContext(None, try_state, None, build_chain())  # type: ignore[arg-type]
    with pytest.raises(ToolFailure, match="a try does not call MCP servers"):
        tried["time__now"].execute({}, ctx)
    # the same definition keeps each source's tool: a later run's call still reaches the server's source
    assert middleware.tools(run_state.agent, run_state)[0] is ran["time__now"]


def test_the_inspectors_parts_name_each_served_tools_source_as_the_calls_toolset_does():
    """A served tool's source is its source's to say, not read off the name the model knows it by."""
    state = state_of()
    clock = ServerTool(SERVER, "clock", ToolDef("clock", "tells", {"type": "object"}, "tool:time/clock"))
    state.served_tools = {"clock": clock}
    draft = capture(build_chain(), state)

    parts = parts_of(draft)

    assert draft.report.toolset.served_sources(t.name for t in draft.tools) == ["tool:time/*"]
    assert "tool:time/clock" in parts and "tool:time/*" in parts
    assert "tool:clock" not in parts


def test_the_tools_a_source_never_sends_are_kept_by_the_sources_part_not_a_server_name():
    attached = SimpleNamespace(id=SERVER.id, name="time", chosen=None)
    lists = {SERVER.id: Listed(unavailable=(("deploy", TASK_REQUIRED),))}

    assert unavailable_tools([attached], lists) == {server_part("time"): (("deploy", TASK_REQUIRED),)}


def test_unused_tool_reads_the_name_the_model_calls_each_tool_from_the_calls_toolset():
    """A served tool the model calls ``clock`` was called: no suggestion drops it or its server."""
    state = state_of()
    clock = ServerTool(SERVER, "clock", ToolDef("clock", "tells", {"type": "object"}, "tool:time/clock"))
    state.served_tools = {"clock": clock}
    draft = capture(build_chain(), state)
    view = ToolView(
        id="tool:time/clock",
        kind="tool",
        target="agent",
        label="time/clock",
        preview="tells",
        truncated=False,
        tokens=10,
        included=True,
        server="time",
    )
    snapshot = Snapshot([], [view], [], 10, 10, "estimate", False, 200_000, 160_000, 4096, {})
    limits = Thresholds(1_000, 5, 20, 1)

    assembly = Assembly(build_chain(), state, draft, draft)

    found = suggest(assembly, snapshot, ToolUsage(frozenset({"clock"}), 5, 1), limits, None)

    assert found == []
