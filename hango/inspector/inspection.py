"""Inspection: a session's next model call before its overrides ("draft") and after them ("captured").

The call is captured once through the real chain on the state ``prepare_session``
builds, so what the inspector shows is what the next run sends; the call before
its overrides is read from the same capture's report.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hango.agent.assembly import capture, prepare_session
from hango.agent.chain import Chain
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.ledger.record import SentCall, sent_call
from hango.agent.parts import PartID
from hango.agent.state import INSPECT, Caller, RunState
from hango.store import TenantStore


@dataclass(frozen=True)
class Assembly:
    """The next call before overrides (``draft``) and after them (``captured``), both through the chain."""

    chain: Chain
    state: RunState
    draft: Draft
    captured: Draft

    @cached_property
    def sent(self) -> SentCall:
        """The ledger's view of the captured call (its parts' hashes and estimates), built once per request:
        the verdict, the next call's cost and every part's cache price read it."""
        return sent_call(self.captured)


def assemble(chain: Chain, state: RunState) -> Assembly:
    """The call with ``state.overrides`` and without them, from one capture: the slots that apply the
    overrides keep what they received on the call's report (``Draft.unoverridden``)."""
    captured = capture(chain, state)
    return Assembly(chain, state, captured.unoverridden(), captured)


def inspect_session(deps: Deps, store: TenantStore, session: Any, caller: Caller) -> Assembly:
    """The assembly of ``session``'s next model call with its stored overrides."""
    prepared = prepare_session(deps, store, session, caller, INSPECT)
    return assemble(prepared.chain, prepared.state)


def parts_of(draft: Draft) -> list[PartID]:
    """Every part id a draft holds: its system blocks, tools, the sources serving its tools (each MCP
    server's ``tool:<server>/*``, every tool of one) and messages, as the call's toolset names them."""
    tools = draft.report.toolset
    names = [t.name for t in draft.every_tool]
    return [
        *(s.part for s in draft.system),
        *(tools.part(name) for name in names),
        *tools.served_sources(names),
        *(m.part for m in draft.messages),
    ]
