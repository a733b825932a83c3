"""Fixtures of the context inspector tests: an app whose providers are a fake server, and a lab to seed it.

``lab`` makes agents and sessions directly through the store (fast, any history
shape) and calls the inspector routes as the tenant's owner through the app.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from werkzeug.test import TestResponse

from hango.agent.options import BUILTIN_TOOLS
from hango.messages import Block, Message, Request, ToolDef, message_from_dict
from hango.store import TenantStore
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer
from tests.support.clients import As, Tenant

ANTHROPIC = "anthropic/claude-test"
OFFLINE = "offline/echo"
SYSTEM_PROMPT = "You are the inspector test agent."

Content = list[dict[str, Any]]
Stored = tuple[str, Content]


def user(text: str) -> Stored:
    return "user", [{"type": "text", "text": text}]


def assistant(text: str) -> Stored:
    return "assistant", [{"type": "text", "text": text}]


def calls(*ids: str, text: str = "") -> Stored:
    """An assistant message calling ``ls`` once per id (after ``text``, when given)."""
    blocks = [{"type": "text", "text": text}] if text else []
    return "assistant", blocks + [{"type": "tool_use", "id": i, "name": "ls", "input": {}} for i in ids]


def results(*ids: str, text: str = "") -> Stored:
    """A user message answering the tool calls ``ids`` (and holding ``text``, when given)."""
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": f"result {i}"} for i in ids]
    return "user", blocks + ([{"type": "text", "text": text}] if text else [])


# 1 user · 2 assistant · 3 user (the last user text) · 4 assistant tool_use · 5 user tool_result · 6 assistant
ONE_TOOL_CALL = [
    user("what is the plan?"),
    assistant("ship it"),
    user("and the memory?"),
    calls("t1"),
    results("t1"),
    assistant("it says to be brief"),
]


def override_set(exclude: Sequence[str] = (), replace: dict[str, str] | None = None) -> dict[str, Any]:
    """An override PUT body excluding the ``exclude`` parts and replacing the ``replace`` ones."""
    overrides = [{"part": p, "action": "exclude"} for p in exclude]
    overrides += [{"part": p, "action": "replace", "replacement": t} for p, t in (replace or {}).items()]
    return {"overrides": overrides}


def excluding(*parts: str) -> dict[str, Any]:
    """An override PUT body excluding ``parts``."""
    return override_set(parts)


def request_of(body: dict[str, Any]) -> Request:
    """The canonical request that ``GET …/context?format=request`` describes."""
    return Request(
        model=body["model"],
        system=tuple(Block(b["text"], b["cache_control"]) for b in body["system"]),
        tools=tuple(ToolDef(**t) for t in body["tools"]),
        messages=tuple(_message(m) for m in body["messages"]),
        max_tokens=body["max_tokens"],
    )


def _message(data: dict[str, Any]) -> Message:
    message = message_from_dict(data)
    return Message(message.role, message.content, data["cache_control"])


def parts(group: list[dict[str, Any]]) -> list[str]:
    """The part ids of one group of an inspect response."""
    return [p["id"] for p in group]


def by_id(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every part of an inspect response, by id."""
    return {p["id"]: p for group in ("system", "tools", "messages") for p in body[group]}


@dataclass
class Lab:
    """One tenant's owner on an app pointed at the fake provider, with store-level seeding."""

    who: As
    tenant: Tenant
    engine: sa.Engine
    fake: FakeProviderServer

    @property
    def tenant_id(self) -> uuid.UUID:
        return uuid.UUID(self.tenant.id)

    @property
    def app_engine(self) -> sa.Engine:
        """The engine the app under test runs its statements on."""
        return self.who.client.application.extensions["hango.engine"]

    def as_(self, role: str) -> As:
        """The same app, called with another role's key of the tenant."""
        return dataclasses.replace(getattr(self.tenant, role), client=self.who.client)

    def store(self, fn):
        """Run ``fn(store)`` in one committed transaction and return its result."""
        with self.engine.begin() as conn:
            return fn(TenantStore(conn, self.tenant_id))

    def agent(
        self,
        model: str = ANTHROPIC,
        tools: Sequence[str] = BUILTIN_TOOLS,
        system_prompt: str = SYSTEM_PROMPT,
        owner: str = "owner",
        **fields: Any,
    ) -> str:
        owner_id = uuid.UUID(getattr(self.tenant, owner).user_id)
        row = self.store(
            lambda s: s.agents.create(
                owner_id,
                name="inspected",
                model=model,
                system_prompt=system_prompt,
                tools=list(tools),
                **fields,
            )
        )
        return str(row.id)

    def session(self, agent_id: str, history: Sequence[Stored] = (), owner: str = "owner") -> str:
        owner_id = uuid.UUID(getattr(self.tenant, owner).user_id)
        row = self.store(lambda s: s.sessions.create(uuid.UUID(agent_id), owner_id, "inspected"))
        self.append(str(row.id), history)
        return str(row.id)

    def append(self, session_id: str, history: Sequence[Stored]) -> None:
        def add(store: TenantStore) -> None:
            for role, content in history:
                store.messages.append(uuid.UUID(session_id), role, content)

        self.store(add)

    def memory(self, agent_id: str, path: str, content: str) -> None:
        self.store(lambda s: s.memory_files.put(uuid.UUID(agent_id), path, content))

    def skill(self, agent_id: str, name: str, allowed_tools: Sequence[str]) -> None:
        self.store(
            lambda s: s.skills.create(
                uuid.UUID(agent_id),
                name,
                description=f"the {name} skill",
                body="do it",
                allowed_tools=list(allowed_tools),
            )
        )

    def summary(self, session_id: str, through_seq: int, text: str) -> None:
        self.store(lambda s: s.summaries.create(uuid.UUID(session_id), through_seq, text))

    def inspect(self, session_id: str, **query: str) -> dict[str, Any]:
        response = self.who.get(f"/v1/sessions/{session_id}/context", query_string=query)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    def put_session(self, session_id: str, body: dict[str, Any], **kw: Any) -> TestResponse:
        return self.who.put(f"/v1/sessions/{session_id}/context-overrides", json=body, **kw)

    def put_agent(self, agent_id: str, body: dict[str, Any], **kw: Any) -> TestResponse:
        return self.who.put(f"/v1/agents/{agent_id}/context-overrides", json=body, **kw)

    def try_(self, session_id: str, body: dict[str, Any] | None = None) -> TestResponse:
        return self.who.post(f"/v1/sessions/{session_id}/context/try", json=body or {})

    def say(self, session_id: str, text: str) -> TestResponse:
        return self.who.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": text})

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        response = self.who.get(f"/v1/sessions/{session_id}/messages", query_string={"limit": 10_000})
        assert response.status_code == 200, response.get_json()
        return response.get_json()["items"]


def fake_config(fake: FakeProviderServer) -> dict[str, Any]:
    """Configuration that points both SDK providers at ``fake``."""
    return {
        "anthropic_base_url": fake.anthropic_base_url,
        "anthropic_api_key": TEST_API_KEY,
        "openai_base_url": fake.openai_base_url,
        "openai_api_key": TEST_API_KEY,
    }


@pytest.fixture
def make_lab(make_app, acme: Tenant, engine: sa.Engine, fake: FakeProviderServer):
    """A lab on an app built with configuration overrides (``context_try_timeout=1`` …)."""

    def build(**config: Any) -> Lab:
        app = make_app(**fake_config(fake), **config)
        return Lab(dataclasses.replace(acme.owner, client=app.test_client()), acme, engine, fake)

    return build


@pytest.fixture
def lab(make_lab) -> Lab:
    return make_lab()
