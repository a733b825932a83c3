"""Try: one real model call with parts removed, without touching the session.

The stored overrides plus the body's (screened exactly like a PUT, pair
closure included, on the history the call really carries) shape one call
through the real chain. Without ``message``
it re-answers the last user turn; with it, the text is a new user turn. Tool
calls in the answer are returned, never executed; no message and no run are
stored; the call is billed with purpose ``context_try`` and no run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from hango.agent.assembly import Gateway, capture, checked_gateway, prepare_session
from hango.agent.chain import Chain, history_messages
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.overrides import EXCLUDE, REPLACE, Override, Overrides
from hango.agent.parts import (
    PartID,
    SourcedMessage,
    in_part_order,
    message_part,
    new_try_id,
    server_part,
    target_of,
    tool_server,
)
from hango.agent.state import ONE_CALL_TRY, AgentConfig, Caller, RunState, StoredMessage
from hango.errors import Unprocessable
from hango.inspector.inspection import parts_of
from hango.inspector.override_rules import close_set, companions, screen, validate_set
from hango.messages import Message, Response, TextBlock, holds_text, message_to_dict
from hango.store import TenantStore


@dataclass(frozen=True)
class TryBody:
    exclude: list[PartID]
    include: list[PartID]
    replace: dict[PartID, str]
    message: str | None
    # tool or server parts the try defers, or sends though the agent defers them (``Deferral``)
    defer: list[PartID] = field(default_factory=list)
    undefer: list[PartID] = field(default_factory=list)


@dataclass(frozen=True)
class TryPlan:
    """The overrides one try call uses, and what the body's exclusions pulled in."""

    overrides: Overrides
    added: list[PartID]
    cut: list[PartID] = field(default_factory=list)  # the messages after the re-answered turn
    # the messages the call carries, when planning built them (no message overrides: nothing filters them)
    history: list[SourcedMessage] | None = None

    @property
    def excluded(self) -> list[PartID]:
        """Every part the call leaves out: excluded by an override, or cut after the turn it re-answers."""
        chosen = {**self.overrides.agent, **self.overrides.session}
        return in_part_order({*(p for p, o in chosen.items() if o.action == EXCLUDE), *self.cut})


@dataclass(frozen=True)
class PreparedTry:
    """A try ready to send: the chain, its draft, the state its call runs on, the overrides it uses, and its
    gateway."""

    chain: Chain
    draft: Draft
    state: RunState
    plan: TryPlan
    gateway: Gateway

    def timed(self, deadline: float) -> PreparedTry:
        """The try with its call's deadline (``time.monotonic``), counted once the request's transaction
        ended: its state made again with that handle, and the checked gateway billing that state."""
        handles = dataclasses.replace(self.state.handles, deadline=deadline)
        state = dataclasses.replace(self.state, handles=handles)
        self.gateway.state = state  # the quota and lineage it read ahead stay read
        return dataclasses.replace(self, state=state)


def prepare_try(deps: Deps, store: TenantStore, session: Any, caller: Caller, body: TryBody) -> PreparedTry:
    """The session's next call as a try (mode ``ONE_CALL_TRY``: a real call, billed as ``context_try``, no run, never
    compacting), with the body's overrides screened and closed.

    After the body's checks (422), the call's quota check and its lineage are read here too, in
    ``store``'s transaction: the call then reads nothing before it is sent. The new turn, if any, is a scratch
    part (``scratch:<try>:<seq>``): the session's seq counter is not touched.
    """
    prepared = prepare_session(deps, store, session, caller, ONE_CALL_TRY)
    state = prepared.state
    tried = plan(prepared.chain, state, body, new_try_id())
    gateway = checked_gateway(deps, store, state, deps.config.context_try_timeout)
    draft = prepared.chain.draft(state, history=tried.history)
    return PreparedTry(prepared.chain, draft, state, tried, gateway)


def screen_turn(deps: Deps, store: TenantStore, session: Any, caller: Caller, body: TryBody) -> TryPlan:
    """Screen a whole-turn try's body on the session's next call now (its 422s), reserving no seq.

    The worker plans it again on its snapshot (``shape_turn``): the history may grow meanwhile.
    """
    prepared = prepare_session(deps, store, session, caller, ONE_CALL_TRY)
    return plan(prepared.chain, prepared.state, body)


def shape_turn(chain: Chain, state: RunState, body: dict[str, Any]) -> TryPlan:
    """A scratch turn's plan (``hango.agent.scratch.Shaper``): the try body stored on its run, on its snapshot."""
    return plan(chain, state, TryBody(**body), state.mode.try_id)


