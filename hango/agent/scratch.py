"""A scratch turn: the whole agent loop on an overlay of the session, keeping nothing (a run of kind ``try``).

The turn takes the session's advisory lock only long enough to open its snapshot (a
``REPEATABLE READ READ ONLY`` transaction whose first statement runs while the lock
is held, so it sees the session between two runs), and reads everything through it
from then on: the state ``prepare_session`` loads, and every tool's read. Writes go to
the overlay (``hango.agent.overlay``), history and a summary stay in the run state; a
real run may start meanwhile and the turn goes on seeing its snapshot. Model calls
are real, billed as a try (its ``Mode``, ``scratch_turn``: purpose ``context_try``, the try run's
id), with their usage, ledger rows and steps written by the gateway in their own
transactions, as every run's are. The turn's own messages (its new user turn, answers and tool
results) are scratch parts, ``scratch:<try>:<seq>`` (``hango.agent.parts``): no stored message shares
their ids. The run's ``result`` says what the turn did: its
calls (ledger ids, which ``GET /v1/runs/{id}`` expands), its tool calls, the answer,
usage, cost, the changes it would have made, and what its ``tool_search`` calls did: each
one's query, the tools it revealed (in the turn's state only) and which of them the turn then
called, beside the deferral the try ran with (``deferral``: its ``defer`` and ``undefer`` as asked).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy.engine import Connection

from hango import run_events
from hango.agent.assembly import prepare_session
from hango.agent.chain import Chain
from hango.agent.compactor import StoredCompactor
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.gateway import Gateway
from hango.agent.overlay import OverlayStore
from hango.agent.parts import new_try_id
from hango.agent.run_steps import Steps
from hango.agent.state import Caller, RunHandles, RunState, StoredMessage, Summary, ToolCall, scratch_turn
from hango.agent.tools.base import Tool, ToolContext
from hango.agent.toolset import TOOL_SEARCH, toolset_of
from hango.agent.turn_loop import Sink, take_turns
from hango.agent.turns import tool_uses
from hango.errors import NotFound
from hango.messages import TOKEN_FIELDS, Message, Response, ToolResultBlock, message_to_dict
from hango.store.locks import lock_session, unlock_session
from hango.store.read_only import read_only_snapshot

log = logging.getLogger(__name__)

# How the body's overrides shape the turn (the inspector's try plan, handed in by the worker, since the
# runtime never imports the inspector): it screens them on the state and leaves the overrides on it.
# The plan it returns names ``excluded`` and ``added``; it raises a 422 the run fails with.
Shaper = Callable[[Chain, RunState, dict[str, Any]], Any]
SUCCEEDED = ("completed", "max_turns")


@dataclass
class TurnRecord:
    """What a scratch turn did, as it happened: its model calls and its tool calls, in order."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    costs: list[str | None] = field(default_factory=list)  # each call's price, as the gateway reported it
    simulated_at: str | None = None  # the reference model of the calls' simulated prices (None: real ones)
    asked: dict[str, int] = field(default_factory=dict)  # tool_use id → the call that asked for it
    # each tool_search call: its index in ``tools``, its query, and the tools it revealed (name → part)
    searches: list[tuple[int, str, dict[str, str]]] = field(default_factory=list)

    def call_finished(self, detail: dict[str, Any]) -> None:
        self.calls.append({"id": detail["call_id"], "usage": detail["usage"]})
        self.costs.append(detail["cost_usd"])
        self.simulated_at = self.simulated_at or detail["cost_simulated_at"]

    def answered(self, message: Message) -> None:
        for use in tool_uses(message):
            self.asked[use.id] = len(self.calls) - 1

    def usage(self) -> dict[str, int]:
        return {name: sum(call["usage"][name] for call in self.calls) for name in TOKEN_FIELDS}

    def cost(self) -> float | None:
        """The turn's total price in USD, a number as each call's ``cost.usd``; None when some call has no price.

        Summed exactly (the events' decimal strings), then made a number once.
        """
        if any(cost is None for cost in self.costs):
            return None
        return float(sum((Decimal(cost) for cost in self.costs), Decimal(0)))

    def searched(self) -> list[dict[str, Any]]:
        """What each ``tool_search`` call did: its query, the parts it revealed, and which revealed tools
        the turn called after it (by the name the model called, in order, each once)."""
        return [
            {
                "query": query,
                "revealed": list(found.values()),
                "called": list(
                    dict.fromkeys(t["name"] for t in self.tools[index + 1 :] if t["name"] in found)
                ),
            }
            for index, query, found in self.searches
        ]


