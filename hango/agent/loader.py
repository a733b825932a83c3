"""Build a run's state from the database: a fixed number of queries, whatever the history length."""

from __future__ import annotations

from typing import Any

from hango.agent.chain import Chain
from hango.agent.deps import Deps, RunContext
from hango.agent.state import AgentConfig, Caller, RunState, StoredMessage
from hango.errors import NotFound
from hango.messages import Message, block_from_dict
from hango.store import TenantStore


def stored_message(row: Any) -> StoredMessage:
    """A ``messages`` row as the runtime's message type."""
    return StoredMessage(row.seq, Message(row.role, tuple(block_from_dict(b) for b in row.content)))


def load_state(store: TenantStore, session: Any, caller: Caller) -> RunState:
    """The session's agent, history and todos (run hooks load the rest)."""
    agent = store.agents.get(session.agent_id)
    if agent is None:
        raise NotFound("the session's agent no longer exists")
    return RunState(
        tenant_id=store.tenant_id,
        session_id=session.id,
        agent=AgentConfig.from_row(agent),
        caller=caller,
        history=[stored_message(row) for row in store.messages.history(session.id)],
        todos=list(session.todos),
        trace_content=store.tenant().trace_llm_content,
    )


def prepare(chain: Chain, state: RunState, store: TenantStore, deps: Deps) -> RunState:
    """Run every run hook once; they read through ``store`` (handed over in a ``RunContext``)."""
    chain.before_run(state, RunContext(store, deps))
    return state
