"""Letta's side of ``scripts/bench/letta.py``, run by ``.venv-letta``'s Python, never hango's.

It imports Letta only (not hango): ``scripts/bench/letta.py`` runs it as a
module, the repository root on ``PYTHONPATH`` (as a file, its folder would put
``scripts/bench/letta.py`` in the place of the ``letta`` package), in the run's
folder (Letta writes its OpenAPI schema where it runs), with ``LETTA_PG_URI``
and the offline environment set::

    .venv-letta/bin/python -m scripts.bench.letta_server schema
    .venv-letta/bin/python -m scripts.bench.letta_server serve --port 8283
    .venv-letta/bin/python -m scripts.bench.letta_server seed AGENT_ID MESSAGES.json

``schema`` creates Letta's tables from its ORM (the wheel ships no migrations;
its Docker image runs them from the source tree) after ``create extension
vector``, and the one default the ORM leaves to them: the messages'
``sequence_id`` from a sequence. ``serve`` runs Letta's FastAPI app under uvicorn, as ``letta server``
does, with one change: the start-up's ``nltk.download`` (a fetch from the
network that it catches when it fails) is a no-op, so nothing leaves the
machine. ``seed`` appends the messages of a JSON file (Letta's message records,
as ``letta_records`` in ``scripts/bench/letta.py`` maps them) to the agent's
in-context messages through Letta's own manager, in one transaction.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def schema() -> None:
    """Letta's tables on ``LETTA_PG_URI``, with the pgvector extension its ORM needs."""
    import sqlalchemy as sa
    from letta.database_utils import get_database_uri_for_context
    from letta.orm import Base

    engine = sa.create_engine(get_database_uri_for_context(os.environ["LETTA_PG_URI"], "sync"))
    with engine.begin() as conn:
        conn.execute(sa.text("create extension if not exists vector"))
    Base.metadata.create_all(engine)
    with engine.begin() as conn:  # what the ORM leaves to a migration: the messages' listing order
        conn.execute(sa.text("create sequence messages_sequence_id_seq owned by messages.sequence_id"))
        conn.execute(
            sa.text("alter table messages alter sequence_id set default nextval('messages_sequence_id_seq')")
        )
    engine.dispose()


def serve(port: int) -> None:
    """Letta's REST server on 127.0.0.1:``port`` (one uvicorn worker, Letta's default)."""
    import nltk
    import uvicorn

    nltk.download = lambda *args, **kwargs: True  # its data only serves message search, never measured
    uvicorn.run("letta.server.rest_api.app:app", host="127.0.0.1", port=port, access_log=False)


def message(record: dict, agent_id: str, created_at: dt.datetime):
    """One of Letta's message records as its ``Message`` schema."""
    from letta.schemas.letta_message_content import TextContent
    from letta.schemas.message import Message, ToolReturn
    from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall

    return Message(
        agent_id=agent_id,
        role=record["role"],
        content=[TextContent(text=text) for text in record["texts"]],
        name=record.get("name"),
        tool_calls=[ChatCompletionMessageToolCall(**call) for call in record["tool_calls"]] or None,
        tool_call_id=record.get("tool_call_id"),
        tool_returns=[ToolReturn(**returned) for returned in record["tool_returns"]] or None,
        created_at=created_at,
    )


async def seed(agent_id: str, records: list[dict]) -> int:
    """Append ``records`` to the agent's in-context messages; returns how many it holds now."""
    from letta.services.agent_manager import AgentManager
    from letta.services.user_manager import UserManager

    actor = await UserManager().get_default_actor_async()
    start = dt.datetime.now(dt.UTC)
    messages = [message(r, agent_id, start + dt.timedelta(milliseconds=i)) for i, r in enumerate(records)]
    agent = await AgentManager().append_to_in_context_messages_async(messages, agent_id=agent_id, actor=actor)
    return len(agent.message_ids)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("schema", help="create Letta's tables")
    served = commands.add_parser("serve", help="run Letta's REST server")
    served.add_argument("--port", type=int, required=True)
    seeded = commands.add_parser("seed", help="append messages to an agent's context")
    seeded.add_argument("agent_id")
    seeded.add_argument("records", type=Path)
    args = parser.parse_args(argv)
    if args.command == "schema":
        schema()
    elif args.command == "serve":
        serve(args.port)
    else:
        print(asyncio.run(seed(args.agent_id, json.loads(args.records.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
