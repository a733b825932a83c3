"""The ``memory`` contributor: loads the agent's memory files once per run, one block per file.

Bounds: a run reads at most ``MAX_MEMORY_FILES`` files (the first by path) and puts at most
``MAX_MEMORY_CHARS`` characters of them in the prompt. Files are taken in path order; the file
that crosses the budget is cut (and says so), and the files after it are left out. The agent
still reads every file whole through ``read_file /memories/...``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hango.agent.middleware.base import Switchable
from hango.agent.parts import SourcedBlock, memory_part, system_part
from hango.agent.state import AgentConfig, RunState
from hango.agent.tools.paths import MEMORIES
from hango.agent.toolset import Toolset
from hango.messages import Block

if TYPE_CHECKING:
    from hango.agent.deps import RunContext
    from hango.store import TenantStore

MAX_MEMORY_FILES = 50
MAX_MEMORY_CHARS = 256 * 1024
CUT_NOTE = "\n\n[cut here: the memory budget is spent; the file itself is kept whole]"

EMPTY = (
    f"Your memory is empty. Files you write under {MEMORIES}/ persist across sessions and become part "
    "of these instructions at the start of every run: keep there what you should remember (the user's "
    "preferences, facts about the work, lessons learned)."
)


def load_memory(store: TenantStore, state: RunState) -> dict[str, str]:
    """The agent's first ``MAX_MEMORY_FILES`` memory files by path, in one query, within the budget."""
    return bounded(store.memory_files.for_prompt(state.agent.id, MAX_MEMORY_FILES, MAX_MEMORY_CHARS))


def bounded(memory: dict[str, str]) -> dict[str, str]:
    """The files that fit the bounds, by path; the one that crosses the budget is cut with a note.

    Applying it twice changes nothing, so it runs again on ``state.memory`` after the agent writes.
    """
    budget, kept = MAX_MEMORY_CHARS, {}
    for path in sorted(memory)[:MAX_MEMORY_FILES]:
        if budget <= 0:
            break
        content = memory[path]
        kept[path] = content if len(content) <= budget else content[:budget] + CUT_NOTE
        budget -= len(content)
    return kept


class MemoryMiddleware(Switchable):
    """Enabled unless ``agent.settings["memory"]`` is False; reads through the run context's store."""

    name = "memory"

    def load(self, state: RunState, ctx: RunContext) -> None:
        state.memory = load_memory(ctx.store, state)

    def blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        memory = bounded(state.memory)
        if not memory:
            return [SourcedBlock(system_part(self.name), Block(EMPTY))]
        return [
            SourcedBlock(memory_part(path), Block(f"Memory file {path}:\n\n{content}"))
            for path, content in memory.items()
        ]
