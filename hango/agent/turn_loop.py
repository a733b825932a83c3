"""The one turn loop: model call → answer → tool calls → results, turn after turn, into a ``Sink``.

A queued run (``hango.agent.runner``), a try run's scratch turn (``hango.agent.scratch``) and the
subagent tool (``hango.agent.middleware.subagent``) all drive their turns here. They differ only in
their sink: where a turn's messages go (stored and committed per turn, kept as the try's scratch
parts, kept in the subagent's own history) and what a turn boundary does (the run's deadline and
step checks, a worker slot given back, the subagent's quota rule). No other function calls both the
model phase and the tool phase (``tests/foundation/test_turn_loop.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from hango.agent.middleware.base import ModelHandler
from hango.agent.middleware.tool_search import reveal_referenced
from hango.agent.state import RunState
from hango.agent.tools.base import ToolContext
from hango.agent.turns import model_phase, tool_phase, tool_uses
from hango.errors import QuotaExhausted
from hango.messages import Message, Response

YIELDED = "queued"  # what the turns end in when the run gives its slot back (``hango.agent.yielding``)


@dataclass(frozen=True)
class Ending:
    """How the turns ended: ``completed``, ``max_turns``, ``quota_exhausted`` or ``YIELDED``; the last answer."""

    status: str
    stop_reason: str | None
    response: Response | None = None


class Sink(ABC):
    """Where a turn loop's messages go and what its turn boundaries do; this one is a run's boundaries.

    ``keep`` is each kind's own; the others default to a run's: before each model call its deadline
    and a step boundary (``check_before_call``), after it a cancel check, no slot to give back, and
    the tools of the last turn's answer run, so the history ends answered.
    """

    runs_last_tools = True  # whether the last turn's tool calls run (a stored history must answer them)

    def before_call(self, state: RunState) -> None:
        """A step boundary: a run past its deadline, cancelled or shut down stops before its next model call."""
        state.check_deadline()
        state.steps.check_before_call()

    def after_call(self, state: RunState) -> None:
        """And after it: a run cancelled meanwhile drops the answer with its turn (a shutdown keeps it)."""
        state.steps.check()

    @abstractmethod
    def keep(self, state: RunState, message: Message) -> None:
        """Keep one message of the turn: its answer, then the results of its tool calls."""

    def turn_kept(self, state: RunState) -> None:
        """Every message of the turn is kept (a stored run commits them here)."""
        return  # kept in memory: nothing to commit

    def gives_slot_back(self) -> bool:
        """At a turn boundary the loop goes on from: whether the run stops here to wait in the queue again."""
        return False

    def out_of_quota(self, error: QuotaExhausted) -> None:
        """A model call met the quota: the turns end ``quota_exhausted`` unless this raises."""
        return  # a run's status says it; its history stays valid


def take_turns(ctx: ToolContext, handler: ModelHandler, sink: Sink, turns: int) -> Ending:
    """Up to ``turns`` turns of ``ctx.state`` through ``ctx.chain`` and ``handler``, their messages into ``sink``."""
    chain, state = ctx.chain, ctx.state
    for turn in range(turns):
        sink.before_call(state)
        try:
            response = model_phase(chain, state, handler)
        except QuotaExhausted as exc:
            sink.out_of_quota(exc)
            return Ending("quota_exhausted", None)
        sink.after_call(state)
        uses = tool_uses(response.message)
        if uses and turn == turns - 1 and not sink.runs_last_tools:
            return Ending("max_turns", "max_turns", response)
        sink.keep(state, response.message)
        reveal_referenced(ctx, response.message)  # the provider's own search, before the calls run
        if uses:
            sink.keep(state, tool_phase(chain, state, ctx, uses))
        sink.turn_kept(state)
        if not uses:
            return Ending("completed", response.stop_reason, response)
        if sink.gives_slot_back():
            return Ending(YIELDED, None, response)
    return Ending("max_turns", "max_turns")