class RecordingSteps:
    """The run's steps, noting the model calls in the turn's record on their way to ``run_events``."""

    def __init__(self, steps: Steps, record: TurnRecord) -> None:
        self.steps, self.record = steps, record

    def emit(self, kind: str, **detail: Any) -> None:
        if kind == run_events.MODEL_CALL_FINISHED:
            self.record.call_finished(detail)
        self.steps.emit(kind, **detail)

    def check(self) -> None:
        self.steps.check()

    def check_before_call(self) -> None:
        self.steps.check_before_call()

    def model_call(self) -> contextlib.AbstractContextManager[None]:
        return self.steps.model_call()

    def watching(
        self, end: Callable[[], None], ended: Callable[[], bool]
    ) -> contextlib.AbstractContextManager[None]:
        return self.steps.watching(end, ended)


@dataclass(frozen=True)
class RecordingChain:
    """The chain as the turn's loop and its subagents drive it (a ``ToolChain``), recording every tool call."""

    chain: Chain
    record: TurnRecord

    def draft(self, state: RunState, max_tokens: int = 4096) -> Draft:
        return self.chain.draft(state, max_tokens)

    def tools(self, state: RunState) -> dict[str, Tool]:
        return self.chain.tools(state)

    def call_model(self, draft: Draft, state: RunState, handler: Callable[[Draft], Response]) -> Response:
        response = self.chain.call_model(draft, state, handler)
        self.record.answered(response.message)
        return response

    def call_tool(
        self, call: ToolCall, state: RunState, handler: Callable[[ToolCall], ToolResultBlock]
    ) -> ToolResultBlock:
        use = call.use
        entry = {"call": self.record.asked.get(use.id), "id": use.id, "name": use.name, "input": use.input}
        self.record.tools.append(entry)  # when asked: a subagent's tools come after its ``task``
        index = len(self.record.tools) - 1
        entry.update(
            result=None, is_error=True, duration_ms=None
        )  # unless it returns: a deadline or a cancel
        clock = time.monotonic()
        known = set(state.revealed)
        try:
            result = self.chain.call_tool(call, state, handler)
        finally:
            entry["duration_ms"] = int((time.monotonic() - clock) * 1000)
        entry.update(result=result.content, is_error=result.is_error)
        if (
            use.name == TOOL_SEARCH and not result.is_error
        ):  # what it revealed: the names it added to the state
            tools = toolset_of(state.agent, state)
            found = {name: tools.part(name) for name in state.revealed if name not in known}
            self.record.searches.append((index, str(use.input.get("query", "")), found))
        return result


@dataclass(frozen=True)
class ScratchCompactor(StoredCompactor):
    """Summarizes for real (billed as the try) and keeps the summary in the turn, never in the session."""

    saved: list[Summary] = field(default_factory=list)

    def save(self, state: RunState, through_seq: int, text: str) -> None:
        self.saved.append(Summary(through_seq, text))
        state.steps.emit(run_events.COMPACTION, through_seq=through_seq)


