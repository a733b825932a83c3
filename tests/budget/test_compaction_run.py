"""Compaction through real runs: a 1,024-token window, the offline model, tool calls, stored summaries.

Content tracing is on, so each ``chat`` span records the messages the model got:
that is how these tests see the requests the runs sent.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from hango.agent.chain import SUMMARY_PREFIX
from hango.agent.validate import validate_history
from hango.db.schema import session_summaries
from hango.store import TenantStore
from hango.telemetry import names
from tests.budget.conftest import (
    as_messages,
    chat_spans,
    make_agent,
    make_session,
    prompt_of,
    say,
    stored,
    usage_rows,
)
from tests.support.clients import As, Tenant

SMALL_WINDOW = 1024
LS = '/tool ls {"path": "/"}'


def question(turn: int) -> str:
    """A user turn of about 60 tokens; every other one makes the offline model call ``ls``."""
    text = f"Question {turn}: " + " ".join(f"detail{turn}x{i}" for i in range(30))
    return f"{text}\n{LS}" if turn % 2 else text


def summaries(engine: sa.Engine, session_id: str) -> list[sa.Row]:
    query = (
        sa.select(session_summaries)
        .where(session_summaries.c.session_id == uuid.UUID(session_id))
        .order_by(session_summaries.c.created_at)
    )
    with engine.connect() as conn:
        return list(conn.execute(query))


@pytest.fixture
def traced(acme: Tenant) -> As:
    """``acme``'s owner, with content tracing on for the tenant."""
    assert acme.owner.patch("/v1/tenant", json={"trace_llm_content": True}).status_code == 200
    return acme.owner


@pytest.fixture
def small_session(traced: As) -> str:
    agent = make_agent(
        traced, tools=["ls"], settings={"memory": False, "skills": False}, context_window=SMALL_WINDOW
    )
    return make_session(traced, agent)


def talk_until_compacted(who: As, session_id: str, engine: sa.Engine) -> list[dict]:
    """Run turns until a summary is stored, then one more; returns every message the runs stored."""
    messages: list[dict] = []
    for turn in range(1, 15):
        compacted = bool(summaries(engine, session_id))
        messages += say(who, session_id, question(turn))["messages"]
        if compacted:
            return messages
    raise AssertionError("no summary after 14 turns of a 1,024-token window")


def plain(history: list[dict]) -> list[dict]:
    """Stored messages as the model gets them: role and content."""
    return [{"role": m["role"], "content": m["content"]} for m in history]


def check_compacted(sent: list[dict], history: list[dict], rows: list[sa.Row]) -> int:
    """``sent`` is a stored summary, then the stored messages after the ones it covers; returns its through_seq."""
    start = plain(history).index(sent[1])
    through = history[start]["seq"] - 1
    texts = {SUMMARY_PREFIX + r.text for r in rows if r.through_seq == through}
    assert sent[0]["role"] == "user" and [b["text"] for b in sent[0]["content"]] in [[t] for t in texts]
    assert sent[1:] == plain(history)[start : start + len(sent) - 1]
    assert validate_history(as_messages(sent)) == []
    return through


def test_a_small_window_compacts_and_later_requests_carry_the_summary(
    traced: As, small_session: str, engine: sa.Engine, spans
) -> None:
    messages = talk_until_compacted(traced, small_session, engine)

    # Stored messages are never deleted: the history is every message the runs returned.
    history = stored(traced, small_session)
    assert [(m["id"], m["seq"], m["content"]) for m in history] == [
        (m["id"], m["seq"], m["content"]) for m in messages
    ]
    assert [m["seq"] for m in history] == list(range(1, len(history) + 1))
    assert any(b["type"] == "tool_use" for m in history for b in m["content"])

    rows = summaries(engine, small_session)
    summarize_calls = [r for r in usage_rows(engine, traced.tenant_id) if r.purpose == "summarize"]
    assert len(summarize_calls) == len(rows) >= 1
    assert all(r.run_id is not None and r.session_id == uuid.UUID(small_session) for r in summarize_calls)

    # Every model call after the first summary sends a summary in place of the messages it covers.
    finished = spans()
    first_summarize = chat_spans(finished, "summarize")[0]
    after = [s for s in chat_spans(finished, "run") if s.start_time > first_summarize.end_time]
    assert len(after) >= 2, "the run that compacted and the next one call the model"
    throughs = [check_compacted(prompt_of(span), history, rows) for span in after]
    assert throughs[0] == rows[0].through_seq
    assert throughs == sorted(throughs)


def test_a_new_run_loads_the_stored_summary(traced: As, small_session: str, engine: sa.Engine, spans) -> None:
    talk_until_compacted(traced, small_session, engine)
    agent = traced.get(f"/v1/sessions/{small_session}").get_json()["agent_id"]
    assert traced.patch(f"/v1/agents/{agent}", json={"context_window": 200_000}).status_code == 200
    latest = summaries(engine, small_session)[-1]
    before = len(spans())

    say(traced, small_session, "and now?")

    finished = spans()[before:]
    assert chat_spans(finished, "summarize") == []
    [first_call, *_] = chat_spans(finished, "run")
    assert (
        check_compacted(prompt_of(first_call), stored(traced, small_session), [latest]) == latest.through_seq
    )


def test_the_summarize_span_sits_in_the_run_and_wraps_its_model_call(
    traced: As, small_session: str, engine: sa.Engine, spans
) -> None:
    talk_until_compacted(traced, small_session, engine)
    finished = spans()
    by_id = {s.context.span_id: s for s in finished}
    summarize = next(s for s in finished if s.name == names.SPAN_SUMMARIZE)
    chat = chat_spans(finished, "summarize")[0]

    assert chat.parent.span_id == summarize.context.span_id
    assert by_id[summarize.parent.span_id].name == names.SPAN_RUN
    assert summarize.attributes[names.PURPOSE] == "summarize"
    assert summarize.attributes[names.SESSION_ID] == small_session


def test_a_subagent_in_a_summarized_session_gets_its_task_not_the_summary(
    traced: As, engine: sa.Engine, spans
) -> None:
    session = make_session(traced, make_agent(traced, tools=["task"]))
    say(traced, session, "first things first")
    with engine.begin() as conn:
        TenantStore(conn, uuid.UUID(traced.tenant_id)).summaries.create(
            uuid.UUID(session), 2, "we said hello"
        )

    say(traced, session, '/tool task {"description": "count to three"}')

    [child, *_] = chat_spans(spans(), "subagent")
    assert prompt_of(child) == [{"role": "user", "content": [{"type": "text", "text": "count to three"}]}]
