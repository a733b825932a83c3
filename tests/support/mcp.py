"""The MCP servers of the tests: the reference stdio servers from PyPI in an operator catalog, the fault
servers of ``tests/fakes``, and attaching one to an agent through the API."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hango.mcp.tool_lists import list_hash
from tests.support.clients import As
from tests.support.net import free_port, wait_until

BIN = Path(sys.executable).parent  # the virtualenv's scripts: mcp-server-time, mcp-server-git
REPO = Path(__file__).resolve().parents[2]
TIME_TOOLS = ("convert_time", "get_current_time")
FAULTS = ("hang", "exit", "huge", "long", "garbage", "error", "many")  # ``tests/fakes/mcp_stdio_faults.py``


def fault_servers() -> dict[str, dict]:
    """Catalog entries ``faults-<fault>``: the fault server of each fault, over stdio."""
    script = str(REPO / "tests" / "fakes" / "mcp_stdio_faults.py")
    return {f"faults-{fault}": {"command": sys.executable, "args": [script, fault]} for fault in FAULTS}


def write_catalog(folder: Path, **more: dict) -> Path:
    """A catalog of ``time`` and ``git`` (and ``more`` entries) in ``folder``; its path."""
    servers = {
        "time": {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(BIN / "mcp-server-git")},
        **more,
    }
    path = folder / "mcp-catalog.json"
    path.write_text(json.dumps({"servers": servers}))
    return path


@contextlib.contextmanager
def http_mcp_server(
    token: str,
    extra_tools: int = 0,
    description_chars: int = 20,
    port: int | None = None,
    session_seconds: float = 0,
) -> Iterator[str]:
    """``tests/fakes/mcp_http_server.py`` in a process of its own (on ``port``, or a free one, and
    forgetting sessions ``session_seconds`` after their first request); yields its endpoint URL."""
    args = (token, str(extra_tools), str(description_chars), str(session_seconds))
    with _served("tests.fakes.mcp_http_server", *args, port=port) as url:
        yield url


@contextlib.contextmanager
def list_server(**spec: Any) -> Iterator[str]:
    """``tests/fakes/mcp_list_server.py`` serving ``spec`` in a process of its own; yields its endpoint URL."""
    with _served("tests.fakes.mcp_list_server", json.dumps(spec)) as url:
        yield url


@contextlib.contextmanager
def _served(module: str, *args: str, port: int | None = None) -> Iterator[str]:
    port = port or free_port()
    process = subprocess.Popen([sys.executable, "-m", module, str(port), *args], cwd=REPO)
    try:
        wait_until(lambda: _listening(port), timeout=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=30)


def running(pid: int) -> bool:
    """Whether process ``pid`` (a server's, say) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def requests_seen(url: str) -> int:
    """How many MCP requests the list server at ``url`` has received."""
    with urllib.request.urlopen(url.removesuffix("/mcp") + "/seen", timeout=30) as answer:
        return json.load(answer)["requests"]


def _listening(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


def attach(who: As, agent_id: str, name: str, tools: list[str] | None = None, **server: Any) -> dict:
    """Register a server called ``name`` (``catalog=`` or ``url=`` and ``headers=``) and attach it to the
    agent (its ``tools``, or all); the attached server as the API answers it."""
    registered = who.post("/v1/mcp-servers", json={"name": name, **server})
    assert registered.status_code == 201, registered.get_json()
    attached = who.put(
        f"/v1/agents/{agent_id}/mcp-servers/{registered.get_json()['id']}", json={"tools": tools}
    )
    assert attached.status_code == 200, attached.get_json()
    return attached.get_json()


def listed_tools(names: list[str]) -> list[dict]:
    """A stored tool list of ``names``, each with a description and a one-argument schema."""
    return [
        {
            "name": name,
            "description": f"{name.replace('_', ' ')} of the repository or the clock " * 3,
            "input_schema": {"type": "object", "properties": {"repo_path": {"type": "string"}}},
        }
        for name in names
    ]


def store_server(store, agent_id: uuid.UUID, name: str, tools: list[str]) -> None:
    """A catalog server ``name`` stored with the tool list ``tools`` and attached to the agent, all of
    it through the store: nothing is started, as the inspector never starts one."""
    owner = store.agents.get(agent_id).owner_id
    server = store.mcp_servers.create(owner, name, catalog=name, url=None, header_names=[])
    store.mcp_servers.store_tools(server.id, listed_tools(tools), list_hash(listed_tools(tools)))
    store.mcp_servers.attach(agent_id, server.id, None)