class ScratchTurn(Sink):
    """One try run's turn on the connection that holds the run's own lock (``conn``); the ``Sink`` of its
    turns, which keeps their messages in the state, with a run's step boundaries."""

    def __init__(
        self, deps: Deps, conn: Connection, run: Any, *, caller: Caller, steps: Steps, shape: Shaper
    ) -> None:
        self.deps, self.conn, self.run, self.caller, self.shape = deps, conn, run, caller, shape
        self.record = TurnRecord()
        self.steps = RecordingSteps(steps, self.record)
        self.plan: Any = None
        self.model: str | None = None
        self.answer: Message | None = None
        self.changes: dict[str, Any] | None = None

    def execute(self) -> tuple[str, str | None]:
        """Run the turn to its end; its status and stop reason (``Cancelled`` and errors propagate)."""
        with read_only_snapshot(self.deps.engine) as snapshot:
            store = OverlayStore(snapshot, self.run.tenant_id)
            try:
                return self._turn(store)
            finally:
                self.changes = self._changes(store)

    def _turn(self, store: OverlayStore) -> tuple[str, str | None]:
        session = self._open(store)
        # No deadline nor compactor yet: the plan's captures must not summarize.
        planning = RunHandles(self.run.id, self.steps)
        mode = scratch_turn(new_try_id())
        prepared = prepare_session(self.deps, store, session, self.caller, mode, handles=planning)
        self.model = prepared.state.agent.model
        self.plan = self.shape(prepared.chain, prepared.state, self.run.input or {})
        timeout = self.deps.config.run_timeout
        # The turn's state: the planned one (its overrides screened) with the turn's deadline and compactor.
        handles = RunHandles(self.run.id, self.steps, time.monotonic() + timeout, ScratchCompactor(self.deps))
        state = dataclasses.replace(prepared.state, handles=handles)
        gateway = Gateway(self.deps, state, timeout)
        self.steps.check_before_call()
        gateway.check_quota()
        chain = RecordingChain(prepared.chain, self.record)
        ending = take_turns(
            ToolContext(store, state, self.deps, chain), gateway, self, self.deps.config.max_turns
        )
        return ending.status, ending.stop_reason

    def _open(self, store: OverlayStore) -> Any:
        """The session as the snapshot sees it: its first statement runs while the session's lock is held.

        A run holds the lock from before it starts until it ended, so the snapshot sees the session
        between two runs, never in the middle of one; the lock is let go at once.
        """
        lock_session(self.conn, self.run.session_id)
        try:
            session = store.sessions.read(self.run.session_id)
        finally:
            unlock_session(self.conn, self.run.session_id)
            self.conn.commit()
        if session is None:
            raise NotFound("the session no longer exists")
        return session

    def keep(self, state: RunState, message: Message) -> None:
        """Keep one message of the turn in the state only, a scratch part of the try (its answer noted)."""
        if message.role == "assistant":
            self.answer = message
        state.history.append(StoredMessage(state.next_seq, message, state.mode.try_id))

    def _changes(self, store: OverlayStore) -> dict[str, Any] | None:
        if self.plan is None:
            return None
        try:
            return store.changes(self.run.session_id)
        except Exception:  # the snapshot broke with the turn: the error that ended it is what counts
            log.exception("the changes of try run %s could not be read", self.run.id)
            return None

    def result(self, stop_reason: str | None) -> dict[str, Any] | None:
        """The run's ``result``: what the turn did (None when it never got past its plan)."""
        if self.plan is None:
            return None
        asked = self.run.input or {}
        return {
            "answer": None if self.answer is None else message_to_dict(self.answer),
            "stop_reason": stop_reason,
            "calls": [{"id": None if c["id"] is None else str(c["id"])} for c in self.record.calls],
            "tools": self.record.tools,
            "usage": self.record.usage(),
            "cost": self.record.cost(),
            "cost_simulated_at": self.record.simulated_at,
            "changes": self.changes or {"files": [], "memory": [], "todos": None},
            "excluded": list(self.plan.excluded),
            "added": list(self.plan.added),
            "searches": self.record.searched(),
            "deferral": {key: list(asked.get(key) or []) for key in ("defer", "undefer")},
        }

    def audit_detail(self, status: str, code: str | None) -> dict[str, Any]:
        """The ``context.try`` audit row's detail: what was left out, the model, the outcome; no content."""
        outcome = "ok" if status in SUCCEEDED else code or status
        excluded = list(self.plan.excluded) if self.plan is not None else []
        return {"excluded": excluded, "model": self.model, "outcome": outcome, "mode": "turn"}
