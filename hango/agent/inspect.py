"""Inspect: assemble a session's next request through the real chain, stopping at a capture handler.

There is one assembly path: inspect and try build a fresh run state exactly like
a run, run ``before_run``, and call the model chain; only the innermost handler
differs (capture instead of the provider). Inspect never calls the provider or
the summarizer and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hango.agent.chain import Chain, history_messages
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.loader import load_state, prepare
from hango.agent.middleware.tool_allowlist import enabled_tools
from hango.agent.parts import SourcedBlock, SourcedMessage
from hango.agent.stack import build_chain
from hango.agent.state import Caller, RunState
from hango.messages import Message, Response, TextBlock, ToolDef
from hango.store import TenantStore

CAPTURED = Response(Message("assistant", (TextBlock("(captured, not sent)"),)), "captured")


@dataclass(frozen=True)
class Assembly:
    """Everything the next call would be built from, before and after overrides."""

    chain: Chain
    state: RunState
    system: list[SourcedBlock]
    tools: list[ToolDef]
    messages: list[SourcedMessage]
    captured: Draft


def prepared_state(deps: Deps, store: TenantStore, session: Any, caller: Caller) -> tuple[Chain, RunState]:
    """A fresh run state for ``session`` after every run hook, like the start of a run."""
    chain = build_chain()
    state = prepare(chain, load_state(store, session, caller), store, deps)
    state.capture_only = True
    return chain, state


def assemble(chain: Chain, state: RunState) -> Assembly:
    """Run the model chain to a capture handler and keep what it received."""
    captured: list[Draft] = []

    def capture(draft: Draft) -> Response:
        captured.append(draft)
        return CAPTURED

    draft = chain.draft(state)
    chain.call_model(draft, state, capture)
    enabled = enabled_tools(state.agent, state)
    return Assembly(
        chain=chain,
        state=state,
        system=chain.contributed_blocks(state),
        tools=[t.definition for t in chain.tools(state).values() if t.name in enabled],
        messages=list(draft.messages),  # the history before overrides, as the chain received it
        captured=captured[0],
    )


def inspect_session(deps: Deps, store: TenantStore, session: Any, caller: Caller) -> Assembly:
    """The assembly of ``session``'s next model call, with its stored overrides."""
    chain, state = prepared_state(deps, store, session, caller)
    return assemble(chain, state)


def visible_history(store: TenantStore, session: Any, caller: Caller) -> list[SourcedMessage]:
    """The messages the next request would carry: the summary part and every message after it."""
    return history_messages(load_state(store, session, caller))
