"""Hypothesis strategies for session histories (tool pairs, multi-result messages, summaries) and override sets.

A history is drawn the way runs leave them: a user text opens it; an assistant
answers with text or with 1-3 tool calls, whose results come back in **one** user
message; a run stopped at ``max_turns`` leaves results followed by a new user text;
a crash can leave a last tool call unanswered. A summary, when drawn, covers the
messages before a user text (where the compactor cuts).
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from hypothesis import strategies as st

from hango.store import TenantStore

# Mostly real text; blank and arbitrary text (NUL included) a third of the time each.
REPLACEMENTS = st.one_of(
    st.sampled_from(["a shorter version", "ß ünïcode ✓", "ok"]),
    st.sampled_from(["", " ", "\n"]),
    st.text(max_size=12),
)
SYSTEM_PARTS = ("system:agent", "system:todo", "system:filesystem", "system:memory:/memories/AGENTS.md")
TOOL_PARTS = ("tool:read_file", "tool:ls", "tool:grep", "tool:nonexistent")
_ids = itertools.count()


@dataclass(frozen=True)
class History:
    """Stored messages in seq order (from 1), and the seq a summary covers through (0: none)."""

    messages: tuple[dict[str, Any], ...]
    summary_through: int = 0

    @property
    def dangling(self) -> list[str]:
        """The tool_use ids of a last assistant message left unanswered (a crashed turn)."""
        last = self.messages[-1]
        return (
            [b["id"] for b in last["content"] if b["type"] == "tool_use"]
            if last["role"] == "assistant"
            else []
        )


def text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": words}]}


Call = tuple[str, dict[str, Any], str, bool]  # tool name, input, result text, is_error


def _listing(_draw: st.DrawFn, ident: str) -> Call:
    return "ls", {"path": "/"}, f"result {ident}", False


def _tool_turn(
    calls: int, with_text: bool, draw: st.DrawFn | None = None, call=_listing
) -> tuple[dict[str, Any], dict[str, Any]]:
    ids = [f"toolu_{next(_ids):06d}" for _ in range(calls)]
    made = [call(draw, i) for i in ids]
    uses = [
        {"type": "tool_use", "id": i, "name": c[0], "input": c[1]} for i, c in zip(ids, made, strict=True)
    ]
    lead = [{"type": "text", "text": "let me look"}] if with_text else []
    results = [
        {"type": "tool_result", "tool_use_id": i, "content": c[2], "is_error": c[3]}
        for i, c in zip(ids, made, strict=True)
    ]
    return {"role": "assistant", "content": lead + uses}, {"role": "user", "content": results}


@st.composite
def exchanges(draw: st.DrawFn, after_user: bool, steps: int, call=_listing) -> list[dict[str, Any]]:
    """``steps`` more events after a user message (``after_user``) or an assistant text.

    ``call(draw, id)`` makes each tool call: an ``ls /`` with a unique result unless told otherwise.
    """
    out: list[dict[str, Any]] = []
    state = "user" if after_user else "assistant"
    for step in range(steps):
        if state == "assistant":
            out.append(text("user", f"question {step}"))
            state = "user"
        elif state == "results" and draw(st.booleans()):
            out.append(text("user", f"after max_turns {step}"))  # a run stopped at max_turns
            state = "user"
        elif draw(st.booleans()):
            out.append(text("assistant", f"answer {step}"))
            state = "assistant"
        else:
            out.extend(_tool_turn(draw(st.integers(1, 3)), draw(st.booleans()), draw, call))
            state = "results"
    if state != "assistant" and draw(st.integers(0, 4)) == 0:
        out.append(_tool_turn(draw(st.integers(1, 2)), False, draw, call)[0])  # a crash left it unanswered
    return out


@st.composite
def histories(draw: st.DrawFn, call=_listing, steps: tuple[int, int] = (0, 7)) -> History:
    """A history as runs store it (``steps`` events after the first message), maybe with a summary over its start."""
    messages = [text("user", "hello"), *draw(exchanges(True, draw(st.integers(*steps)), call))]
    cuts = [i for i in range(1, len(messages)) if _is_user_text(messages[i])]
    through = draw(st.sampled_from([0, *cuts])) if cuts else 0
    return History(tuple(messages), through)


def continuation(history: History) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Messages that arrive later: the answers to a dangling call (a repaired crash), then more turns."""
    answers = []
    if history.dangling:
        answers = [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": i, "content": "late", "is_error": True}
                    for i in history.dangling
                ],
            }
        ]
    after_user = history.messages[-1]["role"] == "user" or bool(answers)
    return st.integers(0, 4).flatmap(lambda n: exchanges(after_user, n)).map(lambda more: answers + more)


def _is_user_text(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and all(b["type"] == "text" for b in message["content"])


def _override(part: str, action: str, replacement: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"part": part, "action": action}
    if action == "replace":
        body["replacement"] = replacement
    return body


@st.composite
def session_sets(draw: st.DrawFn, history: History) -> list[dict[str, Any]]:
    """Overrides of message and summary parts (some stale, some replacements blank)."""
    parts = [f"message:{seq}" for seq in range(1, len(history.messages) + 3)] + ["summary"]
    chosen = draw(st.lists(st.sampled_from(parts), unique=True, max_size=min(4, len(parts))))
    actions = st.sampled_from(["exclude", "exclude", "replace"])
    return [_override(p, draw(actions), draw(REPLACEMENTS)) for p in chosen]


@st.composite
def agent_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Overrides of system and tool parts (replacing a tool is refused, but may be asked)."""
    chosen = draw(st.lists(st.sampled_from(SYSTEM_PARTS + TOOL_PARTS), unique=True, max_size=4))
    actions = st.sampled_from(["exclude", "exclude", "replace"])
    return [_override(p, draw(actions), draw(REPLACEMENTS)) for p in chosen]


@st.composite
def try_bodies(draw: st.DrawFn, history: History) -> dict[str, Any]:
    """A try body: parts to exclude, include and replace, and maybe a new user text."""
    parts = [f"message:{seq}" for seq in range(1, len(history.messages) + 2)] + ["summary"]
    parts += list(SYSTEM_PARTS[:2])
    some = st.lists(st.sampled_from(parts), unique=True, max_size=2)
    body: dict[str, Any] = {"exclude": draw(some), "include": draw(some)}
    body["replace"] = {p: draw(REPLACEMENTS) for p in draw(some)}
    if draw(st.booleans()):
        body["message"] = draw(st.sampled_from(["and now?", " ", "ok"]))
    return body


def store_messages(
    engine: sa.Engine,
    tenant_id: str,
    session_id: str,
    messages: list[dict[str, Any]],
    summary_through: int = 0,
) -> None:
    """Append ``messages`` to a session (and a summary through ``summary_through``) as runs would."""
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(tenant_id))
        for message in messages:
            store.messages.append(uuid.UUID(session_id), message["role"], message["content"])
        if summary_through:
            store.summaries.create(uuid.UUID(session_id), summary_through, "the user said hello")
