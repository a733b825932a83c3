"""Run state: what one run (or one inspect) has loaded, typed, built fresh for each run."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from hango.agent.deferral import NOTHING_DEFERRED, Deferral
from hango.agent.overrides import Overrides
from hango.agent.parts import PartID, message_part, scratch_part
from hango.agent.run_steps import NoSteps, Steps
from hango.errors import GatewayTimeout
from hango.messages import Message, ToolDef, ToolUseBlock

TRY_PURPOSE = "context_try"
MODES = ("run", "inspect", "try", "compact", "scratch")


@dataclass(frozen=True)
class Mode:
    """What a state's calls are for, fixed where the state is made: the one value slots and gateway read.

    ``name`` is one of ``MODES``. A ``run``'s calls are sent; an ``inspect``'s stop at a capture
    handler and never summarize; a ``try``'s one call is sent and billed as a try; ``compact``
    summarizes the history even below the trigger; a ``scratch`` turn is a try run's whole turn,
    whose messages (and summary) are scratch parts of ``try_id`` and whose every call is billed as
    a try. ``purpose`` names the calls on their steps and ledger lineage (``run``, ``subagent``,
    ``summarize``, ``context_try``).
    """

    name: str
    purpose: str = "run"
    try_id: str | None = None

    def __post_init__(self) -> None:
        if self.name not in MODES:
            raise ValueError(f"no mode {self.name!r}: one of {', '.join(MODES)}")

    @property
    def captures(self) -> bool:
        """An inspect's: the summarization slot only reports that it would compact."""
        return self.name == "inspect"

    @property
    def compacts_now(self) -> bool:
        """Compact-now's: the summarization slot compacts whatever the trigger says."""
        return self.name == "compact"

    @property
    def billed_purpose(self) -> str:
        """The purpose a call's usage and ledger rows carry: a scratch turn's calls, its subagents'
        and its summarizer's alike, are ``context_try``."""
        return TRY_PURPOSE if self.try_id else self.purpose

    def calling(self, purpose: str) -> Mode:
        """The same mode, for calls of ``purpose`` (a subagent's, the summarizer's)."""
        return replace(self, purpose=purpose)


RUN = Mode("run")
INSPECT = Mode("inspect")
ONE_CALL_TRY = Mode("try", TRY_PURPOSE)
COMPACT = Mode("compact")


def scratch_turn(try_id: str) -> Mode:
    """A try run's whole turn: its messages are ``scratch:<try_id>:<seq>`` parts."""
    return Mode("scratch", TRY_PURPOSE, try_id)


class Compactor(Protocol):
    """What summarization needs from a run: a summarizer call and a place to keep its result (for ``state``)."""

    def summarize(self, state: RunState, transcript: str) -> str: ...

    def save(self, state: RunState, through_seq: int, text: str) -> None: ...


@dataclass(frozen=True)
class RunHandles:
    """What a run's calls are billed to, report to and stop by, given when its state is made, never set later.

    The run's id, where its steps go (``hango.agent.run_steps``), its deadline (``time.monotonic``; None:
    none) and what summarizes for it (None: its summarization slot only reports that it would compact).
    An inspect, a try's capture and a PUT's checks take ``NO_HANDLES``.
    """

    run_id: uuid.UUID | None = None
    steps: Steps = field(default_factory=NoSteps)
    deadline: float | None = None
    compactor: Compactor | None = None


NO_HANDLES = RunHandles()


@dataclass(frozen=True)
class AgentConfig:
    """The parts of an agent row the runtime reads."""

    id: uuid.UUID
    owner_id: uuid.UUID
    name: str
    model: str
    system_prompt: str
    tools: tuple[str, ...]
    settings: dict[str, Any]
    context_window: int
    defer: Deferral = NOTHING_DEFERRED  # the tools kept out of a request until ``tool_search`` finds them

    @classmethod
    def from_row(cls, row: Any) -> AgentConfig:
        return cls(
            row.id,
            row.owner_id,
            row.name,
            row.model,
            row.system_prompt,
            tuple(row.tools),
            dict(row.settings),
            row.context_window,
            Deferral.of(row.defer),
        )


