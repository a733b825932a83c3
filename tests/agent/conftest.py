"""Fixtures for the runtime's tools and contributors: an agent, a session, a store and a run state."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa

from hango.agent.deps import Deps
from hango.agent.options import BUILTIN_TOOLS, DEFAULT_CONTEXT_WINDOW, DEFAULT_MODEL
from hango.agent.stack import build_chain
from hango.agent.state import AgentConfig, Caller, RunState
from hango.agent.tools.base import ToolContext
from hango.config import Config
from hango.store import TenantStore
from tests.support.clients import Tenant


@dataclass(frozen=True)
class Seeded:
    """An agent with every built-in tool and one session of it, in the ``acme`` tenant."""

    tenant_id: uuid.UUID
    owner_id: uuid.UUID
    agent_id: uuid.UUID
    session_id: uuid.UUID


@pytest.fixture
def seeded(engine: sa.Engine, acme: Tenant) -> Seeded:
    tenant_id, owner_id = uuid.UUID(acme.id), uuid.UUID(acme.owner.user_id)
    with engine.begin() as conn:
        store = TenantStore(conn, tenant_id)
        agent = store.agents.create(
            owner_id,
            name="helper",
            model=DEFAULT_MODEL,
            system_prompt="You help.",
            tools=list(BUILTIN_TOOLS),
            settings={},
            context_window=DEFAULT_CONTEXT_WINDOW,
        )
        session = store.sessions.create(agent.id, owner_id, "chat")
    return Seeded(tenant_id, owner_id, agent.id, session.id)


@pytest.fixture
def store(engine: sa.Engine, seeded: Seeded) -> Iterator[TenantStore]:
    """The seeded tenant's store on one connection, committed after the test."""
    with engine.begin() as conn:
        yield TenantStore(conn, seeded.tenant_id)


@pytest.fixture
def state(store: TenantStore, seeded: Seeded) -> RunState:
    """A fresh run state of the seeded session (nothing loaded by run hooks yet)."""
    agent = AgentConfig.from_row(store.agents.get(seeded.agent_id))
    return RunState(seeded.tenant_id, seeded.session_id, agent, Caller(seeded.owner_id, None))


@pytest.fixture
def ctx(store: TenantStore, state: RunState, engine: sa.Engine) -> ToolContext:
    return ToolContext(store, state, Deps(engine, Config()), build_chain())
