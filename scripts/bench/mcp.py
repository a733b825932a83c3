"""Benchmark inspect with MCP tools: 60 tools on 4 servers against the built-in tools only, same history.

Run from the repository root after the README's set-up, as a module::

    .venv/bin/python -m scripts.bench.mcp                # 40 interleaved pairs a size
    .venv/bin/python -m scripts.bench.mcp --quick        # 10 pairs a size
    .venv/bin/python -m scripts.bench.mcp --write-doc    # and its table into docs/performance.md

It starts ``hango serve`` (one gunicorn sync worker) on an embedded PostgreSQL in a
temporary folder, with an operator catalog of 4 stdio servers
(``scripts/bench/mcp_tools_server.py``, the SDK's own ``MCPServer``), each of 15
tools of about 80 tokens. Two agents of the inspect benchmark's kind
(``scripts/bench/history.py``: every built-in tool, a long prompt, memory, skills)
get sessions of the same generated history (100 and 1,000 messages); one of them
has the 4 servers attached through the API, which lists each server's tools
(attach: connect, list and store, timed per server), and each server is then
refreshed ``REFRESHES`` times (timed). Pairs of inspects (``GET .../context``),
their order alternating, measure the MCP agent's against the built-in agent's at
each size; the ratio is the median of the pairs' ratios (``inspector_report.paired``).
Target: at most 1.10x. It prints one table, writes the raw figures under
``bench-results/`` and exits 1 when a target is missed (unless ``--no-timing-asserts``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import requests

from hango.config import REPO_ROOT
from hango.db import make_engine
from hango.store import TenantStore
from scripts.bench.hango_server import database, serving
from scripts.bench.history import add_agent, add_session
from scripts.bench.inspector_report import Load, Target, conclude, machine, p50, paired

RATE_LIMIT = 10_000_000
SERVERS = ("s1", "s2", "s3", "s4")
TOOLS_EACH = 15
SIZES = (100, 1_000)
REFRESHES = 5
WARMUP = 3
TARGET = 1.10


def catalog(folder: Path) -> Path:
    """The operator catalog of the benchmark's stdio servers, each this interpreter running the tools server."""
    entry = {"command": sys.executable, "env": {"PYTHONPATH": str(REPO_ROOT)}}
    servers = {
        name: {**entry, "args": ["-m", "scripts.bench.mcp_tools_server", name, str(TOOLS_EACH)]}
        for name in SERVERS
    }
    path = folder / "mcp-catalog.json"
    path.write_text(json.dumps({"servers": servers}))
    return path


def seed(database_url: str, principal: dict) -> dict[str, dict[int, str]]:
    """Per agent (``built-in``, ``mcp``), its session of each size; the same history for both agents."""
    engine = make_engine(database_url)
    owner = uuid.UUID(principal["user_id"])
    sessions: dict[str, dict[int, str]] = {}
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
        for kind in ("built-in", "mcp"):
            agent = add_agent(store, owner, name=f"bench {kind}")
            sessions[kind] = {
                size: str(add_session(store, agent.id, owner, size, seed=size, summary=False).id)
                for size in SIZES
            }
            sessions[kind]["agent"] = str(agent.id)  # type: ignore[index]
    engine.dispose()
    return sessions


def timed(http: requests.Session, method: str, url: str, **kw: Any) -> tuple[float, Any]:
    """One request in ms and its JSON answer; raises on a status other than 2xx."""
    clock = time.perf_counter()
    answer = http.request(method, url, timeout=300, **kw)
    elapsed = (time.perf_counter() - clock) * 1000
    if not answer.ok:
        raise RuntimeError(f"{method} {url}: {answer.status_code} {answer.text[:300]}")
    return elapsed, answer.json() if answer.content else None


def attach_servers(http: requests.Session, url: str, agent: str) -> dict[str, dict[str, Any]]:
    """Register and attach each server (its first listing), then refresh it: the times per server."""
    figures: dict[str, dict[str, Any]] = {}
    for name in SERVERS:
        _, server = timed(http, "POST", f"{url}/v1/mcp-servers", json={"name": name, "catalog": name})
        attach_ms, attached = timed(
            http, "PUT", f"{url}/v1/agents/{agent}/mcp-servers/{server['id']}", json={}
        )
        refresh = [
            timed(http, "POST", f"{url}/v1/mcp-servers/{server['id']}/refresh", json={})[0]
            for _ in range(REFRESHES)
        ]
        figures[name] = {"tools": len(attached["tools"]), "attach_ms": attach_ms, "refresh_ms": refresh}
    return figures


