"""Context overrides: exclude or replace parts of the outgoing request, never the stored history.

This module holds the override types and how a call applies them; the rules a
set must pass to be saved or tried (screening, pair closure) are the
inspector's (``hango/inspector/override_rules.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from hango.agent.parts import (
    PartID,
    SourcedBlock,
    SourcedMessage,
    covering_parts,
    is_server_part,
)
from hango.messages import Block, Message, TextBlock

EXCLUDE, REPLACE = "exclude", "replace"


@dataclass(frozen=True)
class Override:
    part: PartID
    action: str
    replacement: str | None = None
    paired_from: PartID | None = None


@dataclass(frozen=True)
class Overrides:
    """The overrides one model call sees: the agent's (system, tools) and the session's (messages, summary)."""

    agent: dict[PartID, Override] = field(default_factory=dict)
    session: dict[PartID, Override] = field(default_factory=dict)

    @classmethod
    def of(cls, agent: Iterable[Override], session: Iterable[Override]) -> Overrides:
        return cls({o.part: o for o in agent}, {o.part: o for o in session})

    def __len__(self) -> int:
        return len(self.agent) + len(self.session)

    def get(self, part: PartID) -> Override | None:
        return self.agent.get(part) or self.session.get(part)

    def excludes(self, part: PartID) -> bool:
        """True when an override drops ``part`` from the request (a replace keeps it)."""
        override = self.get(part)
        return override is not None and override.action == EXCLUDE

    def excluded_tools(self) -> frozenset[PartID]:
        """The parts of the tools excluded one by one; a whole server's exclusion is ``excluded_servers``."""
        return frozenset(p for p in self.agent if p.startswith("tool:") and not is_server_part(p))

    def excluded_servers(self) -> frozenset[str]:
        """The MCP servers excluded as a whole (``tool:<server>/*``): every tool they list is left out."""
        return frozenset(p.removeprefix("tool:").partition("/")[0] for p in self.agent if is_server_part(p))

    def excludes_tool(self, part: PartID) -> bool:
        """Whether an override leaves out the tool of ``part``: its own, or its server's."""
        return any(self.excludes(covering) for covering in covering_parts(part))

    def agent_only(self) -> Overrides:
        """What a subagent sees: its history is its own, so no session overrides."""
        return Overrides(self.agent, {})


def apply_system(blocks: Sequence[SourcedBlock], overrides: Overrides) -> list[SourcedBlock]:
    """Drop excluded system blocks and swap the text of replaced ones."""
    out = []
    for sourced in blocks:
        override = overrides.agent.get(sourced.part)
        if override is None:
            out.append(sourced)
        elif override.action == REPLACE:
            out.append(replace(sourced, block=Block(override.replacement)))
    return out


def apply_messages(
    messages: Sequence[SourcedMessage], overrides: dict[PartID, Override]
) -> list[SourcedMessage]:
    """Drop excluded messages; a replace swaps a message's text blocks, its tool blocks stay."""
    out = []
    for sourced in messages:
        override = overrides.get(sourced.part)
        if override is None:
            out.append(sourced)
        elif override.action == REPLACE:
            out.append(replace(sourced, message=replaced_text(sourced.message, override.replacement)))
    return out


def replaced_text(message: Message, text: str) -> Message:
    """``message`` with its text blocks replaced by one block holding ``text`` (where the first one was)."""
    content, placed = [], False
    for block in message.content:
        if not isinstance(block, TextBlock):
            content.append(block)
        elif not placed:
            content.append(TextBlock(text))
            placed = True
    return replace(message, content=tuple(content))
