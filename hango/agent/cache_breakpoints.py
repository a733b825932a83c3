"""Prompt-cache breakpoints: on the last sent stable system block and on the last message.

Tools and the stable system blocks form the cached prefix. ``system:todo``
changes between turns, so it is the one volatile block and never carries a
breakpoint. System overrides are applied before the prompt-cache slot runs, so
the breakpoint always lands on a block that is really sent. Never more than 4.
"""

from __future__ import annotations

from dataclasses import replace

from hango.agent.draft import Draft
from hango.agent.parts import SourcedBlock, system_part

VOLATILE = frozenset({system_part("todo")})
MAX_BREAKPOINTS = 4


def system_breakpoint(system: tuple[SourcedBlock, ...]) -> int | None:
    """The index of the last stable system block, or None when every block is volatile."""
    stable = [i for i, block in enumerate(system) if block.part not in VOLATILE]
    return stable[-1] if stable else None


def with_breakpoints(draft: Draft) -> Draft:
    """``draft`` with exactly the hango breakpoints set (any earlier marks cleared)."""
    at = system_breakpoint(draft.system)
    system = tuple(
        replace(s, block=replace(s.block, cache_control=i == at)) for i, s in enumerate(draft.system)
    )
    last = len(draft.messages) - 1
    # Only messages whose mark changes are copied: the others keep their identity (and their estimate).
    messages = tuple(
        m
        if m.message.cache_control == (i == last)
        else replace(m, message=replace(m.message, cache_control=i == last))
        for i, m in enumerate(draft.messages)
    )
    return draft.with_(system=system, messages=messages)
