"""Helpers for the runtime tests: one session driven through the HTTP API, and what it stored."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from werkzeug.test import TestResponse

from hango.db.schema import messages, session_files, session_summaries, usage_records
from hango.messages import Message, TextBlock, ToolUseBlock
from tests.support.clients import As


@dataclass(frozen=True)
class Chat:
    """One session of a fresh agent, talked to as the tenant's owner through the app under test."""

    who: As
    engine: sa.Engine
    agent_id: str
    session_id: str

    @property
    def tenant_id(self) -> uuid.UUID:
        return uuid.UUID(self.who.tenant_id)

    def say(self, text: str, key: str | None = None) -> TestResponse:
        """``POST /v1/sessions/{id}/messages``, with an ``Idempotency-Key`` when given."""
        headers = {"Idempotency-Key": key} if key else None
        return self.who.post_and_wait(self._path("messages"), json={"content": text}, headers=headers)

    def messages(self) -> list[dict[str, Any]]:
        """The stored history as the API lists it."""
        return self._items("messages", limit=10_000)

    def runs(self) -> list[dict[str, Any]]:
        """The session's runs as the API lists them, oldest first."""
        return self._items("runs", limit=100)

    def usage(self) -> list[tuple[str, str | None]]:
        """``(purpose, run_id)`` of every usage row of the session, in the order they were written."""
        query = (
            sa.select(usage_records.c.purpose, usage_records.c.run_id)
            .where(usage_records.c.session_id == uuid.UUID(self.session_id))
            .order_by(usage_records.c.created_at)
        )
        with self.engine.connect() as conn:
            return [(row.purpose, row.run_id and str(row.run_id)) for row in conn.execute(query)]

    def stored(self) -> dict[str, list[tuple]]:
        """Every row the session's history is made of (messages, summaries, files), to compare before/after."""
        ident = uuid.UUID(self.session_id)
        tables = {"messages": messages, "summaries": session_summaries, "files": session_files}
        with self.engine.connect() as conn:
            return {
                name: sorted(map(tuple, conn.execute(sa.select(t).where(t.c.session_id == ident))), key=repr)
                for name, t in tables.items()
            }

    def file(self, path: str) -> str | None:
        """A session file's content, or None."""
        query = sa.select(session_files.c.content).where(
            session_files.c.session_id == uuid.UUID(self.session_id), session_files.c.path == path
        )
        with self.engine.connect() as conn:
            return conn.execute(query).scalar()

    def _path(self, tail: str) -> str:
        return f"/v1/sessions/{self.session_id}/{tail}"

    def _items(self, tail: str, limit: int) -> list[dict[str, Any]]:
        response = self.who.get(self._path(tail), query_string={"limit": limit})
        assert response.status_code == 200, response.get_json()
        return response.get_json()["items"]


def tool_call(call_id: str, name: str, arguments: dict[str, Any], text: str = "") -> Message:
    """A scripted assistant answer that calls one tool (after ``text``, when given)."""
    return tool_calls((call_id, name, arguments), text=text)


def tool_calls(*calls: tuple[str, str, dict[str, Any]], text: str = "") -> Message:
    """A scripted assistant answer that calls several tools in one turn."""
    blocks = [TextBlock(text)] if text else []
    return Message("assistant", (*blocks, *(ToolUseBlock(*call) for call in calls)))


def shape(history: list[dict[str, Any]]) -> list[tuple[int, str, list[str]]]:
    """``(seq, role, block types)`` of each stored message: the outline a run left."""
    return [(m["seq"], m["role"], [b["type"] for b in m["content"]]) for m in history]
