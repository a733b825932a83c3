"""The deterministic cost bounds behind the inspect benchmark: SQL statements never grow with history.

Timings are noisy on shared machines; statement counts are not. An inspect, an
override PUT, a try and a whole run (with a tool turn) must each send exactly the
same statements on a 10-message session as on a 1,000-message one: the history
is read in one query, never per message.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from werkzeug.test import TestResponse

from hango.agent.options import BUILTIN_TOOLS, MAX_CONTEXT_WINDOW
from hango.store import TenantStore
from tests.support.clients import As, Tenant
from tests.support.sql import MAX_INSPECT_STATEMENTS, count_rows, count_statements


def turn(seq: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """Five messages: a question, two tool calls, their results, an answer, thanks (``seq`` is the first's)."""
    ids = (f"toolu_{seq}_a", f"toolu_{seq}_b")
    return [
        ("user", [{"type": "text", "text": f"question {seq}: ¿qué tal? 🙂"}]),
        ("assistant", [{"type": "tool_use", "id": i, "name": "ls", "input": {"path": "/"}} for i in ids]),
        (
            "user",
            [
                {"type": "tool_result", "tool_use_id": i, "content": "notes.md", "is_error": False}
                for i in ids
            ],
        ),
        ("assistant", [{"type": "text", "text": f"answer {seq}"}]),
        ("user", [{"type": "text", "text": "thanks"}]),
    ]


def seed_session(
    store: TenantStore, agent_id: uuid.UUID, owner_id: uuid.UUID, length: int, summary_through: int = 5
) -> str:
    """A session of ``length`` (a multiple of 5) valid messages with tool pairs and a summary, bulk-inserted.

    The messages are stored without estimates, as before they were stored with each message.
    """
    session = store.sessions.create(agent_id, owner_id, f"{length} messages")
    history = [m for seq in range(1, length + 1, 5) for m in turn(seq)]
    store.messages.append_many(session.id, history)
    store.summaries.create(session.id, summary_through, "the earlier turns")
    return str(session.id)


def add_agent(store: TenantStore, owner: uuid.UUID) -> Any:
    """An agent with every built-in tool, memory and a skill, whose window never compacts."""
    agent = store.agents.create(
        owner,
        name="counted",
        model="offline/echo",
        system_prompt="You count.",
        tools=list(BUILTIN_TOOLS),
        settings={},
        context_window=MAX_CONTEXT_WINDOW,  # no compaction: it would write, and only on the long one
    )
    store.memory_files.put(agent.id, "/memories/AGENTS.md", "notes")
    store.skills.create(agent.id, "deploy", description="ship", body="step 1", allowed_tools=["grep"])
    return agent


def seed_sessions(engine: sa.Engine, acme: Tenant, shapes: dict[int, tuple[int, int]]) -> tuple[Any, dict]:
    """An agent (``add_agent``) and, per key of ``shapes``, a session of (length, summary_through)."""
    owner = uuid.UUID(acme.owner.user_id)
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(acme.id))
        agent = add_agent(store, owner)
        return agent, {k: seed_session(store, agent.id, owner, *shape) for k, shape in shapes.items()}


@pytest.fixture
def sessions(engine: sa.Engine, acme: Tenant) -> dict[int, str]:
    """A 10- and a 1,000-message session of one agent with memory, a skill and an agent override."""
    agent, made = seed_sessions(engine, acme, {n: (n, 5) for n in (10, 1_000)})
    assert (
        acme.owner.put(f"/v1/agents/{agent.id}/context-overrides", json=exclude("tool:glob")).status_code
        == 200
    )
    return made


def exclude(*parts: str) -> dict[str, Any]:
    return {"overrides": [{"part": p, "action": "exclude"} for p in parts]}


def statements(client: As, send: Callable[[As], TestResponse]) -> list[str]:
    """The SQL text of every statement the app runs while answering ``send``."""
    with count_statements(client.client.application.extensions["hango.engine"]) as sent:
        response = send(client)
    assert response.status_code in (200, 201), response.get_json()
    return sent


def same_for_both(
    acme: Tenant, sessions: dict[int, str], send: Callable[[As, str], TestResponse]
) -> list[str]:
    """The statements of ``send`` on the short and on the long session, asserted identical."""
    short, long = (statements(acme.owner, lambda who, s=s: send(who, s)) for s in sessions.values())
    assert short == long
    return long