@dataclass(frozen=True)
class StoredMessage:
    """A history message; ``scratch`` is the try's id when only a try sends it (never stored)."""

    seq: int
    message: Message
    scratch: str | None = None

    @property
    def part(self) -> PartID:
        """``message:<seq>``, or ``scratch:<try>:<seq>`` for a try's own message."""
        return message_part(self.seq) if self.scratch is None else scratch_part(self.scratch, self.seq)


@dataclass(frozen=True)
class Summary:
    """A summary of the history through ``through_seq``; ``scratch`` is the try's id when a scratch turn
    made it (never stored)."""

    through_seq: int
    text: str
    scratch: str | None = None


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    allowed_tools: tuple[str, ...]


class ServedTool(Protocol):
    """A tool another process serves, as its source loaded it for the run (``hango.agent.toolset``): the
    source (a part id naming it), the definition the model sees, and who answers a call of it."""

    @property
    def source(self) -> PartID: ...

    @property
    def definition(self) -> ToolDef: ...

    def answered_by(self) -> dict[str, str]:
        """What the run's tool events say of who answered a call."""
        ...

    def span_attributes(self) -> dict[str, str]:
        """What the tool call's span says of who answered it (its source's own attribute names)."""
        ...


@dataclass(frozen=True)
class Caller:
    """Who the run's model calls are billed to."""

    user_id: uuid.UUID | None
    api_key_id: uuid.UUID | None


@dataclass
class RunState:
    """Everything a run reads, loaded once in ``before_run``; middleware keep their slices here.

    It holds what the calls read, never what assembling one measured: that is the draft's
    ``report`` (``hango.agent.report``), one per call.
    """

    tenant_id: uuid.UUID
    session_id: uuid.UUID | None  # None only for an agent's side of a call (no session)
    agent: AgentConfig
    caller: Caller
    history: list[StoredMessage] = field(default_factory=list)
    stored_seq: int = 0  # the session's seq counter: the last seq it handed out (it never goes back)
    todos: list[dict[str, Any]] = field(default_factory=list)
    memory: dict[str, str] = field(default_factory=dict)
    skills: list[Skill] = field(default_factory=list)
    # the tools other processes serve (``hango.agent.toolset``), by the name the model calls
    served_tools: dict[str, ServedTool] = field(default_factory=dict)
    # by source (its part, as ``ServedTool.source``): the (tool, reason) of each tool it would serve that
    # hango never sends
    unavailable_tools: dict[PartID, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # the deferred tools ``tool_search`` revealed in the session, by the name the model calls: the seq of
    # the answer that revealed each (stored; a try's reveals stay in its state)
    revealed: dict[str, int] = field(default_factory=dict)
    summary: Summary | None = None
    unestimated: list[int] = field(default_factory=list)  # seqs loaded without a current stored estimate
    mode: Mode = RUN  # what the calls are for; what assembling one measured is its draft's ``report``
    compact_trigger: float = 0.8
    trace_content: bool = False
    overrides: Overrides = field(default_factory=Overrides)
    handles: RunHandles = NO_HANDLES  # the run's id, steps, deadline and compactor, given when it is made

    @property
    def run_id(self) -> uuid.UUID | None:
        return self.handles.run_id

    @property
    def steps(self) -> Steps:
        """Where the calls report their steps and obey a cancel (``NoSteps`` outside a queued run)."""
        return self.handles.steps

    @property
    def deadline(self) -> float | None:
        return self.handles.deadline

    @property
    def compactor(self) -> Compactor | None:
        return self.handles.compactor

    @property
    def last_seq(self) -> int:
        if self.history:
            return self.history[-1].seq
        return self.summary.through_seq if self.summary else 0

    @property
    def next_seq(self) -> int:
        """The seq the session's next message gets (a removed message's seq is never handed out again)."""
        return max(self.stored_seq, self.last_seq) + 1

    def time_left(self, default: float) -> float:
        """Seconds until the run's deadline (``default`` when it has none); never negative."""
        if self.deadline is None:
            return default
        return max(0.0, min(default, self.deadline - time.monotonic()))

    def check_deadline(self) -> None:
        """Raise 504 ``run_timeout`` once the run's deadline has passed (a no-op without one).

        The run loop calls it before each turn and the tools while they work, so a tool
        call ends within the run's deadline too.
        """
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise GatewayTimeout("the run passed HANGO_RUN_TIMEOUT", code="run_timeout")


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a model answer, on its way to an executor."""

    use: ToolUseBlock
