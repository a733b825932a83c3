"""A stdio MCP server of generated tools for the MCP benchmark, built with the SDK's own ``MCPServer``.

``python -m scripts.bench.mcp_tools_server NAME COUNT``: ``COUNT`` tools ``<NAME>_0``... that each
take one argument and describe themselves in 10 words (about 84 tokens a definition, as the
benchmark sends it, schema included), and answer ``ok``.
"""

from __future__ import annotations

import random
import sys

from mcp.server.mcpserver import MCPServer

WORDS = (
    *("read", "write", "list", "the", "a", "repository", "branch", "commit", "file", "folder", "status"),
    *("change", "report", "summary", "issue", "ticket", "record", "entry", "value", "time", "zone", "date"),
    *("user", "team", "project", "search", "filter", "sort", "page", "limit", "cursor", "result"),
)


def description(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(10)).capitalize() + "."


def build(name: str, count: int) -> MCPServer:
    server = MCPServer(name, log_level="WARNING")
    rng = random.Random(name)
    for n in range(count):

        def tool(query: str) -> str:
            return "ok"

        server.add_tool(tool, name=f"{name}_{n}", description=description(rng))
    return server


if __name__ == "__main__":
    build(sys.argv[1], int(sys.argv[2])).run("stdio")
