"""What ``hango context try --turn`` prints at the end: the answer, a summary line, the would-be diffs.

The steps themselves were printed to stderr as they ran (``hango/cli/progress.py``);
this is the ended try run's ``result`` (``docs/learning`` and ``/work/notes``: the
whole-turn try's contract), shown and computed from nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from hango.cli.context_table import visible, wrap
from hango.cli.money import priced

MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def render_turn(run: dict[str, Any], width: int) -> list[str]:
    """An ended try run: its answer, one summary line, what it left out, and what it would have changed."""
    result = run["result"] or {}
    lines = ["answer:", *_answer(result.get("answer"), width)]
    lines.append(f"stop reason: {visible(str(result.get('stop_reason')))}")
    lines += wrap(summary_line(result), width)
    if result.get("excluded"):
        lines += wrap(f"left out: {', '.join(result['excluded'])}", width)
    if result.get("added"):
        lines += wrap(f"of which tool pair companions: {', '.join(result['added'])}", width, "  ")
    return lines + changes_lines(result.get("changes") or {})


def summary_line(result: dict[str, Any]) -> str:
    """``N calls · M tool calls · tokens in/out/cached · cost`` of a whole turn."""
    usage = result.get("usage") or {}
    calls, tools = len(result.get("calls") or []), len(result.get("tools") or [])
    cost = (
        priced(result["cost"], result.get("cost_simulated_at"))
        if result.get("cost") is not None
        else "cost unknown (a call has no price)"
    )
    return (
        f"{calls} call{'s' * (calls != 1)} · {tools} tool call{'s' * (tools != 1)} · "
        f"input {usage.get('input_tokens', 0)} · output {usage.get('output_tokens', 0)} · "
        f"cache read {usage.get('cache_read_tokens', 0)} · cache write {usage.get('cache_write_tokens', 0)} · {cost}"
    )


def changes_lines(changes: dict[str, Any]) -> list[str]:
    """The would-be diffs (files, then memory files) and the todo list before and after."""
    files = [*(changes.get("files") or []), *(changes.get("memory") or [])]
    todos = changes.get("todos")
    if not files and not todos:
        return ["would change nothing: no file, memory file or todo"]
    lines = ["would change (nothing was stored):"]
    for change in files:
        lines.append(f"{change['change']} {visible(change['path'])}")
        lines += [visible(line) for line in change["diff"].splitlines()]
    if todos:
        lines.append("todos before:")
        lines += _todos(todos["before"])
        lines.append("todos after:")
        lines += _todos(todos["after"])
    return lines


def _answer(message: dict[str, Any] | None, width: int) -> list[str]:
    if not message:
        return ["  (no answer)"]
    lines = []
    for block in message["content"]:
        if block.get("type") == "text":
            lines += [
                w
                for line in visible(block["text"], keep_lines=True).splitlines()
                for w in wrap(line, width, "  ")
            ]
        elif block.get("type") == "tool_use":
            arg = json.dumps(block.get("input"), ensure_ascii=False)
            lines += wrap(f"[asks for {visible(block['name'])} {visible(arg)}]", width, "  ")
    return lines or ["  (no text)"]


def _todos(todos: list[dict[str, Any]]) -> list[str]:
    if not todos:
        return ["  (none)"]
    return [f"  {MARKS.get(t.get('status'), '[ ]')} {visible(str(t.get('content', '')))}" for t in todos]
