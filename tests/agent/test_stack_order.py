"""The default stack's order is part of the product: it decides the system block order and what wraps what."""

from __future__ import annotations

from hango.agent.stack import build_chain

STACK = (
    "filesystem",
    "subagent",
    "skills",
    "memory",
    "todo",
    "mcp",
    "tool_search",
    "context_overrides",
    "summarization",
    "prompt_cache",
    "tool_allowlist",
)


def test_default_stack_order_is_pinned():
    assert build_chain().names == STACK


def test_tool_allowlist_is_last_so_nothing_can_add_a_tool_back():
    assert build_chain().names[-1] == "tool_allowlist"


def test_overrides_run_before_summarization_and_the_cache_slot():
    names = build_chain().names
    assert names.index("context_overrides") < names.index("summarization") < names.index("prompt_cache")


def test_the_search_comes_after_every_source_of_tools_it_may_defer():
    names = build_chain().names
    assert names.index("tool_search") > max(names.index(n) for n in ("filesystem", "subagent", "todo", "mcp"))
