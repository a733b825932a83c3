"""What an agent can be configured with: the built-in tools and the model providers.

Both lists come from their registries (the tool definitions and the provider
factories), so adding a tool or a provider needs no copy here.
"""

from __future__ import annotations

from hango.agent.middleware.subagent import TASK
from hango.agent.tools.base import PathUse
from hango.agent.tools.filesystem import FILESYSTEM_TOOLS, filesystem_tools
from hango.agent.tools.todos import WRITE_TODOS
from hango.providers import PROVIDERS

BUILTIN_TOOLS: tuple[str, ...] = (*FILESYSTEM_TOOLS, TASK.name, WRITE_TODOS.name)
# What each built-in file tool does with its path: the stale-result suggestions read this, not tool names.
TOOL_PATHS: dict[str, PathUse] = {tool.name: tool.paths for tool in filesystem_tools() if tool.paths}

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MODEL",
    "MAX_CONTEXT_WINDOW",
    "PROVIDERS",
    "TOOL_PATHS",
]

DEFAULT_MODEL = "offline/echo"
DEFAULT_CONTEXT_WINDOW = 200_000
MAX_CONTEXT_WINDOW = 10_000_000
