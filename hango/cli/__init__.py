"""The ``hango`` command: server-side commands and HTTP clients of the public API.

Each command lives in its own module, imported only when that command runs (all
of them for ``hango --help`` or a misspelt command): a client command such as
``hango context show`` loads ``requests`` and its own code, never SQLAlchemy,
Flask or the server.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# command name → module of hango.cli that registers it, in the order --help lists them
COMMANDS = {
    "serve": "serve",
    "worker": "worker",
    "nginx-conf": "proxy",
    "db": "database",
    "admin": "admin",
    "demo": "demo",
    "agents": "agents",
    "sessions": "sessions",
    "messages": "messages",
    "chat": "chat",
    "runs": "runs",
    "context": "context",
}


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for ``argv``: with only its command's module when ``argv`` names one, else every command."""
    parser = argparse.ArgumentParser(prog="hango", description="hango: a multi-tenant agent harness server")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    named = argv[0] if argv and argv[0] in COMMANDS else None
    for name, module in COMMANDS.items():
        if named in (None, name):
            importlib.import_module(f"hango.cli.{module}").register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``hango`` command and return its exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    return args.handler(args)


def entry() -> None:
    """The console-script entry point."""
    sys.exit(main())
