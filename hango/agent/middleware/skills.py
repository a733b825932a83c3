"""The ``skills`` contributor: loads the agent's skills once per run and lists them in one block."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hango.agent.middleware.base import Switchable
from hango.agent.parts import SourcedBlock, system_part
from hango.agent.state import AgentConfig, RunState, Skill
from hango.agent.tools.paths import skill_file
from hango.agent.toolset import Toolset
from hango.messages import Block

if TYPE_CHECKING:
    from hango.agent.deps import RunContext
    from hango.store import TenantStore

# The most skills a run loads (by name): the index and the tool-list widening see no more.
MAX_SKILLS = 100

HEADER = "Skills are instructions for particular tasks."
READ_HINT = (
    " When a skill's description fits what you are asked to do, read its full instructions with read_file "
    f"{skill_file('<name>')} before you start."
)


def load_skills(store: TenantStore, state: RunState) -> list[Skill]:
    """The agent's first ``MAX_SKILLS`` skills by name, in one query."""
    return [
        Skill(row.name, row.description, row.body, tuple(row.allowed_tools))
        for row in store.skills.for_run(state.agent.id, MAX_SKILLS)
    ]


def skills_index(loaded: list[Skill], sent: frozenset[str]) -> str:
    """The block's text: how to read a skill (when ``read_file`` is sent), then one line per skill."""
    header = HEADER + (READ_HINT if "read_file" in sent else "") + "\n\n"
    if not loaded:
        return header + "No skills yet."
    lines = (f"- {skill.name}: {skill.description or '(no description)'}" for skill in loaded)
    return header + "Available skills:\n" + "\n".join(lines)


class SkillsMiddleware(Switchable):
    """Enabled unless ``agent.settings["skills"]`` is False; reads through the run context's store."""

    name = "skills"

    def load(self, state: RunState, ctx: RunContext) -> None:
        state.skills = load_skills(ctx.store, state)

    def blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        text = skills_index(state.skills, tools.sent)
        return [SourcedBlock(system_part(self.name), Block(text))]
