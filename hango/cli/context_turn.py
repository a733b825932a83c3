"""What ``hango context try --turn`` prints at the end: the answer, a summary line, what its searches
found, the would-be diffs, and the A/B: the try's first call beside the session's next call as it stands.

The steps themselves were printed to stderr as they ran (``hango/cli/progress.py``);
this is the ended try run's ``result`` (``docs/learning`` and ``/work/notes``: the
whole-turn try's contract), shown and computed from nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from hango.cli.context_table import visible, wrap
from hango.cli.money import UNKNOWN, money, priced

MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
AS_IS = "next_call_as_is"  # the key the CLI adds to the run it prints: inspect's next-call figures


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
    lines += deferral_lines(result, width)
    lines += changes_lines(result.get("changes") or {})
    return lines + (ab_lines(run[AS_IS], first_call_figures(result)) if AS_IS in run else [])


def deferral_lines(result: dict[str, Any], width: int) -> list[str]:
    """What the try deferred or sent though deferred, then one line per ``tool_search`` call:
    ``searched 'find text in files' → revealed tool:grep; called grep``."""
    deferral = result.get("deferral") or {}
    lines = []
    if deferral.get("defer"):
        lines += wrap(f"deferred this time: {', '.join(deferral['defer'])}", width)
    if deferral.get("undefer"):
        lines += wrap(f"sent though deferred: {', '.join(deferral['undefer'])}", width)
    for search in result.get("searches") or []:
        found = f"revealed {', '.join(search['revealed'])}" if search["revealed"] else "revealed nothing"
        called = f"called {', '.join(search['called'])}" if search["called"] else "called none of them"
        said = f"searched {visible(repr(search['query']))} → {found}"
        lines += wrap(f"{said}; {called}" if search["revealed"] else said, width)
    return lines


def next_call_figures(inspect: dict[str, Any]) -> dict[str, Any]:
    """Inspect's next call: its tokens sent (estimated), the tools it sends, its input cost."""
    cost = inspect.get("next_call_cost") or {}
    return {
        "tokens": inspect.get("total_after"),
        "tools": inspect.get("tools_sent"),
        "usd": cost.get("usd"),
        "simulated_at": cost.get("simulated_at"),
    }


def first_call_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The try's first call as the ledger holds it: its prompt tokens, the tools it sent, its input cost;
    each None when the run lists the call without its detail, or its cost is unknown."""
    call = (result.get("calls") or [{}])[0]
    usage = call.get("usage")
    return {
        "tokens": None if usage is None else usage.get("prompt_tokens"),
        "tools": call.get("tools_sent"),
        "usd": call.get("input_usd"),
        "simulated_at": (call.get("cost") or {}).get("simulated_at"),
    }


def ab_lines(as_is: dict[str, Any], tried: dict[str, Any]) -> list[str]:
    """The A/B in two columns: the next call as inspect sees it, and the try's first call as it went."""
    rows = [("", "next call as is", "the try's first call")]
    rows += [
        (name, _figure(as_is[key]), _figure(tried[key]))
        for name, key in (("tokens sent", "tokens"), ("tools sent", "tools"))
    ]
    rows.append(("input cost", money(as_is["usd"]), money(tried["usd"])))
    first, second = (max(len(row[column]) for row in rows) for column in (0, 1))
    lines = ["A/B:"] + [f"  {a:<{first}}  {b:<{second}}  {c}".rstrip() for a, b, c in rows]
    simulated = as_is["simulated_at"] or tried["simulated_at"]
    return lines + ([f"  (simulated at {simulated} prices)"] if simulated else [])


def _figure(count: int | None) -> str:
    return UNKNOWN if count is None else f"{count:,}"


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
