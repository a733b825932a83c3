"""Prompt-cache breakpoints: on the last sent stable system block and on the last message, with
bridges between them where Anthropic's lookback would lose the message cache.

Every rule placement reads is a field of ``CacheRules`` (``hango/cache_rules.py``), Anthropic's
(``PLACEMENT``: the one provider that takes breakpoints). Tools and the stable system blocks form
the cached prefix. ``system:todo`` changes between turns, so it is the one volatile block
(``volatile_system``) and never carries a breakpoint. System overrides are applied before the
prompt-cache slot runs, so the breakpoint always lands on a block that is really sent.

A breakpoint finds a cached prefix only within ``lookback_blocks`` (20) blocks before it
(``hango/agent/ledger/verdict.py``, the one cache model). The last message's breakpoint alone
would lose the previous call's cache on a turn that adds more than 20 blocks (parallel tool
calls and their results), so when the messages after the system breakpoint hold more than 20
blocks, up to two **bridges** go on earlier messages: each on the earliest message that ends
at most 20 blocks before the breakpoint after it. A cached prefix up to 60 blocks back is
found that way. Never more than ``max_breakpoints`` (4, the provider's limit).
"""

from __future__ import annotations

from dataclasses import replace

from hango.agent.draft import Draft
from hango.agent.ledger.record import sent_blocks
from hango.agent.parts import SourcedBlock, SourcedMessage, system_part
from hango.cache_rules import CacheRules
from hango.providers import SPECS

PLACEMENT: CacheRules = SPECS["anthropic"].cache


def system_breakpoint(system: tuple[SourcedBlock, ...], rules: CacheRules = PLACEMENT) -> int | None:
    """The index of the last stable system block, or None when every block is volatile."""
    volatile = {system_part(name) for name in rules.volatile_system}
    stable = [i for i, block in enumerate(system) if block.part not in volatile]
    return stable[-1] if stable else None


def message_breakpoints(
    messages: tuple[SourcedMessage, ...], budget: int, rules: CacheRules = PLACEMENT
) -> frozenset[int]:
    """The indexes of the messages that carry a breakpoint: the last one, and up to ``budget - 1`` bridges.

    Blocks are counted from the first message (the system breakpoint sits right before it, or
    earlier). A bridge goes only on a message the provider sees end where it ends: one followed
    by a message of the other role (the adapters join consecutive messages of one role). Only the
    messages near the breakpoints are counted, walking back from the last: the cost follows the
    lookback, not the history's length.
    """
    if not messages or budget <= 0:
        return frozenset()
    blocks = _Blocks(messages)
    chosen = [len(messages) - 1]
    while len(chosen) < budget and blocks.more_through(chosen[-1], rules.lookback_blocks):
        bridge = _bridge(messages, blocks, chosen[-1], rules.lookback_blocks)
        if bridge is None or not blocks.more_through(bridge, 0):
            break
        chosen.append(bridge)
    return frozenset(chosen)


class _Blocks:
    """The sent blocks of each message, counted when first asked for."""

    def __init__(self, messages: tuple[SourcedMessage, ...]) -> None:
        self.messages = messages
        self.counted: dict[int, int] = {}

    def __getitem__(self, index: int) -> int:
        count = self.counted.get(index)
        if count is None:
            count = self.counted[index] = sent_blocks(self.messages[index].message)
        return count

    def more_through(self, index: int, limit: int) -> bool:
        """Whether the messages up to and including ``index`` hold more than ``limit`` blocks."""
        total = 0
        for i in range(index, -1, -1):
            total += self[i]
            if total > limit:
                return True
        return False


def _bridge(messages: tuple[SourcedMessage, ...], blocks: _Blocks, before: int, lookback: int) -> int | None:
    """The bridge for the breakpoint on ``messages[before]``: the earliest anchor (a message followed by
    one of the other role) that ends at most ``lookback`` blocks before it; with none that
    close (a single message longer than the lookback), the latest anchor before it, the best there is.
    """
    between, best = 0, None  # the blocks of messages[i + 1 : before + 1]
    for i in range(before - 1, -1, -1):
        between += blocks[i + 1]
        anchor = messages[i + 1].message.role != messages[i].message.role
        if between > lookback:
            if best is not None:
                return best
            if anchor:
                return i
        elif anchor:
            best = i
    return best


def with_breakpoints(draft: Draft, rules: CacheRules = PLACEMENT) -> Draft:
    """``draft`` with exactly the hango breakpoints set (any earlier marks cleared)."""
    at = system_breakpoint(draft.system, rules)
    system = tuple(
        replace(s, block=replace(s.block, cache_control=i == at)) for i, s in enumerate(draft.system)
    )
    marked = message_breakpoints(draft.messages, rules.max_breakpoints - (at is not None), rules)
    # Only messages whose mark changes are copied: the others keep their identity (and their estimate).
    messages = tuple(
        m
        if m.message.cache_control == (i in marked)
        else replace(m, message=replace(m.message, cache_control=i in marked))
        for i, m in enumerate(draft.messages)
    )
    return draft.with_(system=system, messages=messages)
