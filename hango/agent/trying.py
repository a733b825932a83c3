"""Try: one real model call with parts removed, without touching the session.

The stored overrides plus the body's (validated exactly like a PUT, pair
closure included) shape one call through the real chain. Without ``message``
it re-answers the last user turn; with it, the text is a new user turn. Tool
calls in the answer are returned, never executed; no message and no run are
stored; the call is billed with purpose ``context_try`` and no run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hango.agent.chain import Chain, history_messages
from hango.agent.gateway import Gateway
from hango.agent.overrides import (
    EXCLUDE,
    REPLACE,
    Override,
    Overrides,
    check_override,
    close_set,
)
from hango.agent.parts import PartID, SourcedMessage, message_part
from hango.agent.state import RunState, StoredMessage
from hango.messages import Message, Response, TextBlock, message_to_dict

PURPOSE = "context_try"


@dataclass(frozen=True)
class TryBody:
    exclude: list[PartID]
    include: list[PartID]
    replace: dict[PartID, str]
    message: str | None


@dataclass(frozen=True)
class TryPlan:
    """The overrides one try call uses, and what the body's exclusions pulled in."""

    overrides: Overrides
    added: list[PartID]

    @property
    def excluded(self) -> list[PartID]:
        return sorted(
            p for p, o in {**self.overrides.agent, **self.overrides.session}.items() if o.action == EXCLUDE
        )


def plan(state: RunState, body: TryBody) -> TryPlan:
    """Merge the stored overrides with the body's, validated and closed like a PUT."""
    wanted = [Override(p, EXCLUDE) for p in body.exclude] + [
        Override(p, REPLACE, t) for p, t in body.replace.items()
    ]
    for override in wanted:
        check_override(override, target_of(override.part))
    released = set(body.include)
    agent = {p: o for p, o in state.overrides.agent.items() if p not in released}
    agent |= {o.part: o for o in wanted if target_of(o.part) == "agent"}
    explicit = {
        p: o for p, o in state.overrides.session.items() if o.paired_from is None and p not in released
    }
    explicit |= {o.part: o for o in wanted if target_of(o.part) == "session"}
    history = _sent_history(state, body.message)
    closed, added = close_set(list(explicit.values()), history, strict=True)
    already = set(body.exclude) | {p for p in state.overrides.session if p not in released}
    return TryPlan(Overrides.of(agent.values(), closed), [p for p in added if p not in already])


def _sent_history(state: RunState, message: str | None) -> list[SourcedMessage]:
    """The history the call would carry, the new turn included: what the set must leave valid."""
    history = history_messages(state)
    if message is not None:
        turn = new_turn(state, message)
        history.append(SourcedMessage(message_part(turn.seq), turn.message))
    return history


def new_turn(state: RunState, text: str) -> StoredMessage:
    """``text`` as the user message after the stored history."""
    return StoredMessage(state.last_seq + 1, Message("user", (TextBlock(text),)))


def target_of(part: PartID) -> str:
    """Which stored set a part belongs to (``agent`` or ``session``); malformed ids are checked after."""
    return "agent" if part.startswith(("system:", "tool:")) else "session"


def shape_history(state: RunState, message: str | None) -> None:
    """Append ``message`` as a new user turn, or cut after the last user text message that is sent."""
    if message is not None:
        state.history.append(new_turn(state, message))
        return
    for index in range(len(state.history) - 1, -1, -1):
        if _sent_user_text(state.history[index], state.overrides):
            del state.history[index + 1 :]
            return


def _sent_user_text(stored: StoredMessage, overrides: Overrides) -> bool:
    """A user message with text that the call sends (an excluded one is no turn to re-answer)."""
    message = stored.message
    has_text = any(isinstance(b, TextBlock) for b in message.content)
    return message.role == "user" and has_text and not overrides.excludes(message_part(stored.seq))


def send(chain: Chain, state: RunState, gateway: Gateway) -> Response:
    """One model call through the chain; the answer's tool calls are not executed."""
    return chain.call_model(chain.draft(state), state, gateway)


def for_try(state: RunState, try_plan: TryPlan) -> RunState:
    """The state a try call runs on: billed as ``context_try``, no run, never compacting."""
    return dataclasses.replace(
        state, overrides=try_plan.overrides, purpose=PURPOSE, run_id=None, compactor=None
    )


def answer(response: Response) -> dict[str, Any]:
    """The assistant message as the API returns it (tool calls included, not executed)."""
    return message_to_dict(response.message)
