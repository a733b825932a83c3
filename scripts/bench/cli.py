"""Benchmark ``hango context show`` on the demo session against ``python -c "import requests"``.

Run from the repository root after the README's set-up, as a module::

    .venv/bin/python -m scripts.bench.cli             # 20 rounds, about a minute
    .venv/bin/python -m scripts.bench.cli --rounds 5

It seeds the demo (``hango demo``) into an embedded PostgreSQL in a temporary
folder, starts ``hango serve`` with 2 workers, and then times, in interleaved
pairs (their order alternating, so that machine drift hits both sides), the
wall time of a fresh ``.venv/bin/hango context show --session <demo>`` process
and of a fresh ``python -c "import requests"`` process: the floor of any client
command, which must import ``requests``. It prints a table of median and p90
milliseconds and their ratio; there is no target to fail, the figures go to
``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hango.config import REPO_ROOT
from scripts.bench.hango_server import database, hango_command, hango_env, serving

RATE_LIMIT = 10_000_000
HANGO = str(Path(sys.executable).with_name("hango"))


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    """One process's wall time from start to exit; it must succeed."""
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, check=True, timeout=60)
    return (time.perf_counter() - started) * 1000


def measure(rounds: int, show: list[str], env: dict[str, str]) -> dict[str, list[float]]:
    """``rounds`` interleaved pairs of the command and the floor, after one warm-up of each."""
    floor = [sys.executable, "-c", "import requests"]
    times: dict[str, list[float]] = {"context show": [], "import requests": []}
    wall_ms(show, env), wall_ms(floor, env)
    for index in range(rounds):
        pair = [("context show", show), ("import requests", floor)]
        for name, argv in pair if index % 2 == 0 else reversed(pair):
            times[name].append(wall_ms(argv, env))
    return times


def render(times: dict[str, list[float]]) -> str:
    rows = ["| process | median ms | p90 ms |", "|---|---:|---:|"]
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
        rows.append(f"| {name} | {statistics.median(values):.0f} | {p90:.0f} |")
    ratio = statistics.median(times["context show"]) / statistics.median(times["import requests"])
    return "\n".join([*rows, "", f"ratio (median context show / median import requests): {ratio:.2f}"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="interleaved pairs (default 20)")
    args = parser.parse_args(argv)
    with database(RATE_LIMIT) as (data_dir, url, principal):
        seeded = json.loads(hango_command(hango_env(data_dir, 0), "demo", "--json"))
        with serving(data_dir, url, principal, workers=2) as hango:
            env = {**os.environ, "HANGO_API_URL": hango.url, "HANGO_API_KEY": seeded["owner_key"]}
            show = [HANGO, "context", "show", "--session", seeded["session_id"]]
            times = measure(args.rounds, show, env)
    print(render(times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
