"""The ``todo`` contributor: the ``write_todos`` tool and the session's todo list as the last block."""

from __future__ import annotations

from hango.agent.middleware.base import Middleware
from hango.agent.parts import SourcedBlock, system_part
from hango.agent.state import AgentConfig, RunState
from hango.agent.tools.base import Tool
from hango.agent.tools.todos import WRITE_TODOS, render_todos, todo_tools
from hango.agent.toolset import Toolset
from hango.messages import Block

HEADER = "Your todo list for this session:\n\n"
WITH_TOOL = "Your todo list for this session (replace it with write_todos as the work moves on):\n\n"


class TodoMiddleware(Middleware):
    """Reads ``state.todos`` as the loader filled it from the session row; enabled with ``write_todos``."""

    name = "todo"

    def system_blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        if WRITE_TODOS.name not in agent.tools:
            return []
        header = WITH_TOOL if WRITE_TODOS.name in tools.sent else HEADER
        return [SourcedBlock(system_part(self.name), Block(header + render_todos(state.todos)))]

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        return todo_tools()
