"""The built-in tools: filesystem, memory and skills paths, todos, subagents."""
