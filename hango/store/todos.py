"""Queries on ``sessions.todos``: the session's todo list that ``write_todos`` replaces."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from hango.db.schema import sessions
from hango.store.base import Scoped


class Todos(Scoped):
    table = sessions

    def get(self, session_id: uuid.UUID) -> list[dict[str, Any]] | None:
        """The session's todo list, or None when there is no such session."""
        query = sa.select(sessions.c.todos).where(self.where(sessions.c.id == session_id))
        return self.conn.execute(query).scalar_one_or_none()

    def set(self, session_id: uuid.UUID, todos: list[dict[str, Any]]) -> bool:
        """Replace the session's todo list; False when there is no such session."""
        return self.update_rows([sessions.c.id == session_id], todos=todos) is not None
