"""``hango chat --session ID "text"``: send a message, follow the queued run's steps, print the reply.

The steps go to stderr as they happen (``hango.cli.progress``), the reply to stdout.
Ctrl-C cancels the run. A run that failed exits 1 with its error, like any API error.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from hango.cli import client
from hango.cli.client import Client
from hango.cli.messages import describe
from hango.cli.progress import follow, succeeded


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``hango chat``."""
    parser = client.add_command(
        commands, "chat", "send a message to a session's agent (API client)", send, show_run
    )
    parser.add_argument("--session", required=True, help="the session's id")
    parser.add_argument("text", help="the message")


def send(api: Client, args: argparse.Namespace) -> Any:
    """Queue the run on the user message and follow it to its end: ``{"run", "messages"}``."""
    queued = api.request("POST", f"/v1/sessions/{args.session}/messages", body={"content": args.text})
    run = succeeded(follow(api, queued))
    messages = run.pop("messages")
    return {"run": run, "messages": messages}


def show_run(result: dict[str, Any]) -> None:
    """The run's new messages after the user's own, then its status."""
    for message in result["messages"][1:]:
        print(f"#{message['seq']} {message['role']}")
        for block in message["content"]:
            print(textwrap.indent(describe(block), "  "))
    run = result["run"]
    print(f"(run {run['id']}: {run['status']}, {run['stop_reason']})")
