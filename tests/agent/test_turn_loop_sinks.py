"""The one turn loop's rules, by sink: how many turns, whose tools run, where a turn stops."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest

from hango.agent.middleware.subagent import SUBAGENT_MAX_TURNS, OwnHistory
from hango.agent.state import AgentConfig, Caller, RunState, StoredMessage
from hango.agent.tools.base import Tool, ToolContext, ToolFailure, schema
from hango.agent.turn_loop import YIELDED, Sink, take_turns
from hango.errors import QuotaExhausted
from hango.messages import Message, Response, TextBlock, ToolDef, ToolUseBlock

ECHO = ToolDef("echo", "Answers ok.", schema({}))
AGENT = AgentConfig(uuid.uuid4(), uuid.uuid4(), "a", "offline/echo", "", ("echo",), {}, 100_000)


@dataclass
class Script:
    """A chain and model double: every answer calls ``echo`` until ``calls`` answers were given, then text."""

    calls: int = 1_000
    answered: int = 0
    ran: int = 0

    def draft(self, state: RunState, max_tokens: int = 4096) -> None:
        return None

    def tools(self, state: RunState) -> dict[str, Tool]:
        def echo(args: dict, ctx: ToolContext) -> str:
            self.ran += 1
            return "ok"

        return {"echo": Tool(ECHO, echo)}

    def call_model(self, draft, state, handler):
        return handler(draft)

    def call_tool(self, call, state, handler):
        return handler(call)

    def __call__(self, draft: object) -> Response:
        self.answered += 1
        if self.answered >= self.calls:
            return Response(Message("assistant", (TextBlock("done"),)), "end_turn")
        use = ToolUseBlock(f"toolu_{self.answered}", "echo", {})
        return Response(Message("assistant", (use,)), "tool_use")


@dataclass
class Kept(Sink):
    """A run's boundaries, its messages in a list, and a slot given back after ``give_back_after`` turns."""

    give_back_after: int | None = None
    messages: list[Message] = field(default_factory=list)
    turns: int = 0

    def keep(self, state: RunState, message: Message) -> None:
        self.messages.append(message)

    def turn_kept(self, state: RunState) -> None:
        self.turns += 1

    def gives_slot_back(self) -> bool:
        return self.turns == self.give_back_after


def drive(script: Script, sink: Sink, turns: int):
    state = RunState(uuid.uuid4(), uuid.uuid4(), AGENT, Caller(None, None))
    state.history = [StoredMessage(1, Message("user", (TextBlock("go"),)))]
    return take_turns(ToolContext(None, state, None, script), script, sink, turns), state  # type: ignore[arg-type]


def test_a_run_runs_the_tools_of_its_last_turn_so_its_history_ends_answered():
    script, sink = Script(), Kept()
    ending, _ = drive(script, sink, 3)
    assert (ending.status, ending.stop_reason) == ("max_turns", "max_turns")
    assert (script.answered, script.ran, sink.turns) == (3, 3, 3)
    assert [m.role for m in sink.messages] == ["assistant", "user"] * 3


def test_an_answer_without_tool_calls_completes_the_turns():
    script, sink = Script(calls=2), Kept()
    ending, _ = drive(script, sink, 5)
    assert (ending.status, ending.stop_reason, script.answered, script.ran) == ("completed", "end_turn", 2, 1)
    assert [m.role for m in sink.messages] == ["assistant", "user", "assistant"]


def test_a_run_that_gives_its_slot_back_stops_at_that_turn_boundary():
    script, sink = Script(), Kept(give_back_after=2)
    ending, _ = drive(script, sink, 10)
    assert (ending.status, script.answered, sink.turns) == (YIELDED, 2, 2)


def test_a_subagent_takes_at_most_its_turns_and_never_runs_the_tools_of_its_last_answer():
    script = Script()
    ending, state = drive(script, OwnHistory(), SUBAGENT_MAX_TURNS)
    assert (ending.status, script.answered, script.ran) == (
        "max_turns",
        SUBAGENT_MAX_TURNS,
        SUBAGENT_MAX_TURNS - 1,
    )
    assert ending.response is not None and ending.response.stop_reason == "tool_use"
    assert [m.seq for m in state.history] == list(range(1, 2 * SUBAGENT_MAX_TURNS))  # its own seqs, no gap


def test_a_quota_met_ends_a_runs_turns_and_fails_a_subagents_task():
    class Exhausted(Script):
        def __call__(self, draft: object) -> Response:
            raise QuotaExhausted()

    ending, _ = drive(Exhausted(), Kept(), 3)
    assert (ending.status, ending.stop_reason, ending.response) == ("quota_exhausted", None, None)
    with pytest.raises(ToolFailure, match="the subagent stopped"):
        drive(Exhausted(), OwnHistory(), SUBAGENT_MAX_TURNS)
