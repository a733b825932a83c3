"""Fixtures for the runtime tests: a fake provider server, and sessions on apps pointed at it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from hango.agent.options import BUILTIN_TOOLS
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer
from tests.runtime.chat import Chat
from tests.support.clients import Tenant

SYSTEM_PROMPT = "You are the runtime test agent."

OpenChat = Callable[..., Chat]


@pytest.fixture
def open_chat(make_app, acme: Tenant, engine: sa.Engine, fake: FakeProviderServer) -> OpenChat:
    """Make an agent of ``model`` and a session of it, on an app whose providers are the fake server.

    Keyword arguments other than the agent's are configuration overrides (``run_timeout``, ``max_turns``).
    """

    def open_(
        model: str, tools: tuple[str, ...] = BUILTIN_TOOLS, system_prompt: str = SYSTEM_PROMPT, **config: Any
    ) -> Chat:
        app = make_app(
            anthropic_base_url=fake.anthropic_base_url,
            anthropic_api_key=TEST_API_KEY,
            openai_base_url=fake.openai_base_url,
            openai_api_key=TEST_API_KEY,
            **config,
        )
        who = dataclasses.replace(acme.owner, client=app.test_client())
        body = {
            "name": f"agent of {model}",
            "model": model,
            "tools": list(tools),
            "system_prompt": system_prompt,
        }
        agent = who.post("/v1/agents", json=body)
        assert agent.status_code == 201, agent.get_json()
        session = who.post("/v1/sessions", json={"agent_id": agent.get_json()["id"]})
        assert session.status_code == 201, session.get_json()
        return Chat(who, engine, agent.get_json()["id"], session.get_json()["id"])

    return open_
