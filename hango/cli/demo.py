"""``hango demo``: seed (idempotently) a demo tenant, agent and session, and print fresh keys.

Each run mints the owner's and the member's key and revokes the pair the previous run printed
(keys are stored as hashes only, so a previous key cannot be printed again; keeping its plaintext
on disk for reuse would be one more secret to guard): the demo tenant holds two live demo keys.

The session's history is produced by really running the ``offline/echo`` agent:
its ``/tool NAME {json}`` form makes it call tools, so the history holds real
tool_use/tool_result pairs written by the run loop.

When the operator's catalog lists the reference ``time`` server (``scripts/run``
writes one that does), the demo tenant gets that MCP server, attached to the demo
agent, so the first inspect already shows an MCP server's group of tools. The agent
defers that server's tools (``tool:time/*``): they are not sent until the model's
``tool_search`` reveals them, so the first inspect also shows a deferred server.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import uuid
from typing import Any

from sqlalchemy.engine import Engine

from hango.agent.deferral import Deferral, check_deferral
from hango.agent.deps import Deps
from hango.agent.options import BUILTIN_TOOLS
from hango.agent.runner import run_inline
from hango.agent.state import Caller
from hango.cli.admin import create_principal
from hango.cli.common import config_or_exit, migrated_engine
from hango.config import Config
from hango.errors import Conflict, HangoError
from hango.mcp import servers
from hango.mcp.catalog import catalog_servers
from hango.store import TenantStore

DEMO_TENANT = "Demo"
OWNER_EMAIL = "owner@demo.hango.dev"
MEMBER_EMAIL = "member@demo.hango.dev"
AGENT_NAME = "Demo agent"
DEMO_KEY = "demo"  # the name of the keys this command mints
# the names of the keys an earlier run may have left live ("bootstrap": before the demo's keys had a name)
EARLIER_KEYS = (DEMO_KEY, "bootstrap")
MCP_SERVER = "time"  # the catalog server (and the tenant's server of that name) the demo agent gets
DEFERRED = f"tool:{MCP_SERVER}/*"  # the demo agent defers the server's tools: tool_search reveals them

SYSTEM_PROMPT = (
    "You are hango's demo agent. You help a small team keep notes and plans in the session's files. "
    "Answer briefly and say which tools you used."
)
MEMORY = {
    "/memories/AGENTS.md": "# Team conventions\n\n- Notes live in /notes.md.\n- Plans are written as todo lists.\n",
}
SKILLS = [
    {
        "name": "release-notes",
        "description": "Write release notes from the notes file.",
        "body": "Read /notes.md, group items by area, write /release.md with one line per change.",
        "allowed_tools": ["read_file", "write_file"],
    },
    {
        "name": "triage",
        "description": "Sort open todos by urgency.",
        "body": "Read the todo list, mark the most urgent item in_progress, and explain why.",
        "allowed_tools": ["write_todos"],
    },
]
TURNS = [
    'Please start our notes.\n/tool write_file {"path": "/notes.md", "content": "# Plan\\n- ship the inspector\\n"}',
    'What do the notes say?\n/tool read_file {"path": "/notes.md"}',
    "Track the work.\n"
    '/tool write_todos {"todos": [{"content": "ship the inspector", "status": "in_progress"}, '
    '{"content": "write the docs", "status": "pending"}]}',
    'Look around.\n/tool ls {"path": "/"}\n/tool read_file {"path": "/memories/AGENTS.md"}',
    'Add a line.\n/tool edit_file {"path": "/notes.md", "old_string": "- ship the inspector", '
    '"new_string": "- ship the inspector\\n- demo it"}',
    "Thanks, that is all for now.",
]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("demo", help="seed a demo tenant, agent and session, and print keys")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    config = config_or_exit()
    with migrated_engine(config) as engine:
        result = seed(engine, config)
    if args.json:
        print(json.dumps(result))
        return 0
    port = os.environ.get("HANGO_PORT", "8080")
    print("demo tenant is ready")
    print(f"  URL:        http://127.0.0.1:{port}")
    print(f"  owner key:  {result['owner_key']}")
    print(f"  member key: {result['member_key']}")
    print(f"  agent:      {result['agent_id']}")
    print(f"  session:    {result['session_id']}")
    return 0


def seed(engine: Engine, config: Config) -> dict[str, Any]:
    """Create (or find) the demo tenant, agent and session; print-ready ids and fresh keys (the previous
    run's revoked)."""
    with engine.begin() as conn:
        owner = create_principal(
            conn, DEMO_TENANT, OWNER_EMAIL, "owner", config.default_rate_limit, key_name=DEMO_KEY
        )
        member = create_principal(
            conn, DEMO_TENANT, MEMBER_EMAIL, "member", config.default_rate_limit, key_name=DEMO_KEY
        )
        store = TenantStore(conn, uuid.UUID(owner["tenant_id"]))
        for made in (owner, member):  # the previous run's pair stops working
            user, key = uuid.UUID(made["user_id"]), uuid.UUID(made["api_key_id"])
            for revoked in store.api_keys.revoke_named(user, EARLIER_KEYS, keep=key):
                detail = {"prefix": revoked.prefix}
                store.audit.record(
                    "api_key.delete",
                    "api_key",
                    revoked.id,
                    actor_user_id=None,
                    api_key_id=None,
                    detail=detail,
                )
        agent, session, fresh = _agent_and_session(store, uuid.UUID(owner["user_id"]))
    if fresh:
        caller = Caller(user_id=uuid.UUID(owner["user_id"]), api_key_id=None)
        for text in TURNS:
            content = [{"type": "text", "text": text}]
            # each turn runs on the session as stored now: the queued run reads it fresh (its todo list)
            run_inline(Deps(engine, config), store.tenant_id, session, content, caller)
    _add_time_server(engine, config, store.tenant_id, uuid.UUID(owner["user_id"]), agent.id)
    return {
        "tenant_id": owner["tenant_id"],
        "owner_key": owner["api_key"],
        "member_key": member["api_key"],
        "agent_id": str(agent.id),
        "session_id": str(session.id),
    }


def _agent_and_session(store: TenantStore, owner_id: Any) -> tuple[Any, Any, bool]:
    existing = store.agents.by_name(AGENT_NAME)
    if existing is not None:
        return existing, store.sessions.first_of_agent(existing.id), False
    agent = store.agents.create(
        owner_id,
        name=AGENT_NAME,
        model="offline/echo",
        system_prompt=SYSTEM_PROMPT,
        tools=list(BUILTIN_TOOLS),
    )
    for path, content in MEMORY.items():
        store.memory_files.put(agent.id, path, content)
    for skill in SKILLS:
        store.skills.create(agent.id, **skill)
    session = store.sessions.create(agent.id, owner_id, "Planning the inspector launch")
    return agent, session, True


def _add_time_server(
    engine: Engine, config: Config, tenant_id: uuid.UUID, owner_id: uuid.UUID, agent_id: uuid.UUID
) -> None:
    """Register the catalog's ``time`` server for the tenant, list its tools, attach it to the agent and
    defer its tools, once: a tenant that has a server of that name keeps it, and the agent its deferral,
    as they are (an owner may have detached it or sent its tools)."""
    if MCP_SERVER not in catalog_servers(config):
        return
    body = {"name": MCP_SERVER, "catalog": MCP_SERVER}
    try:
        # one transaction: a server that cannot be listed leaves nothing behind, and the next run tries again
        with engine.begin() as conn:
            store = TenantStore(conn, tenant_id)
            server = servers.read_tools(store, config, servers.register(store, config, owner_id, body))
            store.mcp_servers.attach(agent_id, server.id, None)
            _defer_server_tools(store, agent_id)
            # audited as the API audits them: the ledger names these the cause of the next call's miss
            attached = {"name": MCP_SERVER, "transport": "stdio", "tools": None, "tools_changed": False}
            for action, detail in (("agent.mcp_attach", attached), ("agent.update", {"fields": ["defer"]})):
                store.audit.record(
                    action, "agent", agent_id, actor_user_id=owner_id, api_key_id=None, detail=detail
                )
    except Conflict:
        return
    except HangoError as exc:
        print(f"demo: the {MCP_SERVER!r} MCP server is left out: {exc.message}", file=sys.stderr)


def _defer_server_tools(store: TenantStore, agent_id: uuid.UUID) -> None:
    """Add the server's part to the agent's deferral (its built-ins stay loaded: the check refuses a
    deferral that leaves no tool sent)."""
    agent = store.agents.get(agent_id)
    deferral = Deferral.of(agent.defer)
    deferral = dataclasses.replace(deferral, tools=tuple(dict.fromkeys((*deferral.tools, DEFERRED))))
    check_deferral(deferral, agent.tools, servers.attached_tools(store, agent_id))
    store.agents.update(agent_id, defer=deferral.as_dict())