def test_an_inspect_sends_the_same_few_statements_for_10_and_1000_messages(acme, sessions):
    for session in sessions.values():
        assert (
            acme.owner.put(f"/v1/sessions/{session}/context-overrides", json=exclude("message:7")).status_code
            == 200
        )  # +8

    sent = same_for_both(acme, sessions, lambda who, s: who.get(f"/v1/sessions/{s}/context"))

    assert len(sent) <= MAX_INSPECT_STATEMENTS, sent


def test_an_override_put_sends_the_same_statements_for_10_and_1000_messages(acme, sessions):
    body = exclude("message:7", "message:9")  # message 7 holds tool calls: pair closure adds message 8

    same_for_both(acme, sessions, lambda who, s: who.put(f"/v1/sessions/{s}/context-overrides", json=body))


def test_a_try_sends_the_same_statements_for_10_and_1000_messages(acme, sessions):
    body = {"exclude": ["message:9"], "message": "and now?"}

    same_for_both(acme, sessions, lambda who, s: who.post(f"/v1/sessions/{s}/context/try", json=body))


def test_a_run_with_a_tool_turn_sends_the_same_statements_for_10_and_1000_messages(acme, sessions):
    # The offline provider calls ls, then answers the result: two model calls and one tool call.
    body = {"content": '/tool ls {"path": "/"}'}

    sent = same_for_both(
        acme, sessions, lambda who, s: who.post_and_wait(f"/v1/sessions/{s}/messages", json=body)
    )

    assert sum("INSERT INTO messages" in s for s in sent) == 4  # question, tool call, result, answer


@pytest.fixture
def compacted(engine: sa.Engine, acme: Tenant) -> dict[int, str]:
    """Two compacted sessions with the same 20 messages after their summary: 10 or 1,000 before it."""
    return seed_sessions(engine, acme, {n: (n + 20, n) for n in (10, 1_000)})[1]


def rows(client: As, send: Callable[[As], TestResponse]) -> list[tuple[str, int]]:
    """Each statement the app runs while answering ``send``, with the rows it read or wrote."""
    with count_rows(client.client.application.extensions["hango.engine"]) as counted:
        response = send(client)
    assert response.status_code in (200, 201), response.get_json()
    return counted


@pytest.mark.parametrize(
    "send",
    [
        lambda who, s: who.get(f"/v1/sessions/{s}/context"),
        lambda who, s: who.post_and_wait(f"/v1/sessions/{s}/messages", json={"content": "and now?"}),
    ],
    ids=["inspect", "run"],
)
def test_rows_read_after_compaction_do_not_grow_with_the_messages_before_the_summary(acme, compacted, send):
    short, long = (rows(acme.owner, lambda who, s=s: send(who, s)) for s in compacted.values())

    assert short == long
    history = [n for statement, n in long if "FROM messages" in statement and "seq >" in statement]
    assert history == [20]  # the messages after the summary, read once


def test_writing_the_ledger_adds_at_most_one_statement_per_call(acme, sessions):
    # Two model calls (the tool call, then the answer to its result).
    body = {"content": '/tool ls {"path": "/"}'}

    sent = same_for_both(
        acme, sessions, lambda who, s: who.post_and_wait(f"/v1/sessions/{s}/messages", json=body)
    )

    writes = [s for s in sent if "INSERT INTO model_calls" in s]
    assert len(writes) == 2  # one ledger row per call…
    assert all(
        "INSERT INTO usage_records" in s for s in writes
    )  # …in the statement that writes its usage row
    assert all(
        "INSERT INTO pending_part_costs" in s for s in writes
    )  # and leaves its parts' costs to the fold
    assert not any("part_costs (" in s and "pending" not in s for s in sent)  # no total is touched on the way
    assert sum("INSERT INTO usage_records" in s for s in sent) == 2  # no usage statement of its own any more
    reads = [s for s in sent if "FROM model_calls" in s and "INSERT" not in s]
    assert len(reads) == 1  # the run's lineage, read once: at most one statement more per call


def test_suggestions_send_the_same_statements_for_10_and_1000_messages_an_inspects_and_the_tool_usage(
    acme, sessions
):
    inspect = same_for_both(acme, sessions, lambda who, s: who.get(f"/v1/sessions/{s}/context"))

    sent = same_for_both(acme, sessions, lambda who, s: who.get(f"/v1/sessions/{s}/context/suggestions"))

    # The offline provider caches as its reference model does, so both read the lineage (once) and the
    # calibration for the cache outlook; suggestions add the agent's tool usage, in one statement.
    assert len(sent) == len(inspect) + 1
    assert sum("FROM model_calls" in s for s in sent) == sum("FROM model_calls" in s for s in inspect) == 1
    assert sum("jsonb_array_elements" in s for s in sent) == 1
