"""``hango worker``: a queue worker that runs queued runs (as many at once as its concurrency)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os

from hango.cli.common import config_or_exit, fail, migrated_engine
from hango.db import migrate


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("worker", help="run a queue worker: it runs the agent on queued runs")
    parser.add_argument(
        "--concurrency", type=int, default=None, help="runs at once (default HANGO_WORKER_CONCURRENCY)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hango import telemetry
    from hango.agent.deps import Deps
    from hango.providers import SDKS, ProviderSettings, load_sdks
    from hango.worker import run_worker

    config = config_or_exit()
    if args.concurrency is not None:
        if args.concurrency < 1:
            return fail("--concurrency must be at least 1", 2)
        config = dataclasses.replace(config, worker_concurrency=args.concurrency)
    # scripts/run sets HANGO_LOG_LEVEL=WARNING: a person running hango reads the URL and keys, not the
    # worker's start-up lines; an operator's default is INFO.
    level = os.environ.get("HANGO_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        with migrated_engine(config) as engine:
            config = dataclasses.replace(
                config, database_url=engine.url.render_as_string(hide_password=False)
            )
            telemetry.setup(config, SDKS)
            load_sdks(ProviderSettings.from_config(config))  # no run pays for the import
            logging.getLogger("hango.worker").info("hango worker: %d runs at once", config.worker_concurrency)
            run_worker(Deps(engine, config))
    except migrate.SchemaNotCurrent as exc:
        return fail(str(exc))
    return 0
