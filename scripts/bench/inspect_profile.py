"""Inspect in-process, measured by what does not move with the machine's load: instructions, and profiles.

Run from the repository root, as a module::

    .venv/bin/python -m scripts.bench.inspect_profile cpu                  # CPU ms per request, inspect and floor
    .venv/bin/python -m scripts.bench.inspect_profile profile 10000        # pyinstrument tree of 5 inspects
    .venv/bin/python -m scripts.bench.inspect_profile cprofile 10000       # cProfile (process time), by own time
    .venv/bin/python -m scripts.bench.inspect_profile instructions 10000   # one inspect's instructions (valgrind)
    .venv/bin/python -m scripts.bench.inspect_profile instructions 1000 --floor
    .venv/bin/python -m scripts.bench.inspect_profile cprofile 1000 --try  # a try with a new turn

The first run seeds the benchmark's agent and sessions of 1,000, 10,000 and
50,000 messages (``scripts/bench/history.py``) into an embedded PostgreSQL in
``--data`` (kept, so later runs and other source trees reuse it; ``--tree``
runs another checkout's code on the same data, for a before/after). Requests go
through the Flask test client, as one gunicorn worker serves them: the collector
settled after a warm-up (``wsgi.py``) and its pass run after each answer (``gunicorn.conf.py``), the offline provider. ``--try`` sends the
benchmark's try (a new user turn) instead of the inspect; the profilers then run
the try pool's call on the request's thread, so they see it. ``instructions``
reruns this script under valgrind's callgrind, collecting only around one
request after a warm-up one (a three-line C helper, compiled with ``cc``, starts
and stops the collection); the count is the same whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hango import serving_collector
from hango.config import REPO_ROOT
from hango.db.embedded import EmbeddedPostgres
from scripts.bench.hango_server import hango_command, hango_env
from scripts.bench.inspector import TRY_MESSAGE

SIZES = (1_000, 10_000, 50_000)
CPU_REQUESTS = {1_000: 20, 10_000: 5, 50_000: 2}
HELPER = """#include <valgrind/callgrind.h>
void start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_STOP_INSTRUMENTATION; }
"""


def seeded(data: Path) -> tuple[EmbeddedPostgres, str, dict[str, Any]]:
    """The embedded database in ``data`` (seeded on first use), its URL, the principal and session ids."""
    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o755)
    postgres = EmbeddedPostgres(data)
    url = postgres.acquire()
    meta = data / "sessions.json"
    env = hango_env(data, 0)
    hango_command(env, "db", "upgrade")  # a kept database follows the tree's migrations
    if not meta.exists():
        from hango.db import make_engine
        from hango.store import TenantStore
        from scripts.bench.history import add_agent, add_session

        boot = ("admin", "bootstrap", "--tenant", "Bench", "--email", "bench@bench.test", "--json")
        principal = json.loads(hango_command(env, *boot, "--rate-limit", "10000000"))
        engine = make_engine(url)
        with engine.begin() as conn:
            store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
            agent = add_agent(store, uuid.UUID(principal["user_id"]))
            owner = uuid.UUID(principal["user_id"])
            ids = {n: add_session(store, agent.id, owner, n, seed=n, summary=False).id for n in SIZES}
        engine.dispose()
        meta.write_text(json.dumps({"principal": principal, "sessions": ids}))
    return postgres, url, json.loads(meta.read_text())


def requester(url: str, meta: dict[str, Any], tried: bool = False) -> Callable[[int, bool], bytes]:
    """``send(size, floor)``: one inspect (or the floor's ``GET .../messages``) of the session of ``size``.

    With ``tried``, the inspect is a try instead: ``POST .../context/try`` with the benchmark's new turn.
    """
    from hango.app import create_app

    client = create_app({"database_url": url}).test_client()
    headers = {"Authorization": f"Bearer {meta['principal']['api_key']}"}

    def send(size: int, floor: bool) -> bytes:
        session = meta["sessions"][str(size)]
        path = f"/v1/sessions/{session}/" + ("messages?limit=10000" if floor else "context")
        if tried and not floor:
            answer = client.post(path + "/try", headers=headers, json={"message": TRY_MESSAGE})
        else:
            answer = client.get(path, headers=headers)
        assert answer.status_code == 200, answer.data[:300]
        return answer.data

    return send


def between_requests(send: Callable[[int, bool], bytes]) -> Callable[[int, bool], bytes]:
    """``send``, then the collector's pass a gunicorn worker runs once an answer is written (counted)."""

    def sent(size: int, floor: bool) -> bytes:
        body = send(size, floor)
        serving_collector.between_requests()
        return body

    return sent


def cpu(send: Callable[[int, bool], bytes]) -> None:
    """CPU ms per request (the minimum, and the median), inspect and floor interleaved, per size."""
    for size, count in CPU_REQUESTS.items():
        inspects, floors = [], []
        for _ in range(count):
            started = time.process_time()
            body = send(size, False)
            inspects.append((time.process_time() - started) * 1000)
            if size <= 10_000:  # the floor reads at most 10,000 messages
                started = time.process_time()
                send(size, True)
                floors.append((time.process_time() - started) * 1000)
        floor = f"floor {min(floors):7.1f} ms, ratio {min(inspects) / min(floors):.2f}" if floors else ""
        print(
            f"{size:>6}: inspect {min(inspects):7.1f} ms (median {statistics.median(inspects):7.1f}), "
            f"{min(inspects) * 1000 / size:5.1f} µs a message, {len(body) / size:.0f} bytes a message; {floor}"
        )


def instructions(args: argparse.Namespace) -> int:
    """Rerun this script under callgrind around one request; print its instruction count."""
    seeded(Path(args.data))[0].release()  # seeded at full speed, not under valgrind
    with tempfile.TemporaryDirectory() as folder:
        helper = Path(folder) / "callgrind_toggle.so"
        source = Path(folder) / "callgrind_toggle.c"
        source.write_text(HELPER)
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", helper, source], check=True)
        # this file by path: ``--tree`` (another checkout, for a before/after) may not have it
        argv = [sys.executable, __file__, "one", str(args.size), "--data", args.data]
        argv += ["--try"] if args.tried else []
        valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no"]
        valgrind.append(f"--callgrind-out-file={folder}/callgrind.out")
        env = {**os.environ, "PYTHONPATH": str(args.tree), "HANGO_CALLGRIND_HELPER": str(helper)}
        done = subprocess.run(
            [*valgrind, *argv, *(["--floor"] if args.floor else [])],
            cwd=args.tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        print(done.stderr[-2000:], file=sys.stderr)
        return 1
    what = "floor" if args.floor else "inspect"
    print(f"{what} {args.size}: {int(found.group(1)):,} instructions ({args.tree})")
    return 0


def inline_try_calls() -> None:
    """Run the try pool's calls on the request's thread, where the profilers look (not the hand-off)."""
    from hango.try_pool import TryPool

    TryPool.run = lambda self, call, deadline: call()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["cpu", "profile", "cprofile", "instructions", "one"])
    parser.add_argument("size", type=int, nargs="?", default=10_000, choices=SIZES)
    parser.add_argument("--floor", action="store_true", help="the floor's request instead of inspect")
    parser.add_argument(
        "--try", dest="tried", action="store_true", help="a try with a new turn, not an inspect"
    )
    parser.add_argument("--data", default="/tmp/hango-inspect-profile", help="the kept embedded database")
    parser.add_argument("--tree", type=Path, default=REPO_ROOT, help="the source tree to run (instructions)")
    args = parser.parse_args(argv)
    if args.mode == "instructions":
        return instructions(args)
    postgres, url, meta = seeded(Path(args.data))
    try:
        if args.tried and args.mode in ("profile", "cprofile", "one"):
            inline_try_calls()
        send = requester(url, meta, args.tried)
        send(args.size, args.floor)  # the warm-up: code paths, caches, the principal's first load
        serving_collector.settle()  # as wsgi.py does once the app is loaded
        send = between_requests(send)  # and as gunicorn.conf.py's post_request does after each answer
        if args.mode == "cpu":
            cpu(send)
        elif args.mode == "one":  # under callgrind (``instructions``): collect around one request
            helper = ctypes.CDLL(os.environ["HANGO_CALLGRIND_HELPER"])
            helper.start()
            send(args.size, args.floor)
            helper.stop()
        elif args.mode == "profile":
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005)
            with profiler:
                for _ in range(5):
                    send(args.size, args.floor)
            print(profiler.output_text(unicode=True, time="percent_of_total"))
        else:
            profile = cProfile.Profile(time.process_time)
            profile.runcall(lambda: [send(args.size, args.floor) for _ in range(3)])
            pstats.Stats(profile).sort_stats("tottime").print_stats(40)
    finally:
        postgres.release()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
