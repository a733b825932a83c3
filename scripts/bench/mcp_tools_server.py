"""A stdio MCP server of generated tools for the MCP benchmark, built with the SDK's own ``MCPServer``.

``python -m scripts.bench.mcp_tools_server NAME COUNT``: ``COUNT`` tools ``<NAME>_0``... that each
take two arguments and describe themselves in about 60 words (about 80 tokens a definition, as the
benchmark sends it), and answer ``ok``.
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
    return " ".join(rng.choice(WORDS) for _ in range(22)).capitalize() + "."


def build(name: str, count: int) -> MCPServer:
    server = MCPServer(name, log_level="WARNING")
    rng = random.Random(name)
    for n in range(count):

        def tool(query: str, limit: int = 10) -> str:
            return "ok"

        server.add_tool(tool, name=f"{name}_{n}", description=description(rng))
    return server


if __name__ == "__main__":
    build(sys.argv[1], int(sys.argv[2])).run("stdio")
