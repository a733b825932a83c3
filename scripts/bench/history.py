"""The inspect benchmark's world: one agent with memory and skills, and sessions of realistic history.

Everything is generated from a fixed seed (no downloads) with the text makers of
``scripts/bench/estimator.py``: English and Vietnamese prose, Python code, JSON,
shell output, tracebacks and emoji. Sizes are drawn log-normal and clipped to
20-8,000 characters; messages come out with a median of about 500 characters.
About 40 % of the messages hold tool blocks: an assistant message with one to
three ``tool_use`` blocks, answered by a user message with as many
``tool_result`` blocks (some errors). Every history passes ``validate_history``;
it is written with one bulk insert.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import statistics
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from hango.agent.estimator import ESTIMATOR_VERSION, estimate_message
from hango.agent.ledger.record import Lineage, SentCall, SentPart, fields_hash, stored_hash
from hango.agent.options import BUILTIN_TOOLS, DEFAULT_CONTEXT_WINDOW
from hango.agent.validate import validate_history
from hango.messages import message_from_dict
from hango.providers.prices import Tokens, costs_by_part, prices_of
from hango.store import TenantStore
from scripts.bench.estimator import (
    ENGLISH,
    VIETNAMESE,
    emoji_text,
    hexid,
    mixed,
    prose,
    python_code,
    tool_result,
)

MEDIAN_CHARS, MIN_CHARS, MAX_CHARS = 580, 20, 8_000  # tool_use messages are short: messages median ~500
TOOL_SHARE = 0.4  # chance that an assistant message calls tools: about 40 % of messages hold tool blocks
SUMMARY_THROUGH = 20  # the summarized session's summary covers its messages up to about here
TOOLS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep")
MEMORY = {"/memories/AGENTS.md": 3_000, "/memories/style.md": 600}
SKILLS = (("review", ("grep", "read_file")), ("deploy", ("ls",)), ("translate", ()))

Text = Callable[[random.Random], str]
CHAT_TEXTS: tuple[Text, ...] = (
    lambda rng: prose(rng, ENGLISH),
    lambda rng: prose(rng, VIETNAMESE),
    mixed,
    emoji_text,
    python_code,
)


def size(rng: random.Random) -> int:
    """A message size: log-normal around the median, within the bounds."""
    return min(MAX_CHARS, max(MIN_CHARS, round(rng.lognormvariate(math.log(MEDIAN_CHARS), 1.0))))


def sized(rng: random.Random, make: Text, length: int) -> str:
    """``make``'s texts joined until ``length`` characters, cut there."""
    text = make(rng)
    while len(text) < length:
        text += "\n\n" + make(rng)
    return text[:length]


def chat_text(rng: random.Random, length: int | None = None) -> str:
    return sized(rng, rng.choice(CHAT_TEXTS), length or size(rng))


def tool_input(rng: random.Random, name: str, length: int) -> dict[str, Any]:
    path = f"/src/{hexid(rng, 6)}/{rng.choice(('main', 'models', 'ví_dụ', 'utils'))}.py"
    if name in ("write_file", "edit_file"):
        return {"path": path, "content": sized(rng, python_code, length)}
    if name in ("glob", "grep"):
        return {"pattern": rng.choice(("def \\w+", "TODO", "*.py", "lỗi|error")), "path": "/src"}
    return {"path": path}


