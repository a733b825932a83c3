"""A Streamable HTTP MCP server for the tests, built with the SDK's own ``MCPServer``, run as a process.

``python -m tests.fakes.mcp_http_server PORT TOKEN [EXTRA_TOOLS] [DESCRIPTION_CHARS] [SESSION_SECONDS]``: every
request must carry ``Authorization: Bearer TOKEN`` (else 401). Its tools are the faults a
server can have: ``echo`` answers, ``fail`` answers ``isError``, ``hang`` never answers,
``crash`` ends the process mid-call, ``huge`` answers 50 MB, and ``EXTRA_TOOLS`` more tools
(``tool_0``...) with descriptions of ``DESCRIPTION_CHARS`` characters. With ``SESSION_SECONDS``
it forgets a session that many seconds after its first request and answers it as the SDK answers
an unknown session (404, ``-32600 Session not found``), as servers that expire sessions do.
"""

from __future__ import annotations

import os
import sys
import time

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse

HUGE_BYTES = 50 * 1024 * 1024


def build(token: str, extra_tools: int, description_chars: int, session_seconds: float = 0):
    server = MCPServer("faults", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Answer with the text sent."""
        return f"echo: {text}"

    @server.tool()
    def fail() -> str:
        """Always fails, as a tool reports its own errors."""
        raise ToolError("the tool failed on purpose")

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return ""

    @server.tool()
    def crash() -> str:
        """Ends the server's process mid-call."""
        os._exit(3)

    @server.tool()
    def huge() -> str:
        """Answers 50 MB."""
        return "x" * HUGE_BYTES

    for n in range(extra_tools):
        server.add_tool(lambda: "ok", name=f"tool_{n}", description="d" * description_chars)

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(transport_security=security)
    first_seen: dict[bytes, float] = {}

    async def guarded(scope, receive, send):
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"authorization") != f"Bearer {token}".encode():
            await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
            return
        session = headers.get(b"mcp-session-id")
        if (
            session_seconds
            and session
            and time.monotonic() - first_seen.setdefault(session, time.monotonic()) > session_seconds
        ):
            gone = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}
            await JSONResponse(gone, status_code=404)(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def main(argv: list[str]) -> None:
    port, token = int(argv[0]), argv[1]
    extra = int(argv[2]) if len(argv) > 2 else 0
    chars = int(argv[3]) if len(argv) > 3 else 20
    session_seconds = float(argv[4]) if len(argv) > 4 else 0
    uvicorn.run(
        build(token, extra, chars, session_seconds),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
