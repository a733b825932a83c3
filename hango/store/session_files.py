"""Queries on ``session_files``: the virtual files one session's filesystem tools work on."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from hango.db.schema import session_files
from hango.store.base import Scoped


def files_under(sub: Scoped, owner: sa.ColumnElement[bool], folder: str, *, content: bool) -> list[sa.Row]:
    """``(path, content)`` of the owner's files at or inside ``folder`` of a path-keyed table, by path.

    One query; without ``content`` the rows carry an empty string, so a listing reads no file bodies.
    """
    path = sub.table.c.path
    body = sub.table.c.content if content else sa.literal("")
    inside = sa.or_(path == folder, sa.func.starts_with(path, folder.rstrip("/") + "/"))
    query = sa.select(path, body.label("content")).where(sub.where(owner, inside)).order_by(path)
    return list(sub.conn.execute(query))


# Rows a streaming read fetches at a time: a file holds at most about 1 MB, so a batch stays a few MB.
STREAM_BATCH = 4


@contextmanager
def stream_files_under(
    sub: Scoped, owner: sa.ColumnElement[bool], folder: str
) -> Iterator[Iterator[tuple[str, str]]]:
    """``(path, content)`` of the owner's files at or inside ``folder``, in code-point order of path.

    One query on a server-side cursor that fetches ``STREAM_BATCH`` rows at a time, so the
    reader holds one batch, never the whole folder; the cursor closes with the block.
    """
    path = sub.table.c.path
    inside = sa.or_(path == folder, sa.func.starts_with(path, folder.rstrip("/") + "/"))
    query = sa.select(path, sub.table.c.content).where(sub.where(owner, inside)).order_by(path.collate("C"))
    # Options on the statement: ``Connection.execution_options`` would change the connection itself.
    with sub.conn.execute(query.execution_options(yield_per=STREAM_BATCH)) as result:
        yield ((row.path, row.content) for row in result)


def put_file(sub: Scoped, owner: str, owner_id: uuid.UUID, path: str, content: str) -> sa.Row:
    """Create or replace the file at ``path`` of the row ``owner`` (``agent_id`` or ``session_id``) names."""
    table = sub.table
    stmt = (
        insert(table)
        .values({"tenant_id": sub.tenant_id, owner: owner_id, "path": path, "content": content})
        .on_conflict_do_update(
            index_elements=[owner, "path"],
            set_={"content": content, "updated_at": sa.func.now()},
            where=table.c.tenant_id == sub.tenant_id,
        )
        .returning(table)
    )
    return sub.conn.execute(stmt).one()


class SessionFiles(Scoped):
    table = session_files

    def get(self, session_id: uuid.UUID, path: str) -> sa.Row | None:
        query = self.select(session_files.c.session_id == session_id, session_files.c.path == path)
        return self.conn.execute(query).first()

    def put(self, session_id: uuid.UUID, path: str, content: str) -> sa.Row:
        """Create or replace the file at ``path``."""
        return put_file(self, "session_id", session_id, path, content)

    def under(self, session_id: uuid.UUID, folder: str, *, content: bool = True) -> list[sa.Row]:
        """The session's files at or inside ``folder``, by path, in one query."""
        return files_under(self, session_files.c.session_id == session_id, folder, content=content)

    def stream_under(
        self, session_id: uuid.UUID, folder: str
    ) -> AbstractContextManager[Iterator[tuple[str, str]]]:
        """The session's files at or inside ``folder`` with their content, streamed (``stream_files_under``)."""
        return stream_files_under(self, session_files.c.session_id == session_id, folder)
