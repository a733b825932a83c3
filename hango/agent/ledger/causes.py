"""Why a call stopped sharing the previous call's prefix: the first differing part and its cause.

Two calls are compared by their ledger parts (id and content hash). The first
part where they differ breaks the provider's cached prefix from there on. Its
**cause** is what was recorded between the two calls (``hango.store.recorded_changes``:
audit rows, stored summaries, memory file writes, runs that ended, their steps,
and the two calls' own ledger rows), never a guess from the part's kind:

- the newest recorded change that touched the part names the cause, matched as overrides match
  (``covering_parts``: a server's ``tool:<server>/*`` covers each of its tools), and in either
  direction (a diff from the newer call to the older one sees an exclusion as an addition);
- else a message only the newer call sends, newer than every message of the
  older one, is ``new_messages`` (seqs only grow);
- else, when either call was a try, the try's own overrides and messages are
  the difference (``try_call``); a scratch part (``scratch:<try>:<seq>``) is one always;
- else ``unknown``.

``CAUSES`` is the one table of cause words and their plain words: the API's
schema, the CLI and the panel all show these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hango.agent.ledger.record import SentCall, SentPart, common_prefix
from hango.agent.parts import (
    SUMMARY,
    PartID,
    covering_parts,
    is_scratch,
    message_seq,
    system_part,
    tool_server,
)
from hango.agent.state import TRY_PURPOSE  # a try's calls, one-call and whole-turn alike

# Every cause, with the words the panel and the CLI show (``hango.inspector.verdict_words``).
CAUSES: dict[str, str] = {
    "override_saved": "an override was saved",
    "replaced_part": "a part's text was replaced",
    "memory_file_edited": "a memory file was edited",
    "skill_edited": "a skill was created, edited or deleted",
    "prompt_edited": "the agent's prompt was edited",
    "tool_list_changed": "the agent's tools were edited",
    "server_tools_changed": "an MCP server's stored tool list changed",
    "agent_edited": "the agent's settings were edited",
    "todos_changed": "the todo list changed",
    "tools_revealed": "tool_search revealed a deferred tool",
    "new_summary": "compaction wrote a new summary",
    "rollback": "a cancelled or failed run's turn was rolled back",
    "new_messages": "new messages were added",
    "try_call": "a try's own overrides or messages",
    "unknown": "nothing recorded explains it",
}
PROMPT, SKILLS, TODO, MEMORY = (
    system_part("agent"),
    system_part("skills"),
    system_part("todo"),
    "system:memory",
)


# How a part differs between the two calls: the earlier call sent it and the later does not, the other
# way round, or both sent it with other content.
REMOVED, ADDED, EDITED = "removed", "added", "edited"
_UNDONE = {REMOVED: ADDED, ADDED: REMOVED}  # what a diff from the newer call to the older one sees


@dataclass(frozen=True)
class Change:
    """One recorded change and the parts it touched: listed ``parts``, whole ``families``, the tools of
    MCP ``servers``, or messages ``through`` a seq (a summary covers them) or ``after`` one (a rollback
    drops them). ``effect``, when set, is the one way it changes them (an exclusion only removes a part)."""

    cause: str
    parts: frozenset[PartID] = frozenset()
    families: frozenset[str] = frozenset()
    servers: frozenset[str] = frozenset()
    through: int | None = None
    after: int | None = None
    effect: str | None = None

    def explains(self, part: PartID, effect: str) -> bool:
        """Whether this change made ``part`` differ as ``effect`` says."""
        if self.effect is not None and effect != self.effect:
            return False
        if any(target in self.parts for target in covering_parts(part)) or _family(part) in self.families:
            return True
        if self.servers and _family(part) == "tool" and tool_server(part) in self.servers:
            return True
        seq = message_seq(part)
        if self.through is not None and (part == SUMMARY or (seq is not None and seq <= self.through)):
            return True
        return self.after is not None and seq is not None and seq > self.after


@dataclass(frozen=True)
class Facts:
    """What was recorded between two calls, oldest first, whether either call was a try, and whether the
    diff runs ``backward`` (its first call is the newer one: what a change removed, the diff adds)."""

    changes: tuple[Change, ...] = ()
    tried: bool = False
    backward: bool = False

    def cause_of(self, part: PartID, effect: str) -> str | None:
        """The newest recorded change's cause for ``part`` (None: no recorded change explains it)."""
        happened = _UNDONE.get(effect, effect) if self.backward else effect
        return next((c.cause for c in reversed(self.changes) if c.explains(part, happened)), None)


NOTHING = Facts()


def facts_of(rows: Iterable[Any], later_try: bool = False, first: str | None = None) -> Facts:
    """The facts in ``hango.store.recorded_changes`` rows (``at, what, detail, seq``), oldest first; ``later_try``:
    the later call, not in the ledger yet, is a try; ``first``: the id of the diff's first call (the
    diff runs backward when the other call is the older one)."""
    changes, tried, oldest = [], later_try, None
    for row in rows:
        if row.what == "call":
            tried |= row.detail["purpose"] == TRY_PURPOSE
            if first is not None and oldest is None:
                oldest = row.detail["id"]
        else:
            changes.extend(_changes(row.what, row.detail, row.seq))
    return Facts(tuple(changes), tried, backward=oldest not in (None, first))


