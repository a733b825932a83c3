"""The ``filesystem`` contributor: the six filesystem tools and the block that explains them."""

from __future__ import annotations

from hango.agent.middleware.base import Middleware
from hango.agent.parts import SourcedBlock, system_part
from hango.agent.state import AgentConfig, RunState
from hango.agent.tools.base import Tool
from hango.agent.tools.filesystem import FILESYSTEM_TOOLS, filesystem_tools
from hango.agent.tools.paths import MEMORIES, SKILL_FILE, SKILLS
from hango.agent.toolset import Toolset
from hango.messages import Block


def instructions(sent: frozenset[str]) -> str:
    """The block's text, naming only the filesystem tools the request carries (``sent``)."""
    names = [t for t in FILESYSTEM_TOOLS if t in sent]
    tools = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    editor = next((t for t in ("edit_file", "write_file") if t in sent), None)
    update = f", and update them with {editor} when you learn something worth remembering" if editor else ""
    return (
        f"You have a virtual filesystem with the {'tool' if len(names) == 1 else 'tools'} {tools}. "
        "Paths are absolute (they start with /). Files you write belong to this session, except:\n"
        f"- {MEMORIES}/ is your memory: its files persist across sessions and each one is part of your "
        f"instructions at the start of every run. Keep them short{update}.\n"
        f"- {SKILLS}/<name>/{SKILL_FILE} holds the full instructions of a skill (read-only)."
    )


INSTRUCTIONS = instructions(frozenset(FILESYSTEM_TOOLS))


class FilesystemMiddleware(Middleware):
    """Always provides the tools (the allowlist filters them); emits its block when the request carries one."""

    name = "filesystem"
    speaks_of = frozenset(FILESYSTEM_TOOLS)

    def system_blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        sent = tools.sent
        if not sent & self.speaks_of:
            return []
        return [SourcedBlock(system_part(self.name), Block(instructions(sent)))]

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        return filesystem_tools()
