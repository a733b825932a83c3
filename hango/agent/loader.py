"""A run's state from the database, in a fixed number of queries whatever the history length.

Only what the next call can carry is read: the latest summary and the messages
after its ``through_seq``. Each message comes with its stored token estimate, so
neither inspect nor a run estimates history again; a message stored without a
current estimate is estimated once in memory, and a run stores the estimate
(inspect writes nothing).
"""

from __future__ import annotations

from typing import Any

from hango.agent.chain import Chain
from hango.agent.deps import Deps, RunContext
from hango.agent.estimator import ESTIMATOR_VERSION, estimate_message, remember_message
from hango.agent.ledger.record import message_hash, remember_hash
from hango.agent.state import (
    NO_HANDLES,
    RUN,
    AgentConfig,
    Caller,
    Mode,
    RunHandles,
    RunState,
    StoredMessage,
    Summary,
)
from hango.errors import NotFound
from hango.messages import Message, block_from_dict, message_from_dict
from hango.store import TenantStore


def stored_message(
    seq: int, role: str, content: list[Any], tokens: int | None, digest: str | None
) -> StoredMessage:
    """A stored message as the runtime's message type, with its current estimate and its ledger hash (if any)."""
    # most messages hold one block: no list to build; else a list, faster to build than a generator
    blocks = (
        (block_from_dict(content[0]),) if len(content) == 1 else tuple([block_from_dict(b) for b in content])
    )
    message = Message(role, blocks)
    if tokens is not None:
        remember_message(message, tokens)
    if digest is not None:
        remember_hash(message, digest)
    return StoredMessage(seq, message)


def load_state(
    store: TenantStore, session: Any, caller: Caller, mode: Mode = RUN, *, handles: RunHandles = NO_HANDLES
) -> RunState:
    """The session's agent, summary, the history after it, and todos (run hooks load the rest), for calls
    in ``mode`` with the run's ``handles``."""
    agent = store.agents.get(session.agent_id)
    if agent is None:
        raise NotFound("the session's agent no longer exists")
    row = store.summaries.latest(session.id)
    summary = Summary(row.through_seq, row.text) if row else None
    history, unestimated = [], []
    # Rows unpack as tuples (``Messages.history``'s columns, in order): reading six columns by name
    # cost more than building the message (``docs/performance.md``).
    rows = store.messages.history(session.id, after_seq=summary.through_seq if summary else 0)
    for seq, role, content, tokens, estimator_version, digest in rows:
        current = estimator_version == ESTIMATOR_VERSION
        history.append(stored_message(seq, role, content, tokens if current else None, digest))
        if not current:
            unestimated.append(seq)
    return RunState(
        tenant_id=store.tenant_id,
        session_id=session.id,
        agent=AgentConfig.from_row(agent),
        caller=caller,
        mode=mode,
        handles=handles,
        history=history,
        summary=summary,
        unestimated=unestimated,
        stored_seq=session.last_seq,
        todos=list(session.todos),
        trace_content=store.tenant().trace_llm_content,
    )


def agent_state(store: TenantStore, agent: Any, caller: Caller) -> RunState:
    """A state for ``agent`` with no session: what every session's system blocks and tools start from."""
    return RunState(
        tenant_id=store.tenant_id,
        session_id=None,
        agent=AgentConfig.from_row(agent),
        caller=caller,
        trace_content=store.tenant().trace_llm_content,
    )


def prepare(chain: Chain, state: RunState, store: TenantStore, deps: Deps) -> RunState:
    """Run every run hook once; they read through ``store`` (handed over in a ``RunContext``)."""
    chain.before_run(state, RunContext(store, deps))
    return state


def store_estimates(store: TenantStore, state: RunState) -> None:
    """Store the estimate of every loaded message stored without a current one (one statement)."""
    if state.unestimated:
        wanted = set(state.unestimated)
        tokens = {m.seq: estimate_message(m.message) for m in state.history if m.seq in wanted}
        store.messages.store_estimates(state.session_id, tokens, ESTIMATOR_VERSION)
        state.unestimated = []


def append_message(store: TenantStore, state: RunState, role: str, content: list[dict[str, Any]]) -> Any:
    """Store the session's next message with its estimate and ledger hash, add it to ``state.history``; the row."""
    message = message_from_dict({"role": role, "content": content})
    row = store.messages.append(
        state.session_id,
        role,
        content,
        state.run_id,
        tokens=estimate_message(message),
        estimator_version=ESTIMATOR_VERSION,
        content_hash=message_hash(message),
    )
    state.history.append(StoredMessage(row.seq, message))
    return row
