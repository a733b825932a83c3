"""Queries on ``audit_log``."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from hango.audit import is_action
from hango.db.schema import audit_log, users
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page

# Built once: a request's audit row costs its execution, not the building of its statement.
_INSERT = sa.insert(audit_log).returning(audit_log)


class Audit(Scoped):
    table = audit_log

    def record(
        self,
        action: str,
        object_type: str,
        object_id: Any,
        *,
        actor_user_id: uuid.UUID | None,
        api_key_id: uuid.UUID | None,
        detail: dict[str, Any] | None = None,
    ) -> sa.Row:
        """Write one audit row in the caller's transaction; ``detail`` holds no secrets or content."""
        if not is_action(action):
            raise ValueError(f"unknown audit action {action!r}")
        row = {
            "id": new_id(),
            "tenant_id": self.tenant_id,
            "actor_user_id": actor_user_id,
            "api_key_id": api_key_id,
            "action": action,
            "object_type": object_type,
            "object_id": None if object_id is None else str(object_id),
            "detail": detail or {},
        }
        return self.conn.execute(_INSERT, row).one()

    def page(self, cursor: str | None, limit: int, **filters: str | None) -> Page:
        """A page of the log, newest first, each row with its actor's email (``actor_email``, None for
        the system); ``filters`` match ``action``, ``object_type``, ``object_id``."""
        conditions = [audit_log.c[name] == value for name, value in filters.items() if value is not None]
        query = (
            sa.select(audit_log, users.c.email.label("actor_email"))
            .select_from(audit_log.outerjoin(users, users.c.id == audit_log.c.actor_user_id))
            .where(audit_log.c.tenant_id == self.tenant_id, *conditions)
        )
        return page(self.conn, query, audit_log, cursor, limit, newest_first=True)
