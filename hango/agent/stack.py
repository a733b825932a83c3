"""The default middleware stack, outermost first (an order test pins it)."""

from __future__ import annotations

from hango.agent.chain import Chain
from hango.agent.middleware.base import Middleware
from hango.agent.middleware.filesystem import FilesystemMiddleware
from hango.agent.middleware.mcp_tools import McpToolsMiddleware
from hango.agent.middleware.memory import MemoryMiddleware
from hango.agent.middleware.overrides import ContextOverridesMiddleware
from hango.agent.middleware.prompt_cache import PromptCacheMiddleware
from hango.agent.middleware.skills import SkillsMiddleware
from hango.agent.middleware.subagent import SubagentMiddleware
from hango.agent.middleware.summarization import SummarizationMiddleware
from hango.agent.middleware.todo import TodoMiddleware
from hango.agent.middleware.tool_allowlist import ToolAllowlistMiddleware
from hango.agent.middleware.tool_search import ToolSearchMiddleware


def default_stack() -> list[Middleware]:
    return [
        FilesystemMiddleware(),
        SubagentMiddleware(),
        SkillsMiddleware(),
        MemoryMiddleware(),
        TodoMiddleware(),
        McpToolsMiddleware(),
        ToolSearchMiddleware(),
        ContextOverridesMiddleware(),
        SummarizationMiddleware(),
        PromptCacheMiddleware(),
        ToolAllowlistMiddleware(),
    ]


def build_chain() -> Chain:
    """The chain every run, subagent, inspect and try assembles through."""
    return Chain(default_stack())