def tool_turn(rng: random.Random) -> list[dict[str, Any]]:
    """An assistant message calling one to three tools, and the user message with their results.

    Each message shares one drawn size among its blocks, so no message passes the maximum.
    """
    calls = rng.choices((1, 2, 3), weights=(70, 20, 10))[0]
    share = max(MIN_CHARS, size(rng) // (calls + 1))
    uses = []
    for _ in range(calls):
        name = rng.choice(TOOLS)
        uses.append({"type": "tool_use", "id": "toolu_" + hexid(rng, 24), "name": name})
        uses[-1]["input"] = tool_input(rng, name, share)
    lead = [{"type": "text", "text": chat_text(rng, share)}] if rng.random() < 0.5 else []
    result_size = max(MIN_CHARS, size(rng) // calls)
    results = [
        {
            "type": "tool_result",
            "tool_use_id": use["id"],
            "content": sized(rng, tool_result, result_size),
            "is_error": rng.random() < 0.05,
        }
        for use in uses
    ]
    return [{"role": "assistant", "content": lead + uses}, {"role": "user", "content": results}]


def text_message(rng: random.Random, role: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": chat_text(rng)}]}


def history(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """``count`` valid messages: user turns, each answered by tool rounds and a final assistant text."""
    out: list[dict[str, Any]] = []
    while len(out) < count:
        out.append(text_message(rng, "user"))
        while len(out) < count:
            if count - len(out) >= 3 and rng.random() < TOOL_SHARE:
                out += tool_turn(rng)
                continue
            out.append(text_message(rng, "assistant"))
            break
    problems = validate_history([message_from_dict(m) for m in out])
    assert not problems, problems[0]
    return out


def turn_start(items: Sequence[dict[str, Any]], near: int) -> int:
    """The seq of the last user text message at or before ``near`` (a valid place to cut)."""
    starts = [
        i + 1 for i, m in enumerate(items[:near]) if m["role"] == "user" and m["content"][0]["type"] == "text"
    ]
    return max(s for s in starts if s > 1)


@dataclass(frozen=True)
class Session:
    id: str
    messages: int
    visible: int  # message parts inspect shows: the summary and the messages after it
    history: list[dict[str, Any]]  # the generated messages (of a compacted session: those after its summary)


def stored_estimate(message: dict[str, Any]) -> dict[str, int]:
    """The estimate a run stores with each message it writes."""
    tokens = estimate_message(message_from_dict(message))
    return {"tokens": tokens, "estimator_version": ESTIMATOR_VERSION}


def stored_columns(items: list[dict[str, Any]]) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """``items`` as ``append_many`` takes them, with the estimate and ledger hash a run stores."""
    messages = [(m["role"], m["content"]) for m in items]
    return messages, [
        {"content_hash": stored_hash(m["role"], m["content"])} | stored_estimate(m) for m in items
    ]


def add_session(
    store: TenantStore, agent_id: uuid.UUID, owner_id: uuid.UUID, count: int, *, seed: int, summary: bool
) -> Session:
    """A session with ``count`` generated messages (bulk-inserted), optionally with a summary.

    Each message carries its ledger hash, as the run that stores a message writes it.
    """
    rng = random.Random(seed)
    items = history(rng, count)
    session = store.sessions.create(agent_id, owner_id, f"bench {count}")
    store.messages.append_many(session.id, *stored_columns(items))
    visible = count
    if summary:
        through = turn_start(items, SUMMARY_THROUGH) - 1
        store.summaries.create(session.id, through, sized(rng, mixed, 1_500))
        visible = count - through + 1
    return Session(str(session.id), count, visible, items)


COPY_COVERED = sa.text(
    """
    with counter as (update sessions set last_seq = :through where id = :session)
    insert into messages (id, tenant_id, session_id, seq, role, content, tokens, estimator_version)
    select gen_random_uuid(), m.tenant_id, :session, m.seq + k * :size, m.role, m.content, m.tokens,
           m.estimator_version
    from messages m, generate_series(0, :copies) k
    where m.session_id = :filler and m.seq + k * :size <= :through
    """
)


def add_compacted_session(
    store: TenantStore,
    agent_id: uuid.UUID,
    owner_id: uuid.UUID,
    count: int,
    *,
    filler: Session,
    tail: Session,
) -> Session:
    """A session of ``count`` messages whose summary covers all but the last ones, a copy of ``tail``'s.

    The covered messages are ``filler``'s rows over and over, copied inside the database (a 100,000
    message session is set up in seconds); the messages after the summary are ``tail``'s, so the
    next call carries what ``tail``'s does, plus the summary part.
    """
    session = store.sessions.create(agent_id, owner_id, f"bench {count} compacted")
    through = count - tail.messages
    copy = {"session": session.id, "filler": uuid.UUID(filler.id), "size": filler.messages}
    store.conn.execute(COPY_COVERED, copy | {"copies": through // filler.messages, "through": through})
    store.messages.append_many(session.id, *stored_columns(tail.history))  # seqs after ``through``
    store.summaries.create(session.id, through, sized(random.Random(count), mixed, 1_500))
    return Session(str(session.id), count, tail.messages + 1, tail.history)


COPY_REPEATED = sa.text(
    """
    with counter as (update sessions set last_seq = :size * :copies where id = :session)
    insert into messages (id, tenant_id, session_id, seq, role, content, content_hash, tokens, estimator_version)
    select gen_random_uuid(), m.tenant_id, :session, m.seq + k * :size, m.role, m.content, m.content_hash,
           m.tokens, m.estimator_version
    from messages m, generate_series(0, :copies - 1) k
    where m.session_id = :filler
    """
)


def add_repeated_session(
    store: TenantStore, agent_id: uuid.UUID, owner_id: uuid.UUID, copies: int, *, filler: Session
) -> Session:
    """A session whose history is ``filler``'s messages ``copies`` times over, copied inside the database.

    Each copy opens with a user text message and its tool pairs are adjacent, so the
    whole is a valid history (``validate_history``) of the same messages as ``filler``:
    what an inspect costs per message compares directly.
    """
    session = store.sessions.create(agent_id, owner_id, f"bench {filler.messages * copies}")
    copy = {"session": session.id, "filler": uuid.UUID(filler.id), "size": filler.messages, "copies": copies}
    store.conn.execute(COPY_REPEATED, copy)
    count = filler.messages * copies
    return Session(str(session.id), count, count, filler.history * copies)


def add_agent(
    store: TenantStore, owner_id: uuid.UUID, context_window: int = DEFAULT_CONTEXT_WINDOW, name: str = "bench"
) -> Any:
    """The agent: every built-in tool, a long system prompt, two memory files and three skills."""
    rng = random.Random(7)
    agent = store.agents.create(
        owner_id,
        name=name,
        model="offline/echo",
        system_prompt=sized(rng, lambda r: prose(r, ENGLISH), 1_500),
        tools=list(BUILTIN_TOOLS),
        settings={},
        context_window=context_window,
    )
    for path, chars in MEMORY.items():
        store.memory_files.put(agent.id, path, sized(rng, mixed, chars))
    for skill, allowed in SKILLS:
        body = sized(rng, mixed, 1_000)
        store.skills.create(
            agent.id, skill, description=chat_text(rng)[:200], body=body, allowed_tools=allowed
        )
    return agent


def block_chars(block: dict[str, Any]) -> int:
    """A stored block's size: its text, its result, or its tool input as JSON, in characters."""
    if block["type"] == "tool_use":
        return len(json.dumps(block["input"], ensure_ascii=False))
    return len(block["text"] if block["type"] == "text" else block["content"])


def message_chars(message: dict[str, Any]) -> int:
    return sum(map(block_chars, message["content"]))


def median_chars(items: Sequence[dict[str, Any]]) -> float:
    return statistics.median(map(message_chars, items))


def tool_share(items: Sequence[dict[str, Any]]) -> float:
    """The share of messages that hold a tool_use or tool_result block."""
    tools = sum(any(b["type"] != "text" for b in m["content"]) for m in items)
    return tools / len(items)


def record_calls(
    store: TenantStore,
    session_id: uuid.UUID,
    count: int,
    model: str = "offline/echo",
    tokens: Callable[[int], Tokens] = lambda index: Tokens(100, 0, 0, 5),
) -> list[uuid.UUID]:
    """``count`` more ledger entries after the session's latest run call, written as the gateway writes them.

    Each sends the latest call's parts with its last part changed (a call of the same
    size every time, so only the ledger's length grows), a second after the one before;
    call ``index`` reports ``tokens(index)`` of ``model`` and leaves its parts' costs waiting for the fold.
    """
    lineage = Lineage()
    lineage.load(store.model_calls, session_id, "run")
    assert lineage.previous is not None, "the session needs a run call to copy"
    first, started = lineage.previous.call, lineage.previous.ended_at
    *kept, last = first.parts
    provider, bare = model.split("/", 1)
    prices = prices_of(None)
    made = []
    for index in range(count):
        changed = SentPart(last.part, fields_hash(("bench", str(index))), last.tokens)
        call = SentCall((*kept, changed), first.breakpoints)
        started += dt.timedelta(seconds=1)
        stored = lineage.delta(call)
        reported = tokens(index)
        usage = {"session_id": session_id, "purpose": "run", "provider": provider, "model": bare}
        usage |= {"input_tokens": reported.input, "output_tokens": reported.output}
        usage |= {"cache_read_tokens": reported.cache_read, "cache_write_tokens": reported.cache_write}
        row = {"session_id": session_id, "purpose": "run", "model": model, "started_at": started}
        row |= {"duration_ms": 1, "base_id": lineage.base_id, "prefix_parts": stored.prefix_parts}
        row |= {"tail": stored.tail, "breakpoints": list(call.breakpoints), "parts_count": len(call.parts)}
        row |= {"expected_cache_read": 0}
        costs = costs_by_part(prices.rates(model, started), call.parts, reported)
        made.append(store.model_calls.record(usage, row, costs))
        lineage.advance(made[-1], call, started, lineage.depth_after(stored))
    return made
