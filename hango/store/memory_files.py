"""Queries on ``memory_files``: an agent's memory sources, addressed by ``/memories/...`` paths."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager

import sqlalchemy as sa

from hango.db.schema import memory_files
from hango.errors import Unprocessable
from hango.paths import MAX_PATH_CHARS, PathRefused, path_text
from hango.store.base import Scoped
from hango.store.pages import Page, page_by_key
from hango.store.session_files import files_under, put_file, stream_files_under

MEMORY_ROOT = "/memories/"


def memory_path(raw: str) -> str:
    """``raw`` as a ``/memories/...`` path in NFC; raises ``Unprocessable`` (``invalid_path``) when it cannot be one."""
    path = "/" + raw.lstrip("/")
    if not path.startswith(MEMORY_ROOT):
        path = MEMORY_ROOT.rstrip("/") + path
    try:
        path = path_text(path)
    except PathRefused as exc:
        problem = str(exc)
    else:
        if all(segment not in ("", ".", "..") for segment in path.removeprefix(MEMORY_ROOT).split("/")):
            return path
        problem = "a memory path has no empty, '.' or '..' segments"
    raise Unprocessable(problem, code="invalid_path", details={"path": raw[:MAX_PATH_CHARS]})


def _for_prompt_statement() -> sa.Select:
    """``MemoryFiles.for_prompt``'s statement, built once, its values bound at execution
    (``docs/performance.md``: building an inspect's statements cost more than running them)."""
    c = memory_files.c
    content = sa.func.left(c.content, sa.bindparam("the_chars", type_=sa.Integer)).label("content")
    return (
        sa.select(c.path, content)
        .where(
            c.tenant_id == sa.bindparam("the_tenant", type_=c.tenant_id.type),
            c.agent_id == sa.bindparam("the_agent", type_=c.agent_id.type),
        )
        .order_by(c.path)
        .limit(sa.bindparam("the_files", type_=sa.Integer))
    )


_FOR_PROMPT = _for_prompt_statement()


class MemoryFiles(Scoped):
    table = memory_files

    def page(self, agent_id: uuid.UUID, cursor: str | None, limit: int) -> Page:
        """A page of the agent's memory files in path order: path, length and time, not content."""
        query = sa.select(
            memory_files.c.path,
            sa.func.length(memory_files.c.content).label("chars"),
            memory_files.c.updated_at,
        ).where(self.where(memory_files.c.agent_id == agent_id))
        return page_by_key(self.conn, query, memory_files.c.path, cursor, limit)

    def for_prompt(self, agent_id: uuid.UUID, max_files: int, max_chars: int) -> dict[str, str]:
        """The agent's first ``max_files`` files by path, each cut to ``max_chars + 1`` characters, in one query.

        One character more than the budget, so the caller can tell a file that fits from one it must cut.
        """
        values = {"the_tenant": self.tenant_id, "the_agent": agent_id}
        values.update(the_chars=max_chars + 1, the_files=max_files)
        return {row.path: row.content for row in self.conn.execute(_FOR_PROMPT, values)}

    def under(self, agent_id: uuid.UUID, folder: str, *, content: bool = True) -> list[sa.Row]:
        """The agent's memory files at or inside ``folder``, by path, in one query."""
        return files_under(self, memory_files.c.agent_id == agent_id, folder, content=content)

    def stream_under(
        self, agent_id: uuid.UUID, folder: str
    ) -> AbstractContextManager[Iterator[tuple[str, str]]]:
        """The agent's memory files at or inside ``folder`` with their content, streamed."""
        return stream_files_under(self, memory_files.c.agent_id == agent_id, folder)

    def get(self, agent_id: uuid.UUID, path: str) -> sa.Row | None:
        """The agent's memory file at ``path`` with its content, or None."""
        query = self.select(memory_files.c.agent_id == agent_id, memory_files.c.path == path)
        return self.conn.execute(query).first()

    def put(self, agent_id: uuid.UUID, path: str, content: str) -> sa.Row:
        """Create or replace the memory file at ``path``."""
        return put_file(self, "agent_id", agent_id, path, content)

    def delete(self, agent_id: uuid.UUID, path: str) -> bool:
        """Delete the agent's memory file at ``path``; False when there was none."""
        return self.delete_rows(memory_files.c.agent_id == agent_id, memory_files.c.path == path) == 1
