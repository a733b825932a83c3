"""Benchmark deferred tools: 300 MCP tools all loaded against all deferred, what each call sends, inspect's
time, and one ``tool_search`` through the real tool.

Run from the repository root after the README's set-up, as a module::

    .venv/bin/python -m scripts.bench.deferred_tools              # 40 interleaved inspect pairs
    .venv/bin/python -m scripts.bench.deferred_tools --quick      # 10 pairs
    .venv/bin/python -m scripts.bench.deferred_tools --write-doc  # and its table into docs/performance.md

It starts ``hango serve`` (one gunicorn sync worker) on an embedded PostgreSQL in a
temporary folder. Two agents of the inspect benchmark's kind (``scripts/bench/history.py``:
every built-in tool, a long prompt, memory, skills) get the 10 servers × 30 tools of the
tool-search catalog (``tests/data/tool_catalog/catalog.json``), stored and attached through
the store as the tests do (no server process: inspect and the search read the stored
lists), and a session each of the same generated 100-message history; the second agent
defers every server (``defer.tools``: ``tool:<server>/*`` each). Measured:

- the MCP tool tokens each call sends, from the inspect answers: the loaded agent's server
  groups' ``tokens``, against the deferred agent's (0) plus ``tool_search``'s own part;
  target at least 85 % fewer;
- inspect (``GET .../context``) of the deferred agent against the loaded one, pairs
  interleaved with their order alternating, the ratio the median of the pairs' ratios
  (``inspector_report.paired``); target at most 1.10x;
- one search (``SEARCHES`` rounds of the catalog's 50 queries): the ``tool_search`` slot's
  ``Tool`` of the deferred session's state, prepared in this process as a try's (its reveals
  stay in the state, cleared between searches, so each search ranks all 300); target p99 at
  most 20 ms.

It prints one table, writes the raw figures under ``bench-results/`` and exits 1 when a target is
missed (unless ``--no-timing-asserts``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import requests

from hango.agent.deps import Deps
from hango.agent.loader import load_state, prepare
from hango.agent.parts import server_part
from hango.agent.stack import build_chain
from hango.agent.state import Caller, scratch_turn
from hango.agent.toolset import TOOL_SEARCH
from hango.config import load_config
from hango.db import make_engine
from hango.mcp.tool_lists import list_hash
from hango.store import TenantStore
from scripts.bench.hango_server import database, serving
from scripts.bench.history import add_agent, add_session
from scripts.bench.inspector_report import Load, Target, conclude, machine, p50, paired
from scripts.bench.mcp import paired_arguments, timed
from scripts.bench.tool_search import p99
from tests.support.tool_catalog import CATALOG, queries

RATE_LIMIT = 10_000_000
MESSAGES = 100
WARMUP = 3
SEARCHES = 20  # rounds of the 50 queries
TARGET_FEWER = 0.85
TARGET_RATIO = 1.10
TARGET_P99_MS = 20.0
KINDS = ("loaded", "deferred")


def catalog_servers() -> dict[str, list[dict[str, Any]]]:
    """The catalog's tools by server, each as a server lists it (name, description, input schema)."""
    servers: dict[str, list[dict[str, Any]]] = {}
    for tool in json.loads((CATALOG / "catalog.json").read_text())["tools"]:
        listed = {k: tool[k] for k in ("name", "description", "input_schema")}
        servers.setdefault(tool["server"], []).append(listed)
    return servers


def seed(database_url: str, principal: dict) -> dict[str, dict[str, str]]:
    """Per kind, its agent and its session of the same history; every catalog server attached to both."""
    servers = catalog_servers()
    engine = make_engine(database_url)
    owner = uuid.UUID(principal["user_id"])
    seeded: dict[str, dict[str, str]] = {}
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
        ids = {}
        for name, tools in servers.items():
            server = store.mcp_servers.create(owner, name, catalog=name, url=None, header_names=[])
            store.mcp_servers.store_tools(server.id, tools, list_hash(tools))
            ids[name] = server.id
        for kind in KINDS:
            agent = add_agent(store, owner, name=f"bench {kind}")
            for server_id in ids.values():
                store.mcp_servers.attach(agent.id, server_id, None)
            if kind == "deferred":
                defer = {"tools": [server_part(name) for name in servers], "auto_percent": None}
                store.agents.update(agent.id, defer=defer)
            session = add_session(store, agent.id, owner, MESSAGES, seed=MESSAGES, summary=False)
            seeded[kind] = {"agent": str(agent.id), "session": str(session.id)}
    engine.dispose()
    return seeded


def inspect_pairs(http: requests.Session, url: str, seeded: dict, pairs: int) -> dict[str, Any]:
    """Each kind's inspect times (ms), interleaved with the order alternating, and its last answer."""
    samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
    answers: dict[str, Any] = {}
    for index in range(WARMUP + pairs):
        for kind in KINDS if index % 2 == 0 else KINDS[::-1]:
            elapsed, answers[kind] = timed(
                http, "GET", f"{url}/v1/sessions/{seeded[kind]['session']}/context"
            )
            if index >= WARMUP:
                samples[kind].append(elapsed)
    return {"samples": samples, "tokens": sent_tokens(answers)}