def plan(chain: Chain, state: RunState, body: TryBody, try_id: str | None = None) -> TryPlan:
    """Merge the stored overrides with the body's, screened like a PUT, and close them on the history sent.

    The history is cut (or given the new turn) first, so the set is checked
    against exactly the messages the call carries; ``state.overrides`` ends as
    the closed set the call uses. Without message overrides there is no set to
    close and the call is not captured: the messages it carries are the history's
    (``history_messages``: a try never compacts, and nothing filters them).
    """
    if body.defer or body.undefer:
        state.agent = tried_deferral(chain, state, body)
    stored = state.overrides
    wanted = [Override(p, EXCLUDE) for p in body.exclude] + [
        Override(p, REPLACE, t) for p, t in body.replace.items()
    ]
    chosen: dict[PartID, Override] = {}
    released: set[PartID] = set()
    if wanted or body.include:  # else (a try with only a new turn) nothing to screen: no call captured
        screened = validate_set(chain, state, wanted, stored_parts(stored))
        whole, chosen = screened.draft, screened.chosen
        released = set(
            screen([Override(p, EXCLUDE) for p in body.include], parts_of(whole), stored_parts(stored))
        )
        if released:  # an included part brings its whole pair group back
            groups = companions(whole.messages)
            released |= {other for p in released for other in groups.get(p, ())}
    agent = {p: o for p, o in stored.agent.items() if p not in released}
    agent |= {p: o for p, o in chosen.items() if target_of(p) == "agent"}
    explicit = {p: o for p, o in stored.session.items() if o.paired_from is None and p not in released}
    explicit |= {p: o for p, o in chosen.items() if target_of(p) == "session"}
    state.overrides = Overrides.of(agent.values(), explicit.values())
    cut = shape_history(state, body.message, try_id)
    if not explicit:  # no message left out or replaced: nothing to close, the history is checked as it goes
        history = history_messages(state)
        close_set({}, history, strict=True)
        return TryPlan(state.overrides, [], cut, history)
    sent = capture(chain, dataclasses.replace(state, overrides=Overrides()))
    already = [p for p, o in stored.session.items() if o.action == EXCLUDE and p not in released]
    closed, added = close_set(explicit, sent.messages, strict=True, already=already)
    state.overrides = Overrides.of(agent.values(), closed)
    return TryPlan(state.overrides, added, cut)


def tried_deferral(chain: Chain, state: RunState, body: TryBody) -> AgentConfig:
    """The agent as the try defers its tools (``Deferral.changed``); a part that names no tool or server of
    the call is 422."""
    parts = chain.toolset(state).deferrable_parts()
    present = parts | {server_part(s) for s in map(tool_server, parts) if s is not None}
    unknown = [p for p in (*body.defer, *body.undefer) if p not in present]
    if unknown:
        raise Unprocessable(
            f"{unknown[0]} is no tool or server of this session's next call", code="unknown_part"
        )
    return dataclasses.replace(state.agent, defer=state.agent.defer.changed(body.defer, body.undefer, parts))


def stored_parts(overrides: Overrides) -> list[PartID]:
    return [*overrides.agent, *overrides.session]


def new_turn(state: RunState, text: str, try_id: str | None = None) -> StoredMessage:
    """``text`` as the user message after the stored history: a try's scratch message when ``try_id`` is
    given (``scratch:<try>:<seq>``), else the session's next message."""
    return StoredMessage(state.next_seq, Message("user", (TextBlock(text),)), try_id)


def shape_history(state: RunState, message: str | None, try_id: str | None = None) -> list[PartID]:
    """Append ``message`` as a new user turn, or cut after the last user text message that is sent.

    Returns the parts of the messages cut (the trailing assistant message, say): the call leaves them out.
    """
    if message is not None:
        state.history.append(new_turn(state, message, try_id))
        return []
    for index in range(len(state.history) - 1, -1, -1):
        if _sent_user_text(state.history[index], state.overrides):
            cut = [message_part(m.seq) for m in state.history[index + 1 :]]
            del state.history[index + 1 :]
            return cut
    return []


def _sent_user_text(stored: StoredMessage, overrides: Overrides) -> bool:
    """A user message with text that the call sends (an excluded one is no turn to re-answer)."""
    message = stored.message
    return message.role == "user" and holds_text(message) and not overrides.excludes(message_part(stored.seq))


def answer(response: Response) -> dict[str, Any]:
    """The assistant message as the API returns it (tool calls included, not executed)."""
    return message_to_dict(response.message)
