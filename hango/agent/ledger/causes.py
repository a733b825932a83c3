"""Why a call stopped sharing the previous call's prefix: the first differing part and its cause.

Two calls are compared by their ledger parts (id and content hash). The first
part where they differ breaks the provider's cached prefix from there on; its
**cause** is read from the part's kind and the overrides in force:

- ``override_saved``: a part the overrides now exclude was left out;
- ``replaced_part``: a part whose text a replace override changed (or whose replacement was cleared);
- ``memory_file_edited``: a memory file was written, created or deleted;
- ``tool_list_changed``: a tool was added, removed or redefined;
- ``new_summary``: compaction folded messages into a (new) summary;
- ``new_messages``: the later call only adds messages after the earlier one's;
- ``source_changed``: any other source of a system block changed (the agent's prompt, skills, todos).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hango.agent.ledger.record import SentCall, SentPart, common_prefix
from hango.agent.overrides import REPLACE, Overrides
from hango.agent.parts import SUMMARY, PartID, seq_of

CAUSES = (
    "override_saved",
    "replaced_part",
    "memory_file_edited",
    "tool_list_changed",
    "new_summary",
    "new_messages",
    "source_changed",
)


_SOURCE_CAUSES = {"summary": "new_summary", "memory": "memory_file_edited", "tool": "tool_list_changed"}


@dataclass(frozen=True)
class Difference:
    """The first part where two calls differ, and why."""

    index: int
    part: PartID
    cause: str


def first_difference(earlier: SentCall, later: SentCall, overrides: Overrides) -> Difference | None:
    """Where ``later`` stops sharing ``earlier``'s prefix, or None when they send the same parts."""
    index = common_prefix(earlier.parts, later.parts)
    old = earlier.parts[index] if index < len(earlier.parts) else None
    new = later.parts[index] if index < len(later.parts) else None
    if old is None and new is None:
        return None
    if old is None:
        return Difference(index, new.part, _added(new.part, earlier.parts))
    if new is None or old.part not in {p.part for p in later.parts}:
        return Difference(index, old.part, _removed(old.part, later.parts, overrides))
    if new.part == old.part:
        return Difference(index, new.part, _edited(new.part, overrides))
    return Difference(index, new.part, _added(new.part, earlier.parts))


def _family(part: PartID) -> str:
    """``summary``, ``message``, ``tool``, ``memory`` or ``system``."""
    if part == SUMMARY:
        return "summary"
    if part == "system:memory" or part.startswith("system:memory:"):
        return "memory"  # the memory contributor's own block lists the files too
    return part.partition(":")[0]


def _edited(part: PartID, overrides: Overrides) -> str:
    """The cause of a part sent again with other content."""
    override = overrides.get(part)
    if override is not None and override.action == REPLACE:
        return "replaced_part"
    # A stored message never changes: only a replacement (saved or cleared) changes what is sent.
    family = _family(part)
    return "replaced_part" if family == "message" else _source_cause(family)


def _removed(part: PartID, later: Sequence[SentPart], overrides: Overrides) -> str:
    """The cause of a part the later call no longer sends."""
    if overrides.excludes(part):
        return "override_saved"
    family = _family(part)
    if family in ("message", "summary"):
        return "new_summary" if any(p.part == SUMMARY for p in later) else "override_saved"
    return _source_cause(family)


def _added(part: PartID, earlier: Sequence[SentPart]) -> str:
    """The cause of a part the earlier call did not send."""
    family = _family(part)
    if family == "message":
        newest = max((seq_of(p.part) for p in earlier if _family(p.part) == "message"), default=0)
        # A message older than the earlier call's newest was left out then: an override changed.
        return "new_messages" if seq_of(part) > newest else "override_saved"
    return _source_cause(family)


def _source_cause(family: str) -> str:
    """The cause of a change to a part of ``family`` that no override or new message explains."""
    return _SOURCE_CAUSES.get(family, "source_changed")
