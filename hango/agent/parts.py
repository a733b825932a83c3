"""Part ids: the stable names of the pieces of an assembled request.

- ``system:<contributor>`` for a contributor's block (``system:agent``,
  ``system:filesystem``, ``system:memory:/memories/AGENTS.md`` …);
- ``tool:<name>`` for one tool definition;
- ``message:<seq>`` for one stored message, ``summary`` for the compaction summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hango.messages import Block, Message

PartID = str

SUMMARY = "summary"
# The summarizer's one message: a transcript of the messages it folds (a ledger part, never overridden).
TRANSCRIPT = "transcript"
PREVIEW_CHARS = 200
_CONTRIBUTOR = re.compile(r"^[a-z][a-z_]*$")
_TOOL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MEMORY_PATH = re.compile(r"^/memories/[^\x00-\x1f]{1,490}$")


class MalformedPart(ValueError):
    """A part id that no part could ever have."""


@dataclass(frozen=True)
class SourcedBlock:
    """A system block with the part id of its contributor; never serialized to a provider."""

    part: PartID
    block: Block


@dataclass(frozen=True)
class SourcedMessage:
    """A history message with its part id (``message:<seq>`` or ``summary``)."""

    part: PartID
    message: Message


def system_part(contributor: str) -> PartID:
    return f"system:{contributor}"


def memory_part(path: str) -> PartID:
    return f"system:memory:{path}"


def tool_part(name: str) -> PartID:
    return f"tool:{name}"


def message_part(seq: int) -> PartID:
    return f"message:{seq}"


def kind_of(part: PartID) -> str:
    """``system``, ``tool``, ``message`` or ``summary``; raises ``MalformedPart`` for anything else."""
    if part == SUMMARY:
        return "summary"
    kind, sep, rest = part.partition(":")
    if not sep or not _valid(kind, rest):
        raise MalformedPart(part)
    return kind


def _valid(kind: str, rest: str) -> bool:
    if kind == "message":
        return rest.isascii() and rest.isdigit() and rest == str(int(rest)) and 0 < int(rest) < 2**31
    if kind == "tool":
        return bool(_TOOL.match(rest))
    if kind != "system":
        return False
    if rest.startswith("memory:"):
        path = rest.removeprefix("memory:")
        return bool(_MEMORY_PATH.match(path)) and ".." not in path.split("/") and "//" not in path
    return bool(_CONTRIBUTOR.match(rest))


def seq_of(part: PartID) -> int:
    """The sequence number of a ``message:<seq>`` part."""
    return int(part.removeprefix("message:"))


def preview(text: str) -> str:
    """The first 200 characters (code points, so never a cut inside a character)."""
    return text[:PREVIEW_CHARS]
