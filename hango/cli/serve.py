"""``hango serve``: gunicorn sync workers on the configured or embedded database, and queue workers.

``--queue-workers`` (``HANGO_QUEUE_WORKERS``, default 1) ``hango worker`` processes run
beside gunicorn on the same database; Ctrl-C (or SIGTERM) stops them all. A web node of a
deployment whose workers run elsewhere passes ``--queue-workers 0``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from hango.cli.common import config_or_exit, fail
from hango.config import REPO_ROOT
from hango.db import attached_database, make_engine, migrate


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("serve", help="run the hango server (gunicorn)")
    parser.add_argument("--host", default=os.environ.get("HANGO_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("HANGO_PORT", "8080")))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("HANGO_WORKERS", "2")))
    parser.add_argument("--queue-workers", type=int, default=int(os.environ.get("HANGO_QUEUE_WORKERS", "1")))
    parser.set_defaults(handler=run)


def gunicorn_argv(args: argparse.Namespace, worker_timeout: int) -> list[str]:
    """The gunicorn command line for ``wsgi:app``."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--workers",
        str(args.workers),
        "--bind",
        f"{args.host}:{args.port}",
        "--timeout",
        str(worker_timeout),
        "--no-control-socket",
        "wsgi:app",
    ]


def run(args: argparse.Namespace) -> int:
    config = config_or_exit()
    with attached_database(config) as url:
        engine = make_engine(url)
        try:
            migrate.check_current(engine)
        except migrate.SchemaNotCurrent as exc:
            return fail(str(exc))
        finally:
            engine.dispose()
        env = {**os.environ, "HANGO_DATABASE_URL": url}
        server = subprocess.Popen(gunicorn_argv(args, config.worker_timeout), cwd=REPO_ROOT, env=env)
        worker = [sys.executable, "-m", "hango", "worker"]
        workers = [subprocess.Popen(worker, cwd=REPO_ROOT, env=env) for _ in range(args.queue_workers)]
        return _wait(server, workers)


def _wait(server: subprocess.Popen, workers: list[subprocess.Popen]) -> int:
    """Wait for gunicorn, passing SIGTERM/SIGINT on to it and the queue workers so all stop gracefully."""
    children = [server, *workers]

    def forward(signum: int, _frame: object) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = server.wait()
        forward(signal.SIGTERM, None)  # gunicorn stopped: its queue workers go too
        for child in workers:
            child.wait()
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
