"""``hango db upgrade|downgrade``: migrations on the configured or embedded database."""

from __future__ import annotations

import argparse

from hango.cli.common import config_or_exit
from hango.db import attached_database, make_engine, migrate


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("db", help="migrate the database")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = actions.add_parser("upgrade", help="migrate up (to the newest revision by default)")
    up.add_argument("revision", nargs="?", default="head")
    up.set_defaults(handler=run, step=migrate.upgrade)
    down = actions.add_parser("downgrade", help="migrate down (one revision by default)")
    down.add_argument("revision", nargs="?", default="-1")
    down.set_defaults(handler=run, step=migrate.downgrade)


def run(args: argparse.Namespace) -> int:
    with attached_database(config_or_exit()) as url:
        engine = make_engine(url)
        args.step(engine, args.revision)
        with engine.connect() as conn:
            print(f"database at migration {migrate.current_revision(conn) or 'base'}")
        engine.dispose()
    return 0
