"""What an agent can be configured with: the built-in tools and the model providers."""

from __future__ import annotations

BUILTIN_TOOLS: tuple[str, ...] = (
    "ls",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "task",
    "write_todos",
)

PROVIDERS: tuple[str, ...] = ("anthropic", "openai", "offline")

DEFAULT_MODEL = "offline/echo"
DEFAULT_CONTEXT_WINDOW = 200_000
MAX_CONTEXT_WINDOW = 10_000_000