def _changes(what: str, detail: dict[str, Any], seq: int | None) -> list[Change]:
    if what == "context.override":
        saved = [_override_change(o["part"], o["action"], True) for o in detail.get("parts", [])]
        return saved + [_override_change(o["part"], o["action"], False) for o in detail.get("cleared", [])]
    if what in ("memory.write", "memory.delete"):
        # the file's block, and the memory index that lists it
        return [Change("memory_file_edited", frozenset({f"{MEMORY}:{detail['path']}", MEMORY}))]
    if what.startswith("skill."):
        return [Change("skill_edited", frozenset({SKILLS}))]
    if what == "agent.update":
        return [_agent_change(name) for name in detail.get("fields", [])]
    if what == "compaction":
        return [Change("new_summary", through=seq)]
    if what == "rollback":
        return [Change("rollback", after=seq)]
    if what == "todos":
        return [Change("todos_changed", frozenset({TODO}))]
    if what == "reveal":  # sent from the next call on, after the tools sent from the start
        return [Change("tools_revealed", frozenset({detail["part"]}), effect=ADDED)]
    if what in SERVER_ACTIONS:
        return [_server_change(detail)]
    return []


# The audit actions that change an MCP server's tools in the agent's calls: attached to the agent (or
# its tools chosen again), detached from it, or its stored list read again (by a refresh or by an
# attach to any agent) with a new hash (``detail.tools_changed``).
SERVER_ACTIONS = ("agent.mcp_attach", "agent.mcp_detach", "mcp_server.refresh")


def _server_change(detail: dict[str, Any]) -> Change:
    """What an MCP server's audit row touched: the tools of the server it names."""
    cause = "server_tools_changed" if detail.get("tools_changed") else "tool_list_changed"
    return Change(cause, servers=frozenset({detail["name"]}))


def _override_change(part: PartID, action: str, saved: bool) -> Change:
    """An override of ``part`` saved (or, not ``saved``, cleared): an exclusion removes the part (its
    clearing brings it back), a replacement edits it either way."""
    if action == "replace":
        return Change("replaced_part", frozenset({part}), effect=EDITED)
    return Change("override_saved", frozenset({part}), effect=REMOVED if saved else ADDED)


def _agent_change(name: str) -> Change:
    """What editing the agent's field ``name`` touched."""
    if name == "system_prompt":
        return Change("prompt_edited", frozenset({PROMPT}))
    if name in ("tools", "defer"):  # the tools sent, and the instructions of the middleware that bring them
        return Change("tool_list_changed", families=frozenset({"tool", "system"}))
    return Change("agent_edited", families=frozenset({"tool", "system", "memory"}))


@dataclass(frozen=True)
class Difference:
    """The first part where two calls differ, and why."""

    index: int
    part: PartID
    cause: str


def first_difference(earlier: SentCall, later: SentCall, facts: Facts) -> Difference | None:
    """Where ``later`` stops sharing ``earlier``'s prefix, or None when they send the same parts."""
    index = common_prefix(earlier.parts, later.parts)
    old = earlier.parts[index] if index < len(earlier.parts) else None
    new = later.parts[index] if index < len(later.parts) else None
    if old is None and new is None:
        return None
    if old is None:
        return Difference(index, new.part, _cause(new.part, ADDED, facts, earlier.parts))
    if new is None or old.part not in {p.part for p in later.parts}:
        return Difference(index, old.part, _cause(old.part, REMOVED, facts, later.parts))
    if new.part == old.part:
        return Difference(index, new.part, _cause(new.part, EDITED, facts))
    return Difference(index, new.part, _cause(new.part, ADDED, facts, earlier.parts))


def _cause(part: PartID, effect: str, facts: Facts, other: Sequence[SentPart] = ()) -> str:
    """What the facts say made ``part`` differ as ``effect`` says (``other``: the parts of the call that
    does not send it)."""
    if is_scratch(part):
        return "try_call"
    recorded = facts.cause_of(part, effect)
    if recorded is not None:
        return recorded
    if effect == (REMOVED if facts.backward else ADDED) and _newest_message(part, other):
        return "new_messages"
    return "try_call" if facts.tried else "unknown"


def _newest_message(part: PartID, older: Sequence[SentPart]) -> bool:
    """Whether ``part`` is a stored message newer than every message the older call sent."""
    seq = message_seq(part)
    if seq is None:
        return False
    return seq > max((message_seq(p.part) or 0 for p in older), default=0)


def _family(part: PartID) -> str:
    """``summary``, ``message``, ``scratch``, ``tool``, ``memory`` or ``system``."""
    if part == SUMMARY:
        return "summary"
    if part == MEMORY or part.startswith(f"{MEMORY}:"):
        return "memory"  # the memory contributor's own block lists the files too
    return part.partition(":")[0]
