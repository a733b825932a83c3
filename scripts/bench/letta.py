"""Benchmark hango's inspect against Letta's context endpoint, on the same conversations, back to back.

Letta is a benchmark-only install, in its own virtualenv (``scripts/bench/setup-letta``
puts Letta 0.16.8 into ``./.venv-letta`` once). Then, from the repository root::

    .venv/bin/python -m scripts.bench.letta            # the full run: about 5 minutes (Letta starts in 40-70 s)
    .venv/bin/python -m scripts.bench.letta --quick    # a reduced run, 3-4 minutes

One embedded PostgreSQL in a temporary folder holds both databases: hango's
(migrated, as ``scripts/bench/inspector.py`` sets it up) and Letta's (its ORM's
tables and pgvector). hango gets the inspect benchmark's agent and its sessions
of 1,000 and 10,000 messages (``scripts/bench/history.py``, the same seeds);
Letta gets one agent per size with the same system prompt and memory (as
blocks) and the same messages as its own records (``letta_records``: same
count, roles, texts and tool calls), appended to the agent's in-context
messages through Letta's manager (``scripts/bench/letta_server.py``, run by
``.venv-letta``'s Python). ``hango serve --workers 2`` and Letta's server (one
uvicorn worker, its default) run side by side; Letta is offline: no API key, a
model and an embedding endpoint on a closed loopback port that nothing answers
(its context endpoint counts tokens with its byte-based estimate, never calling
them), tracing off. Pairs of ``GET /v1/sessions/{id}/context`` (hango) and
``GET /v1/agents/{id}/context`` (Letta) are interleaved, their order
alternating, the sizes taking turns. It prints one table, writes the raw
figures as JSON under ``bench-results/`` and exits 1 when a request failed, a
response does not hold every message, Letta had a connection off the machine
or (unless ``--no-timing-asserts``) hango/Letta is above 0.25.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
import requests
import sqlalchemy as sa

from hango.config import REPO_ROOT
from hango.db import make_engine
from hango.store import TenantStore
from scripts.bench.hango_server import Hango, command, database, free_port, serving, stop, wait_ready
from scripts.bench.history import MEMORY, Session, add_agent, add_session
from scripts.bench.inspector import RATE_LIMIT, Recorder, context_path
from scripts.bench.inspector_report import Load, Target, conclude, machine, p50, p95

SIZES = (1_000, 10_000)
TARGET = 0.25  # hango / Letta, at each size
LETTA_PYTHON = REPO_ROOT / ".venv-letta" / "bin" / "python"
LETTA_SERVER = ("-m", "scripts.bench.letta_server")  # a module: as a file, its folder would shadow letta
NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, so a model call would fail at once
OFFLINE_LLM = {"model": "bench-offline", "model_endpoint_type": "openai", "model_endpoint": NOWHERE}
OFFLINE_EMBEDDING = {
    "embedding_model": "bench-offline",
    "embedding_endpoint_type": "openai",
    "embedding_endpoint": NOWHERE,
    "embedding_dim": 1536,
}


@dataclass(frozen=True)
class Plan:
    rounds: dict[int, int]  # interleaved hango/Letta pairs per size
    warmup: int  # requests of each kind per size before anything is measured


FULL = Plan({1_000: 30, 10_000: 10}, 2)
QUICK = Plan({1_000: 5, 10_000: 2}, 1)


# --- the same conversation as Letta's records ------------------------------------------------------


def tool_call(block: dict[str, Any]) -> dict[str, Any]:
    """A ``tool_use`` block as an OpenAI tool call, the form Letta stores."""
    arguments = json.dumps(block["input"], ensure_ascii=False)
    return {
        "id": block["id"],
        "type": "function",
        "function": {"name": block["name"], "arguments": arguments},
    }


def tool_return(block: dict[str, Any]) -> dict[str, Any]:
    status = "error" if block["is_error"] else "success"
    return {"tool_call_id": block["tool_use_id"], "status": status, "func_response": block["content"]}


def letta_record(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """One of hango's messages as Letta's message record (``names``: each tool call's tool, by id).

    Text blocks become text content; ``tool_use`` blocks the assistant's tool calls; a user message of
    ``tool_result`` blocks becomes one ``tool`` message with a return per result, as Letta stores the
    results of parallel calls.
    """
    blocks = message["content"]
    returns = [tool_return(b) for b in blocks if b["type"] == "tool_result"]
    first = returns[0]["tool_call_id"] if returns else None
    return {
        "role": "tool" if returns else message["role"],
        "texts": [b["text"] for b in blocks if b["type"] == "text"],
        "tool_calls": [tool_call(b) for b in blocks if b["type"] == "tool_use"],
        "tool_returns": returns,
        "tool_call_id": first,
        "name": names.get(first) if first else None,
    }


def letta_records(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """hango's generated history as Letta's message records, one per message, in order."""
    names = {b["id"]: b["name"] for m in items for b in m["content"] if b["type"] == "tool_use"}
    return [letta_record(m, names) for m in items]


# --- Letta, offline ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Letta:
    url: str
    server: subprocess.Popen
    log: Path


def letta_env(data_dir: Path, database_url: str) -> dict[str, str]:
    """Letta's environment: its database, its folders in ``data_dir``, no key, no endpoint, no tracing."""
    dropped = ("_API_KEY", "_BASE_URL", "_API_BASE")
    env = {k: v for k, v in os.environ.items() if not k.endswith(dropped) and not k.startswith("OTEL_")}
    env.pop("SENTRY_DSN", None)
    home = data_dir / "letta-home"
    home.mkdir(exist_ok=True)
    return env | {
        "LETTA_PG_URI": database_url,
        "HOME": str(home),  # Letta reads ~/.letta (and a pg_uri there): this run's, empty
        "LETTA_DIR": str(home / ".letta"),
        "LETTA_DISABLE_TRACING": "true",
        "NO_PROXY": "127.0.0.1,localhost",
        "PYTHONPATH": str(REPO_ROOT),  # for ``-m scripts.bench.letta_server``, run in ``data_dir``
    }


def letta_database(hango_url: str) -> str:
    """A ``letta`` database in the cluster of ``hango_url``; its URL in the form Letta takes."""
    engine = sa.create_engine(hango_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text("create database letta"))
    engine.dispose()
    return sa.make_url(hango_url).set(drivername="postgresql", database="letta").render_as_string(False)


def letta_command(env: dict[str, str], *argv: str) -> str:
    # Letta writes files (its OpenAPI schema) into the folder it runs in
    return command([str(LETTA_PYTHON), *LETTA_SERVER, *argv], env["HOME"], env, f"letta_server {argv[0]}")


@contextlib.contextmanager
def letta_serving(data_dir: Path, hango_url: str) -> Iterator[tuple[Letta, dict[str, str]]]:
    """Letta's server on its own database in ``hango_url``'s cluster, until the block ends."""
    env = letta_env(data_dir, letta_database(hango_url))
    letta_command(env, "schema")
    port = free_port()
    log = data_dir / f"letta-{port}.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [str(LETTA_PYTHON), *LETTA_SERVER, "serve", "--port", str(port)],
            cwd=env["HOME"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the benchmark only; it stops the server itself
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(f"{url}/v1/health/", server, log, "Letta's server")
        yield Letta(url, server, log), env
    finally:
        stop(server)


def off_machine(letta: Letta) -> list[str]:
    """Letta's open connections to anything but this machine's loopback (there must be none)."""
    processes = [psutil.Process(letta.server.pid), *psutil.Process(letta.server.pid).children(recursive=True)]
    remote = [c.raddr for p in processes for c in p.net_connections(kind="inet") if c.raddr]
    return [f"{r.ip}:{r.port}" for r in remote if not r.ip.startswith(("127.", "::1", "::ffff:127."))]


# --- seeding ----------------------------------------------------------------------------------------


def seed_hango(database_url: str, principal: dict) -> tuple[dict[int, Session], dict[str, Any]]:
    """The inspect benchmark's agent and its sessions of each size; the agent's prompt and memory."""
    engine = make_engine(database_url)
    owner = uuid.UUID(principal["user_id"])
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
        agent = add_agent(store, owner)
        sessions = {n: add_session(store, agent.id, owner, n, seed=n, summary=False) for n in SIZES}
        memory = {path: store.memory_files.get(agent.id, path).content for path in MEMORY}
    engine.dispose()
    return sessions, {"system": agent.system_prompt, "memory": memory}


def letta_agent(letta: Letta, size: int, agent: dict[str, Any]) -> str:
    """A Letta agent with hango's agent's system prompt and memory files (as blocks), and no messages."""
    blocks = [{"label": Path(path).stem.lower(), "value": text} for path, text in agent["memory"].items()]
    body = {
        "name": f"bench {size}",
        "system": agent["system"],
        "memory_blocks": blocks,
        "llm_config": OFFLINE_LLM | {"context_window": 1_000_000},
        "embedding_config": OFFLINE_EMBEDDING,
        "include_base_tools": True,
        "initial_message_sequence": [],
    }
    made = requests.post(f"{letta.url}/v1/agents/", json=body, timeout=120)
    if not made.ok:
        raise RuntimeError(f"Letta did not create the agent: {made.status_code} {made.text[:1000]}")
    return made.json()["id"]


def seed_letta(
    letta: Letta, env: dict[str, str], data_dir: Path, sessions: dict[int, Session], agent: dict[str, Any]
) -> dict[int, str]:
    """One Letta agent per size, its in-context messages the session's; returns the agents' ids."""
    agents = {}
    for size, session in sessions.items():
        agents[size] = letta_agent(letta, size, agent)
        records = data_dir / f"letta-records-{size}.json"
        records.write_text(json.dumps(letta_records(session.history), ensure_ascii=False))
        held = int(letta_command(env, "seed", agents[size], str(records)).split()[-1])
        if held != size + 1:  # the system message, then the conversation
            raise RuntimeError(f"Letta's agent holds {held} in-context messages, want {size + 1}")
    return agents


# --- timing -----------------------------------------------------------------------------------------


def hango_of(size: int) -> str:
    return f"hango inspect {size}"


def letta_of(size: int) -> str:
    return f"Letta context {size}"


def requests_for(sessions: dict[int, Session], agents: dict[int, str]) -> dict[str, tuple[str, str]]:
    """Each measure's recorder ("hango" or "letta") and path."""
    paths = {hango_of(n): ("hango", context_path(s)) for n, s in sessions.items()}
    return paths | {letta_of(n): ("letta", f"/v1/agents/{agents[n]}/context") for n in agents}


def check(recs: dict[str, Recorder], paths: dict[str, tuple[str, str]]) -> tuple[list[str], dict]:
    """Every message in each response (outside the timings); the responses' sizes in bytes.

    Letta's answer lists its in-context messages: the system message, then the conversation.
    """
    problems, sizes = [], {}
    for size in SIZES:
        for name, want in ((hango_of(size), size), (letta_of(size), size + 1)):
            rec, path = paths[name]
            response = recs[rec].http.get(recs[rec].url + path, timeout=300)
            body = response.json() if response.ok else {}
            held = len(body.get("messages", []))
            if held != want or body.get("num_messages", want) != want:  # Letta also counts them
                problems.append(f"{name}: {response.status_code}, {held} messages, want {want}")
            sizes[name] = len(response.content)
    return problems, sizes


def measure(recs: dict[str, Recorder], paths: dict[str, tuple[str, str]], plan: Plan) -> None:
    """Warm both servers, then hango/Letta pairs, their order alternating, the sizes taking turns."""
    for size in SIZES:
        for name in (hango_of(size), letta_of(size)) * plan.warmup:
            rec, path = paths[name]
            recs[rec].timed("warmup", "GET", path)
    for index in range(max(plan.rounds.values())):
        for size in (s for s in SIZES if index < plan.rounds[s]):
            pair = (hango_of(size), letta_of(size))
            for name in pair if index % 2 == 0 else pair[::-1]:
                rec, path = paths[name]
                recs[rec].timed(name, "GET", path)


def run(hango: Hango, letta: Letta, sessions: dict[int, Session], agents: dict[int, str], plan: Plan) -> dict:
    recs = {"hango": Recorder(hango.url, hango.principal["api_key"]), "letta": Recorder(letta.url, "")}
    paths = requests_for(sessions, agents)
    load = Load()
    problems, sizes = check(recs, paths)
    measure(recs, paths, plan)
    load.mark("pairs")
    problems += [f"Letta had a connection off the machine: {to}" for to in off_machine(letta)]
    samples = recs["hango"].samples | recs["letta"].samples
    samples.pop("warmup", None)
    return {
        "samples_ms": samples,
        "response_bytes": sizes,
        "errors": recs["hango"].errors | recs["letta"].errors,
        "failures": (recs["hango"].failures + recs["letta"].failures)[:50],
        "problems": problems,
        "load": load.marks,
    }


# --- report -----------------------------------------------------------------------------------------


def targets(results: dict[str, Any]) -> list[Target]:
    s = {name: p50(xs) for name, xs in results["samples_ms"].items()}
    ratios = [Target(f"hango / Letta at {n:,}", s[hango_of(n)] / s[letta_of(n)], TARGET) for n in SIZES]
    return [*ratios, Target("errors", sum(results["errors"].values()) + len(results["problems"]), 0)]


def render(results: dict[str, Any], checks: list[Target]) -> str:
    lines = [
        "| measure | n | p50 ms | p95 ms | response KB | ratio | target | ok |",
        "|---|" + "---:|" * 6 + ":-:|",
    ]
    for name, xs in results["samples_ms"].items():
        kb = results["response_bytes"].get(name, 0) / 1024
        lines.append(f"| {name} | {len(xs)} | {p50(xs):.1f} | {p95(xs):.1f} | {kb:,.0f} | | | |")
    for t in checks:
        lines.append(
            f"| **{t.name}** | | | | | {t.value:.2f} | {t.op} {t.limit:g} | {'✓' if t.ok else '✗'} |"
        )
    start, end = results["load"][0]["load"], results["load"][-1]["load"]
    lines.append(f"\nload average (1, 5, 15 min): {start} at the start, {end} at the end")
    return "\n".join(lines)


def benchmark(plan: Plan, workers: int) -> dict[str, Any]:
    with database(RATE_LIMIT) as (data_dir, url, principal):
        sessions, agent = seed_hango(url, principal)
        with letta_serving(data_dir, url) as (letta, env):
            agents = seed_letta(letta, env, data_dir, sessions, agent)
            with serving(data_dir, url, principal, workers) as hango:
                return run(hango, letta, sessions, agents, plan)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run, 3-4 minutes")
    parser.add_argument("--no-timing-asserts", action="store_true", help="fail on errors only")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results", help="where the JSON goes")
    parser.add_argument("--workers", type=int, default=2, help="hango's gunicorn sync workers")
    parser.add_argument(
        "--write-doc", action="store_true", help="write the table into docs/performance.md (a full run only)"
    )
    args = parser.parse_args(argv)
    if args.write_doc and args.quick:
        parser.error("--write-doc takes a full run: the quick one's few samples are no figures to keep")
    if not LETTA_PYTHON.exists():
        print("Letta is not installed: run scripts/bench/setup-letta first", file=sys.stderr)
        return 2
    plan = QUICK if args.quick else FULL
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so that everything started is stopped
    try:
        results = benchmark(plan, args.workers)
    except KeyboardInterrupt:
        print("interrupted; the servers and the database they used are stopped", file=sys.stderr)
        return 130
    checks = targets(results)
    results |= {"machine": machine(), "plan": asdict(plan), "letta": "0.16.8"}
    return conclude("letta", results, checks, render(results, checks), args)


if __name__ == "__main__":
    raise SystemExit(main())
