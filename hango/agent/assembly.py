"""One assembly path: runs, inspect, try and the PUT checks prepare a session's next call alike.

``prepare_session`` builds a fresh run state exactly like a run (every
``before_run`` hook) and closes a ``tool_use`` left without results the way the
run's repair will: a run stores that message, everyone else keeps it in memory,
so the preview equals the next run's request in that state too. What the state
is for (a run, an inspect, a try, compact-now, a scratch turn) is its ``Mode``,
given here. ``capture`` runs the model chain to a capture handler: only the
innermost handler differs from a run's; nothing is written and neither the
provider nor the summarizer is called. It answers the draft the provider would
receive with its frozen ``report``: what each slot left out and why, whether the
call would compact, the compaction it made (``hango.agent.report``). This module
is the runtime's seam: the inspector (``hango.inspector``) builds on it and the
runtime never imports the inspector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hango.agent.chain import Chain
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.gateway import Gateway
from hango.agent.loader import agent_state, load_state, prepare
from hango.agent.stack import build_chain
from hango.agent.state import NO_HANDLES, RUN, Caller, Mode, RunHandles, RunState, StoredMessage
from hango.agent.turns import tool_uses
from hango.messages import Message, Response, TextBlock, ToolResultBlock
from hango.store import TenantStore

CAPTURED = Response(Message("assistant", (TextBlock("(captured, not sent)"),)), "captured")
INTERRUPTED = "interrupted: the turn that made this call did not finish"


@dataclass(frozen=True)
class Prepared:
    """A session's state at the start of its next call, and the repair message a run would store."""

    chain: Chain
    state: RunState
    repair: StoredMessage | None = None


def prepare_session(
    deps: Deps,
    store: TenantStore,
    session: Any,
    caller: Caller,
    mode: Mode = RUN,
    *,
    handles: RunHandles = NO_HANDLES,
) -> Prepared:
    """A fresh state in ``mode`` with the run's ``handles`` for ``session`` after every run hook, its dangling
    ``tool_use`` closed in memory."""
    chain = build_chain()
    state = prepare(chain, load_state(store, session, caller, mode, handles=handles), store, deps)
    return Prepared(chain, state, close_dangling(state))


def prepare_agent(deps: Deps, store: TenantStore, agent: Any, caller: Caller) -> Prepared:
    """The agent's side of every session's next call (system blocks and tools): a state with no history."""
    chain = build_chain()
    return Prepared(chain, prepare(chain, agent_state(store, agent, caller), store, deps))


def close_dangling(state: RunState) -> StoredMessage | None:
    """Answer the ``tool_use`` blocks of a last assistant message with "interrupted" error results."""
    last = state.history[-1].message if state.history else None
    dangling = tool_uses(last) if last is not None and last.role == "assistant" else []
    if not dangling:
        return None
    results = tuple(ToolResultBlock(u.id, INTERRUPTED, is_error=True) for u in dangling)
    repair = StoredMessage(state.next_seq, Message("user", results))
    state.history.append(repair)
    return repair


def capture(chain: Chain, state: RunState) -> Draft:
    """What the provider would receive for ``state``'s next call, the chain run to a capture handler, with
    the ``report`` of what the slots did to it (``Draft.report``)."""
    captured: list[Draft] = []

    def handler(draft: Draft) -> Response:
        captured.append(draft)
        return CAPTURED

    chain.call_model(chain.draft(state), state, handler)
    return captured[0]


def checked_gateway(deps: Deps, store: TenantStore, state: RunState, timeout: float) -> Gateway:
    """A gateway for ``state``'s next call with its quota checked and its lineage read in ``store``'s
    transaction (402 there): the call then reads nothing more before it is sent (``Gateway.check_quota``)."""
    gateway = Gateway(deps, state, timeout)
    gateway.check_quota(state.agent.model, store)
    return gateway


def send(chain: Chain, draft: Draft, state: RunState, gateway: Gateway) -> Response:
    """One real model call of ``draft`` (``state``'s) through the chain's wrappers and ``gateway``; its tool
    calls are not run."""
    return chain.call_model(draft, state, gateway)
