"""Fixtures of the budget tests: the fake Anthropic server behind an app, and API helpers for runs."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from opentelemetry.sdk.trace import ReadableSpan

from hango.db.schema import usage_records
from hango.messages import Message, Response, TextBlock, ToolUseBlock, Usage, block_from_dict
from hango.telemetry import names
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer
from tests.support.clients import As, Tenant

FAKE_MODEL = "anthropic/claude-fake-1"

# A run that hands work to a subagent: the parent's call, the subagent's, the parent's answer.
DELEGATING = (
    Response(
        Message("assistant", (ToolUseBlock("toolu_task", "task", {"description": "count the files"}),)),
        "tool_use",
        Usage(input_tokens=100, output_tokens=20, cache_read_tokens=300, cache_write_tokens=40),
    ),
    Response(Message("assistant", (TextBlock("3 files"),)), "end_turn", Usage(50, 10)),
    Response(Message("assistant", (TextBlock("There are 3 files."),)), "end_turn", Usage(120, 30, 280, 0)),
)


@pytest.fixture
def fake_app(make_app: Callable[..., Flask], fake: FakeProviderServer) -> Flask:
    """An app whose ``anthropic/...`` and ``openai/...`` agents talk to the fake server through the real SDKs."""
    return make_app(
        anthropic_base_url=fake.anthropic_base_url,
        anthropic_api_key=TEST_API_KEY,
        openai_base_url=fake.openai_base_url,
        openai_api_key=TEST_API_KEY,
    )


@pytest.fixture
def fake_owner(fake_app: Flask, acme: Tenant) -> As:
    """``acme``'s owner, calling the fake-provider app."""
    return on(fake_app, acme.owner)


def on(app: Flask, who: As) -> As:
    """``who``'s key on another app's test client."""
    return dataclasses.replace(who, client=app.test_client())


def make_agent(who: As, **fields: Any) -> str:
    """Create an agent through the API; returns its id."""
    body = {"name": "budgeted", "model": "offline/echo", "system_prompt": "You help.", **fields}
    made = who.post("/v1/agents", json=body)
    assert made.status_code == 201, made.get_json()
    return made.get_json()["id"]


def make_session(who: As, agent_id: str) -> str:
    made = who.post("/v1/sessions", json={"agent_id": agent_id})
    assert made.status_code == 201, made.get_json()
    return made.get_json()["id"]


def say(who: As, session_id: str, text: str, status: int = 201) -> dict[str, Any]:
    """Send a user message (one run); returns the response body."""
    sent = who.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": text})
    assert sent.status_code == status, sent.get_json()
    return sent.get_json()


def stored(who: As, session_id: str) -> list[dict[str, Any]]:
    """Every stored message of the session, through the API."""
    page = who.get(f"/v1/sessions/{session_id}/messages?limit=10000")
    assert page.status_code == 200
    return page.get_json()["items"]


def as_messages(dicts: list[dict[str, Any]]) -> list[Message]:
    """Message dicts (stored, or on the wire with ``cache_control``) as canonical messages."""
    return [
        Message(
            d["role"],
            tuple(
                block_from_dict({k: v for k, v in b.items() if k != "cache_control"}) for b in d["content"]
            ),
        )
        for d in dicts
    ]


def delegating_run(fake: FakeProviderServer, who: As) -> dict[str, Any]:
    """One run of a fake-Anthropic agent with ``task`` through the ``DELEGATING`` answers."""
    fake.reply(*DELEGATING)
    session = make_session(who, make_agent(who, model=FAKE_MODEL, tools=["task", "ls"]))
    return say(who, session, "how many files are there?")


def usage_rows(engine: sa.Engine, tenant_id: str) -> list[sa.Row]:
    """The tenant's usage rows, oldest first."""
    query = (
        sa.select(usage_records)
        .where(usage_records.c.tenant_id == uuid.UUID(tenant_id))
        .order_by(usage_records.c.created_at, usage_records.c.id)
    )
    with engine.connect() as conn:
        return list(conn.execute(query))


def chat_spans(spans: tuple[ReadableSpan, ...], purpose: str | None = None) -> list[ReadableSpan]:
    """The ``chat`` spans in start order, of one purpose when given."""
    chats = [s for s in spans if s.name == names.SPAN_CHAT]
    chosen = [s for s in chats if purpose is None or s.attributes[names.PURPOSE] == purpose]
    return sorted(chosen, key=lambda s: s.start_time)


def prompt_of(span: ReadableSpan) -> list[dict[str, Any]]:
    """The messages a ``chat`` span recorded (content tracing on), in the stored message shape."""
    return [
        {"role": m["role"], "content": [stored_block(p) for p in m["parts"]]}
        for m in json.loads(span.attributes[names.GEN_AI_INPUT_MESSAGES])
    ]


def stored_block(part: dict[str, Any]) -> dict[str, Any]:
    """A GenAI message part back in the stored block shape (an error flag is not part of the convention)."""
    if part["type"] == "text":
        return {"type": "text", "text": part["content"]}
    if part["type"] == "tool_call":
        return {"type": "tool_use", "id": part["id"], "name": part["name"], "input": part["arguments"]}
    return {"type": "tool_result", "tool_use_id": part["id"], "content": part["response"], "is_error": False}
