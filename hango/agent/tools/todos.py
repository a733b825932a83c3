"""The ``write_todos`` tool: the session's todo list, persisted in ``sessions.todos``."""

from __future__ import annotations

from typing import Any

from hango.agent.tools.base import Tool, ToolContext, ToolFailure, schema
from hango.messages import ToolDef

STATUSES = ("pending", "in_progress", "completed")
MAX_TODOS = 100
MAX_TODO_CHARS = 500
_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

TODO = schema(
    {
        "content": {"type": "string", "minLength": 1, "maxLength": MAX_TODO_CHARS},
        "status": {"type": "string", "enum": list(STATUSES)},
    },
    ("content", "status"),
)
WRITE_TODOS = ToolDef(
    name="write_todos",
    description=(
        "Replace this session's todo list with the given items (send the whole list every time). "
        "Plan multi-step work with it: keep one item in_progress while you work on it and mark it "
        f"completed as soon as it is done. At most {MAX_TODOS} items."
    ),
    input_schema=schema({"todos": {"type": "array", "maxItems": MAX_TODOS, "items": TODO}}, ("todos",)),
)


def render_todos(todos: list[dict[str, Any]]) -> str:
    """The list as numbered lines: ``[ ]`` pending, ``[~]`` in progress, ``[x]`` completed."""
    if not todos:
        return "no todos yet"
    return "\n".join(
        f"{n}. {_MARKS.get(todo.get('status'), '[ ]')} {todo.get('content', '')}"
        for n, todo in enumerate(todos, 1)
    )


def write_todos(args: dict[str, Any], ctx: ToolContext) -> str:
    """Store the new list and put it in the run state (shared with any subagent's state)."""
    todos = [{"content": todo["content"], "status": todo["status"]} for todo in args["todos"]]
    if not ctx.store.todos.set(ctx.state.session_id, todos):
        raise ToolFailure("the session no longer exists")
    ctx.state.todos[:] = todos
    return "todo list updated:\n" + render_todos(todos)


def todo_tools() -> list[Tool]:
    """The ``write_todos`` tool."""
    return [Tool(WRITE_TODOS, write_todos)]
