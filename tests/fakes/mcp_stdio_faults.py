"""A stdio MCP server with one fault, for the tests: ``python tests/fakes/mcp_stdio_faults.py FAULT``.

It speaks JSON-RPC 2.0 one line at a time, as the SDK's stdio transport does, with
the standard library only (an operator catalog starts it with a bare environment).
Its tools: ``whoami`` answers the process id (so a test sees a process reused or
started again) and ``fault`` does what FAULT names: ``hang`` never answers, ``exit``
ends the process mid-call, ``huge`` answers 50 MB, ``garbage`` answers a line that
is not JSON-RPC, ``error`` answers an ``isError`` result, ``long`` answers 300,000 characters
(under the answer cap, past what a tool result hands the model). With ``many`` it lists 500
tools (``whoami``, ``fault`` and ``tool_0`` to ``tool_497``). With ``hang`` it also lists
``state`` (how many calls hang, how many wait) and ``wait`` (answers once a
``notifications/cancelled`` names a hanging call). Calls run side by side: one that
hangs holds up no other.
"""

from __future__ import annotations

import json
import os
import sys
import threading

HUGE_BYTES = 50 * 1024 * 1024
LONG_CHARS = 300_000
OBJECT = {"type": "object", "properties": {}}
WAIT_SECONDS = 120  # how long ``wait`` waits for a cancel at most

writing = threading.Lock()
heard = threading.Condition()  # guards the three below
hanging: set = set()  # ids of the calls hanging now
waiting = [0]  # ``wait`` calls waiting now
cancelled: list = []  # ids named by notifications/cancelled that were hanging


def send(message: dict) -> None:
    with writing:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def listed(fault: str) -> list[dict]:
    tools = [
        {"name": "whoami", "description": "Answers the server's process id.", "inputSchema": OBJECT},
        {"name": "fault", "description": f"Does what a broken server does: {fault}.", "inputSchema": OBJECT},
    ]
    if fault == "hang":
        tools += [
            {"name": "state", "description": "How many calls hang and wait.", "inputSchema": OBJECT},
            {
                "name": "wait",
                "description": "Answers once a hanging call is cancelled.",
                "inputSchema": OBJECT,
            },
        ]
    extra = 498 if fault == "many" else 0
    return tools + [{"name": f"tool_{n}", "description": "d", "inputSchema": OBJECT} for n in range(extra)]


def text(value: str, is_error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


def call(fault: str, name: str, ident: object) -> dict | None:
    """The result of ``name``, or None when the fault answers otherwise (or never)."""
    if name == "whoami":
        return text(f"pid {os.getpid()}")
    if name == "state":
        with heard:
            return text(json.dumps({"hanging": len(hanging), "waiting": waiting[0]}))
    if name == "wait":
        with heard:
            waiting[0] += 1
            heard.notify_all()
            heard.wait_for(lambda: cancelled, timeout=WAIT_SECONDS)
            waiting[0] -= 1
            return text(f"cancelled {len(cancelled)} hanging call(s)", is_error=not cancelled)
    if fault == "hang":
        with heard:
            hanging.add(ident)
        return None  # never answers
    if fault == "exit":
        os._exit(3)
    if fault == "huge":
        return text("x" * HUGE_BYTES)
    if fault == "garbage":
        with writing:
            sys.stdout.write("this is not JSON-RPC\n")
            sys.stdout.flush()
        return None
    if fault == "long":
        return text("y" * LONG_CHARS)
    if fault == "error":
        return text("the tool failed on purpose", is_error=True)
    return text("no fault")


def main(fault: str) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            if method == "notifications/cancelled":
                with heard:
                    if message["params"]["requestId"] in hanging:
                        hanging.discard(message["params"]["requestId"])
                        cancelled.append(message["params"]["requestId"])
                    heard.notify_all()
            continue
        if method == "initialize":
            info = {"name": f"faults-{fault}", "version": "1"}
            protocol = message["params"]["protocolVersion"]
            result = {"protocolVersion": protocol, "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            result = {"tools": listed(fault)}
        elif method == "tools/call":
            threading.Thread(target=answer, args=(fault, message), daemon=True).start()
            continue
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


def answer(fault: str, message: dict) -> None:
    result = call(fault, message["params"]["name"], message["id"])
    if result is not None:
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main(sys.argv[1])
