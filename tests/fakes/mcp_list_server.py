"""A Streamable HTTP MCP server whose tool listing the test shapes, built on the SDK's low-level ``Server``.

``python -m tests.fakes.mcp_list_server PORT SPEC`` where SPEC is JSON:
``{"names": [...], "per_page": 2, "delay": 0, "description_chars": 20, "task_required": [...]}``.
``names`` are the tools (``tool_<n>`` for ``"count": n`` instead); each ``tools/list`` page holds
``per_page`` of them, with a cursor while tools remain, and answers after ``delay`` seconds. A tool in
``task_required`` says ``execution.taskSupport: "required"``. ``tools/call`` answers
``called <name>``. ``GET /seen`` answers how many MCP requests arrived (and is not one).
"""

from __future__ import annotations

import json
import sys

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse


def build(spec: dict):
    names = spec.get("names") or [f"tool_{n}" for n in range(spec.get("count", 0))]
    per_page, delay = spec.get("per_page", 1000), spec.get("delay", 0)
    description = "d" * spec.get("description_chars", 20)
    required = set(spec.get("task_required", []))
    seen = {"requests": 0}

    def tool(name: str) -> types.Tool:
        execution = types.ToolExecution(task_support="required") if name in required else None
        schema = {"type": "object", "properties": {}}
        return types.Tool(name=name, description=description, input_schema=schema, execution=execution)

    async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        await anyio.sleep(delay)
        start = int(params.cursor) if params and params.cursor else 0
        page = names[start : start + per_page]
        more = start + per_page < len(names)
        return types.ListToolsResult(
            tools=[tool(name) for name in page], next_cursor=str(start + per_page) if more else None
        )

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])

    server = Server("lists", on_list_tools=list_tools, on_call_tool=call_tool)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(transport_security=security)

    async def counted(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/seen":
            await JSONResponse(seen)(scope, receive, send)
            return
        if scope["type"] == "http":
            seen["requests"] += 1
        await app(scope, receive, send)

    return counted


def main(argv: list[str]) -> None:
    port, spec = int(argv[0]), json.loads(argv[1])
    uvicorn.run(build(spec), host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main(sys.argv[1:])
