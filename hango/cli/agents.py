"""``hango agents list|create|show``: agents through the public API."""

from __future__ import annotations

import argparse
from typing import Any

from hango.cli import client
from hango.cli.client import Client
from hango.cli.tables import print_fields, print_page

COLUMNS = (("id", "id"), ("name", "name"), ("model", "model"), ("tools", "tools"), ("created", "created_at"))
FIELDS = ("id", "name", "owner_id", "model", "tools", "context_window", "system_prompt", "created_at")


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``hango agents`` and its actions."""
    parser = commands.add_parser("agents", help="list, create and show agents (API client)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = client.add_command(actions, "list", "list the tenant's agents", list_agents, show_agents)
    client.add_page_options(listing)
    create = client.add_command(actions, "create", "create an agent you own", create_agent, show_agent)
    create.add_argument("--name", required=True)
    create.add_argument("--model", help="<provider>/<model>, e.g. offline/echo (the server's default)")
    create.add_argument("--system-prompt", help="the agent's own instructions")
    create.add_argument("--tool", action="append", dest="tools", help="enable a tool (repeat); default: all")
    create.add_argument("--context-window", type=int, help="tokens the model accepts")
    show = client.add_command(actions, "show", "show one agent", get_agent, show_agent)
    show.add_argument("agent_id")


def list_agents(api: Client, args: argparse.Namespace) -> Any:
    """One page of the tenant's agents."""
    return api.request("GET", "/v1/agents", params={"limit": args.limit, "cursor": args.cursor})


def create_agent(api: Client, args: argparse.Namespace) -> Any:
    """Create an agent from the options that were given."""
    options = {
        "name": args.name,
        "model": args.model,
        "system_prompt": args.system_prompt,
        "tools": args.tools,
        "context_window": args.context_window,
    }
    return api.request("POST", "/v1/agents", body={k: v for k, v in options.items() if v is not None})


def get_agent(api: Client, args: argparse.Namespace) -> Any:
    """One agent by id."""
    return api.request("GET", f"/v1/agents/{args.agent_id}")


def show_agents(page: dict[str, Any]) -> None:
    """A page of agents as a table."""
    print_page(page, COLUMNS)


def show_agent(agent: dict[str, Any]) -> None:
    """One agent's fields."""
    print_fields(agent, FIELDS)
