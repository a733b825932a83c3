"""The ``skills`` contributor: loads the agent's skills once per run and lists them in one block."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hango.agent.middleware.base import Middleware
from hango.agent.parts import SourcedBlock, system_part
from hango.agent.state import AgentConfig, RunState, Skill
from hango.agent.tools.paths import skill_file
from hango.messages import Block

if TYPE_CHECKING:
    from hango.agent.deps import RunContext
    from hango.store import TenantStore

# The most skills a run loads (by name): the index and the tool-list widening see no more.
MAX_SKILLS = 100

HEADER = (
    "Skills are instructions for particular tasks. When a skill's description fits your task, read its "
    f"full instructions with read_file {skill_file('<name>')} before you start.\n\n"
)


def load_skills(store: TenantStore, state: RunState) -> list[Skill]:
    """The agent's first ``MAX_SKILLS`` skills by name, in one query."""
    return [
        Skill(row.name, row.description, row.body, tuple(row.allowed_tools))
        for row in store.skills.for_run(state.agent.id, MAX_SKILLS)
    ]


def skills_index(loaded: list[Skill]) -> str:
    """The block's text: how to read a skill, then one line per skill (or a note that there are none)."""
    if not loaded:
        return HEADER + "No skills yet."
    lines = (f"- {skill.name}: {skill.description or '(no description)'}" for skill in loaded)
    return HEADER + "Available skills:\n" + "\n".join(lines)


class SkillsMiddleware(Middleware):
    """Enabled unless ``agent.settings["skills"]`` is False; a disabled one loads nothing.

    ``before_run`` reads through the run context's ``TenantStore``.
    """

    name = "skills"

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        if state.agent.settings.get(self.name) is not False:
            state.skills = load_skills(ctx.store, state)

    def system_blocks(self, agent: AgentConfig, state: RunState) -> list[SourcedBlock]:
        if agent.settings.get(self.name) is False:
            return []
        return [SourcedBlock(system_part(self.name), Block(skills_index(state.skills)))]
