"""The ``hango`` command: server-side commands and HTTP clients of the public API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hango.cli import admin, agents, chat, context, database, demo, messages, proxy, serve, sessions

COMMANDS = (serve, proxy, database, admin, demo, agents, sessions, messages, chat, context)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hango", description="hango: a multi-tenant agent harness server")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``hango`` command and return its exit code."""
    args = build_parser().parse_args(argv)
    return args.handler(args)


def entry() -> None:
    """The console-script entry point."""
    sys.exit(main())