def sent_tokens(answers: dict[str, Any]) -> dict[str, int]:
    """The MCP tool tokens each call sends, loaded and deferred (with ``tool_search``'s part), and the
    deferred definitions' estimates, from the inspect answers."""
    servers = {kind: [g for g in answers[kind]["tool_groups"] if g["server"] is not None] for kind in KINDS}
    search = next(p for p in answers["deferred"]["tools"] if p["id"] == f"tool:{TOOL_SEARCH}")
    return {
        "tools": sum(g["tools"] for g in servers["loaded"]),
        "servers": len(servers["loaded"]),
        "loaded": sum(g["tokens"] for g in servers["loaded"]),
        "deferred_servers_sent": sum(g["tokens"] for g in servers["deferred"]),
        "deferred_definitions": sum(g["deferred_tokens"] for g in servers["deferred"]),
        "tool_search": search["tokens"] if search["included"] else 0,
        "total_after_loaded": answers["loaded"]["total_after"],
        "total_after_deferred": answers["deferred"]["total_after"],
    }


def search_times(database_url: str, principal: dict, session_id: str) -> list[float]:
    """One search's times (ms): the ``tool_search`` slot's tool on the deferred session's state, as a try's."""
    engine = make_engine(database_url)
    deps = Deps(engine, load_config())
    chain = build_chain()
    times = []
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
        session = store.sessions.get(uuid.UUID(session_id))
        caller = Caller(uuid.UUID(principal["user_id"]), None)
        state = prepare(chain, load_state(store, session, caller, scratch_turn("bench")), store, deps)
        tool = chain.tools(state)[TOOL_SEARCH]
        ctx = SimpleNamespace(state=state, chain=chain, store=store, deps=deps)
        for _ in range(SEARCHES):
            for query in queries():
                state.revealed.clear()  # each search ranks the whole catalog
                start = time.perf_counter_ns()
                tool.execute({"query": query.text}, ctx)
                times.append((time.perf_counter_ns() - start) / 1e6)
    engine.dispose()
    return times


def measure(pairs: int, load: Load) -> dict[str, Any]:
    with database(RATE_LIMIT) as (data_dir, url, principal):
        seeded = seed(url, principal)
        with serving(data_dir, url, principal, 1) as server:
            http = requests.Session()
            http.headers["Authorization"] = f"Bearer {principal['api_key']}"
            inspected = inspect_pairs(http, server.url, seeded, pairs)
            load.mark("inspect pairs")
        searches = search_times(url, principal, seeded["deferred"]["session"])
        load.mark("searches")
    return {"pairs": pairs, **inspected, "search_ms": searches}


def targets(results: dict[str, Any]) -> list[Target]:
    tokens = results["tokens"]
    sent = tokens["deferred_servers_sent"] + tokens["tool_search"]
    return [
        Target("MCP tool tokens sent, fewer", 1 - sent / tokens["loaded"], TARGET_FEWER, "≥"),
        Target("inspect ratio", paired(results["samples"], "deferred", "loaded"), TARGET_RATIO),
        Target("search p99 ms", p99(results["search_ms"]), TARGET_P99_MS),
    ]


def render(results: dict[str, Any], checks: list[Target]) -> str:
    """The benchmark's table (markdown): tokens a call, inspect both ways, one search."""
    t, s = results["tokens"], results["samples"]
    fewer, ratio, search = checks
    verdict = {True: "ok", False: "MISSED"}
    lines = [
        f"{t['tools']} MCP tools on {t['servers']} servers (the tool-search catalog) on an agent with every "
        f"built-in tool, all loaded against all deferred; {results['pairs']} interleaved inspect pairs at "
        f"{MESSAGES} messages, one gunicorn worker; {len(results['search_ms']):,} searches.",
        "",
        "| measure | loaded | deferred | result | target |",
        "|---|---:|---:|---:|---|",
        f"| MCP tool tokens a call (deferred: tool_search's part) | {t['loaded']:,} "
        f"| {t['deferred_servers_sent'] + t['tool_search']:,} | {fewer.value:.1%} fewer "
        f"| ≥ {TARGET_FEWER:.0%} {verdict[fewer.ok]} |",
        f"| request tokens (inspect total_after) | {t['total_after_loaded']:,} | {t['total_after_deferred']:,} "
        "| | |",
        f"| inspect p50, {MESSAGES} messages | {p50(s['loaded']):.1f} ms | {p50(s['deferred']):.1f} ms "
        f"| {ratio.value:.3f}x | ≤ {TARGET_RATIO}x {verdict[ratio.ok]} |",
        f"| tool_search, one search (the real tool) | | p50 {p50(results['search_ms']):.2f} ms "
        f"| p99 {search.value:.2f} ms | ≤ {TARGET_P99_MS:g} ms {verdict[search.ok]} |",
    ]
    start, end = results["load"][0]["load"], results["load"][-1]["load"]
    lines.append(f"\nload average (1, 5, 15 min): {start} at the start, {end} at the end")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = paired_arguments(__doc__, argv)
    load = Load()
    results = measure(10 if args.quick else 40, load)
    results["machine"], results["load"] = machine(), load.marks
    checks = targets(results)
    return conclude("deferred_tools", results, checks, render(results, checks), args)


if __name__ == "__main__":
    raise SystemExit(main())
