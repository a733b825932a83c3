"""What assembling one call measured: a frozen report the slots hand inward with the draft.

A slot that leaves parts out of the call, finds it past the compaction trigger or
compacts it says so on the draft it passes on (``Draft.report``), so the draft a
capture handler or the gateway receives carries its own call's report. An inspect,
a try and a run each read the report of the call they assembled
(``hango.agent.assembly.capture``); no figure outlives its call on a shared state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hango.agent.parts import PartID

OVERRIDDEN = "excluded by an override"
DEFERRED = "deferred until tool_search reveals it"
SUMMARIZED = "summarized by a compaction"


@dataclass(frozen=True)
class LeftOut:
    """Parts one slot (``by``, its name; ``chain`` for the system blocks) left out of the call, and why."""

    by: str
    why: str
    parts: tuple[PartID, ...]
    tokens: int  # their estimate


@dataclass(frozen=True)
class Unoverridden:
    """A call's parts before its overrides, each kept by the slot that applies them: the system blocks as
    contributed with no override (``Chain.draft``), the history (the overrides slot) and the enabled tools
    (the allowlist slot). An inspect reads a left-out part's content here instead of capturing twice."""

    system: tuple[Any, ...] | None = None  # ``SourcedBlock``s (None: as sent)
    tools: tuple[Any, ...] | None = None  # ``ToolDef``s
    messages: tuple[Any, ...] | None = None  # ``SourcedMessage``s


@dataclass(frozen=True)
class Report:
    """What the slots did to one call on its way in: what each left out and why, whether it would compact,
    and the compaction it made."""

    left_out: tuple[LeftOut, ...] = ()
    would_compact: bool = False  # past the trigger, with no compaction (an inspect, or no compactor)
    compacted: Any = None  # the ``hango.agent.compaction.Compaction`` the summarization slot made
    # the call's ``hango.agent.toolset.Toolset``: each tool's part, source and state (sent, or left out by
    # which override)
    toolset: Any = field(default=None, compare=False, repr=False)
    # system blocks a contributor did not send because an override left out every tool they speak of:
    # the block's part and the part of the first such tool whose return brings the block back
    dropped_with: tuple[tuple[PartID, PartID], ...] = field(default=(), compare=False)
    # the call before its overrides, kept by the slots that apply them (``Unoverridden``); None when the
    # call has none, so it is the call itself
    unoverridden: Unoverridden | None = field(default=None, compare=False, repr=False)
    # the definitions of the deferred tools not revealed (the allowlist slot): the inspector shows them
    deferred: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    @property
    def excluded_tokens(self) -> int:
        """The estimated tokens the overrides left out: system blocks, tools and messages."""
        return sum(entry.tokens for entry in self.left_out if entry.why == OVERRIDDEN)

    def leaving_out(self, entry: LeftOut) -> Report:
        """This report with ``entry`` added (unchanged when it names no part)."""
        return replace(self, left_out=(*self.left_out, entry)) if entry.parts else self

    def keeping(self, **before: Any) -> Report:
        """This report keeping what one overriding slot received (``system``, ``tools`` or ``messages``)."""
        return replace(self, unoverridden=replace(self.unoverridden or Unoverridden(), **before))

    def past_trigger(self) -> Report:
        return replace(self, would_compact=True)

    def compacting(self, plan: Any, entry: LeftOut) -> Report:
        """This report with the compaction ``plan`` made and the messages it summarized (``entry``)."""
        return replace(self.leaving_out(entry), compacted=plan)


NOTHING = Report()
