"""``hango runs show|events|cancel RUN``: one run, its steps and cancelling it (API client)."""

from __future__ import annotations

import argparse
from typing import Any

from hango.cli import client
from hango.cli.client import Client
from hango.cli.progress import describe_step
from hango.cli.tables import print_fields

FIELDS = ("id", "session_id", "status", "state", "stop_reason", "queued_at", "started_at", "finished_at")


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``hango runs`` and its actions."""
    parser = commands.add_parser("runs", help="show a run, its steps, or cancel it (API client)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = client.add_command(actions, "show", "show one run", get_run, show_run)
    show.add_argument("run_id")
    events = client.add_command(actions, "events", "list a run's steps in order", get_events, show_events)
    events.add_argument("run_id")
    events.add_argument("--after", type=int, default=0, help="only steps after this one")
    cancel = client.add_command(actions, "cancel", "cancel a queued or running run", cancel_run, show_run)
    cancel.add_argument("run_id")


def get_run(api: Client, args: argparse.Namespace) -> Any:
    """One run, with its messages once it ended."""
    return api.request("GET", f"/v1/runs/{args.run_id}")


def get_events(api: Client, args: argparse.Namespace) -> Any:
    """The run's steps after ``--after``."""
    return api.request("GET", f"/v1/runs/{args.run_id}/events", params={"after": args.after})


def cancel_run(api: Client, args: argparse.Namespace) -> Any:
    """Ask the server to cancel the run."""
    return api.request("POST", f"/v1/runs/{args.run_id}/cancel")


def show_run(run: dict[str, Any]) -> None:
    """The run's fields, and its error when it failed."""
    print_fields(run, FIELDS)
    if run.get("error"):
        print(f"error: {run['error']['message']} ({run['error']['code']})")


def show_events(page: dict[str, Any]) -> None:
    """``#seq kind: description`` per step, then the run's status."""
    for step in page["items"]:
        print(f"#{step['seq']} {describe_step(step)}")
    print(f"(run {page['status']}; next: --after {page['next_after']})")
