"""``hango sessions list|create|show``: sessions through the public API."""

from __future__ import annotations

import argparse
from typing import Any

from hango.cli import client
from hango.cli.client import Client
from hango.cli.tables import print_fields, print_page

COLUMNS = (("id", "id"), ("agent", "agent_id"), ("title", "title"), ("created", "created_at"))
FIELDS = ("id", "agent_id", "owner_id", "title", "created_at")


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``hango sessions`` and its actions."""
    parser = commands.add_parser("sessions", help="list, create and show sessions (API client)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = client.add_command(
        actions, "list", "list your sessions (all, for owners and admins)", list_sessions, show_sessions
    )
    listing.add_argument("--agent", help="only this agent's sessions")
    client.add_page_options(listing)
    create = client.add_command(
        actions, "create", "start a session with an agent", create_session, show_session
    )
    create.add_argument("--agent", required=True, help="the agent's id")
    create.add_argument("--title", default="")
    show = client.add_command(actions, "show", "show one session", get_session, show_session)
    show.add_argument("session_id")


def list_sessions(api: Client, args: argparse.Namespace) -> Any:
    """One page of the sessions the caller may see."""
    params = {"agent_id": args.agent, "limit": args.limit, "cursor": args.cursor}
    return api.request("GET", "/v1/sessions", params=params)


def create_session(api: Client, args: argparse.Namespace) -> Any:
    """Start a session owned by the caller."""
    return api.request("POST", "/v1/sessions", body={"agent_id": args.agent, "title": args.title})


def get_session(api: Client, args: argparse.Namespace) -> Any:
    """One session by id."""
    return api.request("GET", f"/v1/sessions/{args.session_id}")


def show_sessions(page: dict[str, Any]) -> None:
    """A page of sessions as a table."""
    print_page(page, COLUMNS)


def show_session(session: dict[str, Any]) -> None:
    """One session's fields."""
    print_fields(session, FIELDS)
