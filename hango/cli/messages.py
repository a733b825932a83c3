"""``hango messages --session ID``: a session's history through the public API."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from hango.cli import client
from hango.cli.client import Client


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``hango messages``."""
    parser = client.add_command(
        commands, "messages", "print a session's messages in order (API client)", list_messages, show_messages
    )
    parser.add_argument("--session", required=True, help="the session's id")
    parser.add_argument("--after-seq", type=int, default=None, help="only messages after this seq")
    parser.add_argument("--limit", type=int, default=None, help="at most this many (1-10000, default 100)")


def list_messages(api: Client, args: argparse.Namespace) -> Any:
    """One page of the session's messages in seq order."""
    params = {"after_seq": args.after_seq, "limit": args.limit}
    return api.request("GET", f"/v1/sessions/{args.session}/messages", params=params)


def describe(block: dict[str, Any]) -> str:
    """One content block as text: its text, or a tag for tool calls and results."""
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        return f"[tool_use {block.get('name')} {block.get('id')}]"
    if kind == "tool_result":
        error = " error" if block.get("is_error") else ""
        return f"[tool_result {block.get('tool_use_id')}{error}]"
    return f"[{kind}]"


def show_messages(page: dict[str, Any]) -> None:
    """``#seq role`` then the message's blocks, one per line."""
    for message in page["items"]:
        print(f"#{message['seq']} {message['role']}")
        for block in message["content"]:
            print(textwrap.indent(describe(block), "  "))
    if page.get("next_cursor") is not None:
        print(f"(more: --after-seq {page['next_cursor']})")
