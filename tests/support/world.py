"""One of every tenant-owned object in a tenant, made through the store: the isolation cases' targets."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from decimal import Decimal

import sqlalchemy as sa

from hango.auth import generate_key
from hango.db.schema import TENANT_TABLES, api_keys, metadata, runs, tenants, usage_records
from hango.mcp.tool_lists import list_hash
from hango.store import TenantStore
from hango.store.part_costs import fold_waiting
from tests.support.clients import Tenant
from tests.support.mcp import TIME_TOOLS

MEMORY_CONTENT = "remember: the deploy password is not in here"
SKILL_BODY = "step 1: read the runbook"
SYSTEM_PROMPT = "You are the acme helper."


@dataclass(frozen=True)
class World:
    """Ids of the objects made in one tenant; ``member`` owns the agent, session, run and spare key."""

    tenant: str
    agent: str
    other_agent: str
    skill: str
    session: str
    other_session: str
    run: str
    queued_run: str  # on ``other_session``: a run no worker took yet (cancel's target)
    messages: tuple[str, ...]
    calls: tuple[str, ...]
    key: str
    users: dict[str, str]
    keys: tuple[str, ...]
    member_keys: tuple[str, ...]
    mcp_server: str  # the operator catalog's ``time``, attached to ``agent`` with its stored tool list

    def values(self) -> dict[str, str]:
        """Path placeholders: ``{agent}``, ``{session}``, ``{run}``, ``{key}``, ``{user}``..."""
        return {
            "agent": self.agent,
            "session": self.session,
            "run": self.run,
            "queued_run": self.queued_run,
            "key": self.key,
            "skill": self.skill,
            "message": self.messages[0],
            "call": self.calls[-1],
            "user": self.users["member2"],
            "mcp_server": self.mcp_server,
        }

    def member_private(self) -> set[str]:
        """Ids only ``member`` (and owners/admins) may see: their session, its history and their keys."""
        return {
            self.session,
            self.other_session,
            self.run,
            self.queued_run,
            *self.messages,
            *self.calls,
            *self.member_keys,
        }

    def all_ids(self) -> set[str]:
        """Every id of the tenant, for 'another tenant never sees them' checks."""
        objects = {self.tenant, self.agent, self.other_agent, self.skill, self.session, self.other_session}
        objects.add(self.mcp_server)
        runs = {self.run, self.queued_run}
        return objects | runs | {*self.messages, *self.calls, self.key, *self.users.values(), *self.keys}


def build_world(engine: sa.Engine, tenant: Tenant) -> World:
    """Make an agent, memory, skills, sessions, messages, a run and a spare key in ``tenant``."""
    member, owner = uuid.UUID(tenant.member.user_id), uuid.UUID(tenant.owner.user_id)
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(tenant.id))
        agent = store.agents.create(member, name="helper", model="offline/echo", system_prompt=SYSTEM_PROMPT)
        other_agent = store.agents.create(owner, name="planner", model="offline/echo")
        store.memory_files.put(agent.id, "/memories/AGENTS.md", MEMORY_CONTENT)
        store.memory_files.put(agent.id, "/memories/style.md", "short answers")
        skill = store.skills.create(agent.id, "review", description="review code", body=SKILL_BODY)
        store.skills.create(agent.id, "deploy", description="ship it", body="step 1", allowed_tools=["grep"])
        session = store.sessions.create(agent.id, member, "first")
        other_session = store.sessions.create(other_agent.id, member, "second")
        run_id = _insert_run(conn, store, session.id)
        _insert_run(conn, store, session.id)
        queued_run = _insert_run(conn, store, other_session.id, "queued")
        first = store.messages.append(session.id, "user", [{"type": "text", "text": "hello"}])
        second = store.messages.append(session.id, "assistant", [{"type": "text", "text": "hi"}], run_id)
        calls = _record_calls(store, session.id, run_id, member)
        spare = store.api_keys.create(member, "spare", generate_key(), 1000)
        mcp_server = _attach_time(store, agent.id, owner)
        keys = conn.execute(
            sa.select(api_keys.c.id, api_keys.c.user_id).where(api_keys.c.tenant_id == store.tenant_id)
        )
        owners = {str(row.id): row.user_id for row in keys}
    return World(
        tenant=tenant.id,
        agent=str(agent.id),
        other_agent=str(other_agent.id),
        skill=str(skill.id),
        session=str(session.id),
        other_session=str(other_session.id),
        run=str(run_id),
        queued_run=str(queued_run),
        messages=(str(first.id), str(second.id)),
        calls=calls,
        key=str(spare.id),
        users={role: getattr(tenant, role).user_id for role in ("owner", "admin", "member", "member2")},
        keys=tuple(owners),
        member_keys=tuple(key for key, user in owners.items() if user == member),
        mcp_server=str(mcp_server),
    )


def _attach_time(store: TenantStore, agent_id: uuid.UUID, owner: uuid.UUID) -> uuid.UUID:
    """The catalog's ``time`` server, its tool list stored as an attach leaves it, attached to the agent.

    And a Streamable HTTP server, never read, so the tenant's list has two.
    """
    server = store.mcp_servers.create(owner, "time", catalog="time", header_names=[])
    tools = [
        {"name": name, "description": f"{name} of a time zone", "input_schema": {"type": "object"}}
        for name in TIME_TOOLS
    ]
    store.mcp_servers.store_tools(server.id, tools, list_hash(tools))
    store.mcp_servers.attach(agent_id, server.id, None)
    store.mcp_servers.create(
        owner, "docs", url="https://93.184.216.34/mcp", header_names=[]
    )  # listed, unread
    return server.id


def _record_calls(
    store: TenantStore, session_id: uuid.UUID, run_id: uuid.UUID, user_id: uuid.UUID
) -> tuple[str, str]:
    """Two ledger entries of the run (the second built on the first), as the gateway writes them.

    They are a year old, so this month's usage totals (which other cases pin) leave them out.
    """
    made: list[uuid.UUID] = []
    now = dt.datetime.now(dt.UTC) - dt.timedelta(days=365)
    for seq in (1, 2):
        usage = {"user_id": user_id, "session_id": session_id, "run_id": run_id, "purpose": "run"}
        usage |= {"provider": "offline", "model": "echo", "input_tokens": 5, "output_tokens": 1}
        usage |= {"cache_read_tokens": 0, "cache_write_tokens": 0, "estimated_input_tokens": 5}
        usage |= {"created_at": now}
        call = {"session_id": session_id, "run_id": run_id, "purpose": "run", "model": "offline/echo"}
        call |= {"started_at": now - dt.timedelta(minutes=3 - seq), "duration_ms": 10}
        call |= {"base_id": made[-1] if made else None, "prefix_parts": seq - 1, "breakpoints": [seq - 1]}
        call |= {"tail": [[f"message:{seq}", f"{seq}" * 32, 5]], "parts_count": seq, "expected_cache_read": 0}
        free = [(f"message:{sent}", Decimal(0)) for sent in range(1, seq + 1)]  # offline: each part costs 0
        made.append(store.model_calls.record(usage, call, free))
    # their part costs folded into the totals, as the workers' periodic fold leaves them: a live server's
    # worker folding them later would change the world between a case's two snapshots
    fold_waiting(store.conn)
    return str(made[0]), str(made[1])


def _insert_run(
    conn: sa.Connection, store: TenantStore, session_id: uuid.UUID, status: str = "completed"
) -> uuid.UUID:
    run_id = uuid.uuid4()
    conn.execute(
        sa.insert(runs).values(
            id=run_id,
            tenant_id=store.tenant_id,
            session_id=session_id,
            status=status,
            stop_reason="end_turn" if status == "completed" else None,
        )
    )
    return run_id


def add_usage(
    engine: sa.Engine,
    world: World,
    *,
    purpose: str = "run",
    model: str = "echo",
    created_at: dt.datetime | None = None,
    **tokens: int,
) -> None:
    """Record one model call of the world's run, as the run loop would."""
    values = {"created_at": created_at} if created_at else {}
    with engine.begin() as conn:
        conn.execute(
            sa.insert(usage_records).values(
                id=uuid.uuid4(),
                tenant_id=uuid.UUID(world.tenant),
                agent_id=uuid.UUID(world.agent),
                session_id=uuid.UUID(world.session),
                run_id=uuid.UUID(world.run),
                purpose=purpose,
                provider="offline",
                model=model,
                **tokens,
                **values,
            )
        )


# Every authenticated request counts itself, and every failed one its failure.
BOOKKEEPING = ("rate_limit_windows", "auth_failures")


def snapshot(engine: sa.Engine, tenant_id: str) -> dict[str, list[tuple]]:
    """Every row of one tenant (key use bookkeeping left out), to prove a request changed nothing."""
    ident = uuid.UUID(tenant_id)
    queries = {"tenants": sa.select(tenants).where(tenants.c.id == ident)}
    for name in TENANT_TABLES:
        if name in BOOKKEEPING:
            continue
        table = metadata.tables[name]
        columns = [c for c in table.c if c.name != "last_used_at"]
        queries[name] = sa.select(*columns).where(table.c.tenant_id == ident)
    with engine.connect() as conn:
        return {name: sorted(map(tuple, conn.execute(query)), key=repr) for name, query in queries.items()}


def row_counts(engine: sa.Engine) -> dict[str, int]:
    """How many rows each table holds, leaving out the per-request bookkeeping of the limits."""
    tables = [t for t in metadata.sorted_tables if t.name not in BOOKKEEPING]
    with engine.connect() as conn:
        return {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() for t in tables}