def inspect_pairs(http: requests.Session, url: str, sessions: dict[str, dict[int, str]], pairs: int) -> dict:
    """Per size, each agent's inspect times (ms), interleaved with the order alternating."""
    samples: dict[int, dict[str, list[float]]] = {size: {"built-in": [], "mcp": []} for size in SIZES}
    groups: dict[int, list[dict[str, Any]]] = {}
    for size in SIZES:
        for index in range(WARMUP + pairs):
            for kind in ("built-in", "mcp") if index % 2 == 0 else ("mcp", "built-in"):
                elapsed, body = timed(http, "GET", f"{url}/v1/sessions/{sessions[kind][size]}/context")
                if index >= WARMUP:
                    samples[size][kind].append(elapsed)
                if kind == "mcp":
                    groups[size] = body["tool_groups"]
    return {"samples": samples, "groups": groups}


def measure(pairs: int, load: Load) -> dict[str, Any]:
    with database(RATE_LIMIT) as (data_dir, url, principal):
        sessions = seed(url, principal)
        env = {"HANGO_MCP_CATALOG": str(catalog(data_dir))}
        with serving(data_dir, url, principal, 1, env=env) as server:
            http = requests.Session()
            http.headers["Authorization"] = f"Bearer {principal['api_key']}"
            servers = attach_servers(http, server.url, sessions["mcp"]["agent"])  # type: ignore[index]
            load.mark("attach and refresh")
            inspected = inspect_pairs(http, server.url, sessions, pairs)
            load.mark("inspect pairs")
    return {"pairs": pairs, "servers": servers, **inspected}


def render(results: dict[str, Any], checks: list[Target]) -> str:
    """The benchmark's table (markdown): inspect both ways per size, then listing and refresh per server."""
    groups = results["groups"][SIZES[-1]]
    mcp_tokens = sum(g["tokens"] for g in groups if g["server"] is not None)
    mcp_tools = sum(g["tools"] for g in groups if g["server"] is not None)
    lines = [
        f"{mcp_tools} MCP tools on {len(SERVERS)} servers ({mcp_tokens:,} tokens) against the built-in "
        f"tools only, same history; {results['pairs']} interleaved pairs a size, one gunicorn worker.",
        "",
        "| inspect | built-in only p50 | with MCP p50 | ratio (median of pairs) | target |",
        "|---|---:|---:|---:|---|",
    ]
    for size in SIZES:
        s = results["samples"][size]
        check = next(c for c in checks if c.name == f"inspect {size}")
        lines.append(
            f"| {size:,} messages | {p50(s['built-in']):.1f} ms | {p50(s['mcp']):.1f} ms "
            f"| {check.value:.3f}x | {check.op} {check.limit}x {'ok' if check.ok else 'MISSED'} |"
        )
    lines += ["", "| server | tools | attach (connect, list, store) | refresh p50 |", "|---|---:|---:|---:|"]
    for name, figures in results["servers"].items():
        lines.append(
            f"| {name} | {figures['tools']} | {figures['attach_ms']:.0f} ms | {p50(figures['refresh_ms']):.0f} ms |"
        )
    return "\n".join(lines)


def paired_arguments(doc: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """The options of a paired inspect benchmark: ``--quick``, ``--write-doc``, ``--no-timing-asserts``, ``--out``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 pairs a size instead of 40")
    parser.add_argument("--write-doc", action="store_true", help="write the table into docs/performance.md")
    parser.add_argument("--no-timing-asserts", action="store_true", help="exit 0 when a target is missed")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = paired_arguments(__doc__, argv)
    load = Load()
    results = measure(10 if args.quick else 40, load)
    results["machine"], results["load"] = machine(), load.marks
    checks = [
        Target(f"inspect {size}", paired(results["samples"][size], "mcp", "built-in"), TARGET)
        for size in SIZES
    ]
    return conclude("mcp", results, checks, render(results, checks), args)


if __name__ == "__main__":
    raise SystemExit(main())
