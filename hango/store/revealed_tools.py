"""Queries on ``revealed_tools``: the deferred tools a session's model found with ``tool_search``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from hango.db.schema import revealed_tools
from hango.store.base import Scoped

PartID = str  # a ``tool:`` part id (``hango.agent.parts``)


@dataclass(frozen=True)
class RevealedTool:
    """A deferred tool the model found: its part, the name the model calls it by, and the seq of the
    assistant message whose ``tool_search`` call revealed it (sent from the next call on)."""

    part: PartID
    name: str
    seq: int


class RevealedTools(Scoped):
    table = revealed_tools

    def for_session(self, session_id: uuid.UUID) -> list[RevealedTool]:
        """The session's revealed tools, by the seq that revealed them, then by part."""
        c = revealed_tools.c
        query = sa.select(c.part, c.name, c.seq).where(self.where(c.session_id == session_id))
        return [RevealedTool(*row) for row in self.conn.execute(query.order_by(c.seq, c.part))]

    def reveal(
        self, session_id: uuid.UUID, tools: Sequence[tuple[PartID, str]], seq: int
    ) -> list[RevealedTool]:
        """Reveal ``tools`` (part, name) from ``seq`` on; the newly revealed ones, in part order (a tool
        already revealed keeps its first seq)."""
        if not tools:
            return []
        rows = [
            {"tenant_id": self.tenant_id, "session_id": session_id, "part": part, "name": name, "seq": seq}
            for part, name in dict(tools).items()
        ]
        c = revealed_tools.c
        stmt = (
            insert(revealed_tools)
            .values(rows)
            .on_conflict_do_nothing(index_elements=[c.session_id, c.part])
            .returning(c.part, c.name, c.seq)
        )
        return sorted((RevealedTool(*row) for row in self.conn.execute(stmt)), key=lambda t: t.part)

    def forget(self, session_id: uuid.UUID, parts: Iterable[PartID]) -> int:
        """Hide ``parts`` of the session again (deferred until found anew); how many were revealed."""
        parts = list(parts)
        if not parts:
            return 0
        c = revealed_tools.c
        return self.delete_rows(c.session_id == session_id, c.part.in_(parts))
