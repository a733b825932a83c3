"""The ``filesystem`` contributor: the six filesystem tools and the block that explains them."""

from __future__ import annotations

from hango.agent.middleware.base import Middleware
from hango.agent.parts import SourcedBlock, system_part
from hango.agent.state import AgentConfig, RunState
from hango.agent.tools.base import Tool
from hango.agent.tools.filesystem import FILESYSTEM_TOOLS, filesystem_tools
from hango.agent.tools.paths import MEMORIES, SKILL_FILE, SKILLS
from hango.messages import Block

INSTRUCTIONS = (
    "You have a virtual filesystem with the tools ls, read_file, write_file, edit_file, glob and grep. "
    "Paths are absolute (they start with /). Files you write belong to this session, except:\n"
    f"- {MEMORIES}/ is your memory: its files persist across sessions and each one is part of your "
    "instructions at the start of every run. Keep them short, and update them with edit_file when you "
    "learn something worth remembering.\n"
    f"- {SKILLS}/<name>/{SKILL_FILE} holds the full instructions of a skill (read-only)."
)


class FilesystemMiddleware(Middleware):
    """Always provides the tools (the allowlist filters them); emits its block when one is enabled."""

    name = "filesystem"

    def system_blocks(self, agent: AgentConfig, state: RunState) -> list[SourcedBlock]:
        if not set(FILESYSTEM_TOOLS) & set(agent.tools):
            return []
        return [SourcedBlock(system_part(self.name), Block(INSTRUCTIONS))]

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        return filesystem_tools()
