"""Queries on ``messages``: a session's history, numbered by ``seq`` from 1 and never reused."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from hango.db.schema import messages, sessions
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, cut_page


@dataclass(frozen=True)
class ToolUsage:
    """Which tools an agent's recent model answers called, over how many answers, and its session count."""

    called: frozenset[str]
    answers: int
    sessions: int


def _history_statement() -> sa.Select:
    """``Messages.history``'s statement, built once, the tenant, session and seq bound at execution
    (``docs/performance.md``: an inspect's statements took more instructions to build than to run)."""
    c = messages.c
    query = sa.select(c.seq, c.role, c.content, c.tokens, c.estimator_version, c.content_hash)
    wanted = (
        c.tenant_id == sa.bindparam("the_tenant", type_=c.tenant_id.type),
        c.session_id == sa.bindparam("the_session", type_=c.session_id.type),
        c.seq > sa.bindparam("the_seq", type_=c.seq.type),
    )
    return query.where(sa.and_(*wanted)).order_by(c.seq)


_HISTORY = _history_statement()


class Messages(Scoped):
    table = messages

    def page(self, session_id: uuid.UUID, after_seq: int, limit: int) -> Page:
        """Up to ``limit`` messages with ``seq > after_seq``; the cursor is the last seq."""
        query = self.select(messages.c.session_id == session_id, messages.c.seq > after_seq)
        rows = self.conn.execute(query.order_by(messages.c.seq).limit(limit + 1)).all()
        return cut_page(rows, limit, lambda row: str(row.seq))

    def history(self, session_id: uuid.UUID, after_seq: int = 0) -> Iterator[sa.Row]:
        """The session's messages with ``seq > after_seq`` in ``seq`` order, as a run reads them.

        Each row holds, in this order (the loader unpacks them), ``seq``, ``role``, ``content``,
        the stored estimate (``tokens``, ``estimator_version``) and the ledger's ``content_hash``. A compacted session is read from its summary's ``through_seq``
        on (an index range), so the rows read follow what the next call carries, never the
        messages the summary covers. Rows are decoded as they are iterated, so iterate while the
        connection is open. A caller that turns each row into its own objects then never holds the
        whole decoded history twice, which spares the garbage collector most of its work on long
        sessions; leaving out the ids and times saves parsing a UUID and a timestamp per row
        (``docs/performance.md``).
        """
        values = {"the_tenant": self.tenant_id, "the_session": session_id, "the_seq": after_seq}
        return iter(self.conn.execute(_HISTORY, values))

    def store_estimates(self, session_id: uuid.UUID, tokens: dict[int, int], estimator_version: int) -> None:
        """Store the token estimate of each message (by seq) in one statement, whatever their number."""
        estimates = (
            sa.func.unnest(
                sa.literal(list(tokens), ARRAY(sa.Integer)),
                sa.literal(list(tokens.values()), ARRAY(sa.Integer)),
            )
            .table_valued("seq", "tokens")
            .render_derived(name="estimates")
        )
        self.conn.execute(
            sa.update(messages)
            .where(self.where(messages.c.session_id == session_id, messages.c.seq == estimates.c.seq))
            .values(tokens=estimates.c.tokens, estimator_version=estimator_version)
        )

    def append(
        self,
        session_id: uuid.UUID,
        role: str,
        content: list[dict[str, Any]],
        run_id: uuid.UUID | None = None,
        *,
        tokens: int | None = None,
        estimator_version: int | None = None,
        content_hash: str | None = None,
    ) -> sa.Row:
        """Store the session's next message (with its token estimate and ledger hash when given).

        The seq comes from the session's counter (``sessions.last_seq``), which only grows, in the same
        transaction as the insert: a seq names one message forever, even when a failed run removes the
        message it stored. The counter's update takes the session row's ``FOR NO KEY UPDATE`` lock: it
        serializes appenders but lets the call ledger's rows reference the session meanwhile (a
        subagent's calls are recorded while the turn is open).
        """
        seq = self._take_seqs(session_id, 1)
        return self.insert_row(
            id=new_id(),
            session_id=session_id,
            seq=seq,
            role=role,
            content=content,
            run_id=run_id,
            tokens=tokens,
            estimator_version=estimator_version,
            content_hash=content_hash,
        )

    def append_many(
        self,
        session_id: uuid.UUID,
        items: Sequence[tuple[str, list[dict[str, Any]]]],
        columns: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Store ``(role, content)`` messages in one insert (seeding, benchmarks), numbered like ``append``.

        ``columns`` holds each message's other stored values (its estimate, its ledger hash) when the
        caller has them; without it the messages are stored unestimated.
        """
        last = self._take_seqs(session_id, len(items))
        rows = [
            {
                "id": new_id(),
                "tenant_id": self.tenant_id,
                "session_id": session_id,
                "seq": seq,
                "role": r,
                "content": c,
                **more,
            }
            for seq, (r, c), more in zip(
                range(last - len(items) + 1, last + 1), items, columns or [{}] * len(items), strict=True
            )
        ]
        self.conn.execute(sa.insert(messages), rows)

    def _take_seqs(self, session_id: uuid.UUID, count: int) -> int:
        """Move the session's counter on by ``count`` and return its new value (the last seq taken)."""
        return self.conn.execute(
            sa.update(sessions)
            .where(sessions.c.tenant_id == self.tenant_id, sessions.c.id == session_id)
            .values(last_seq=sessions.c.last_seq + count)
            .returning(sessions.c.last_seq)
        ).scalar_one()

    def of_run(self, run_id: uuid.UUID) -> list[sa.Row]:
        """The messages a run stored, in ``seq`` order."""
        return list(
            self.conn.execute(self.select(messages.c.run_id == run_id).order_by(messages.c.seq)).all()
        )

    def of_seqs(self, session_id: uuid.UUID, seqs: list[int]) -> list[sa.Row]:
        """The seq, role and content of the session's messages with these seqs (a past call's, bounded by
        its parts), in ``seq`` order."""
        c = messages.c
        query = sa.select(c.seq, c.role, c.content).where(
            c.tenant_id == self.tenant_id, c.session_id == session_id, c.seq.in_(seqs)
        )
        return list(self.conn.execute(query.order_by(c.seq)))

    def delete(self, session_id: uuid.UUID, seq: int) -> bool:
        """Remove one message (a run's rollback removes its messages with ``runs.unanswered_messages``)."""
        return self.delete_rows(messages.c.session_id == session_id, messages.c.seq == seq) == 1

    def tool_usage(self, agent_id: uuid.UUID, window: int) -> ToolUsage:
        """The tools called in the agent's last ``window`` assistant messages (over all its sessions), in one statement."""
        of_agent = (sessions.c.tenant_id == self.tenant_id, sessions.c.agent_id == agent_id)
        recent = (
            sa.select(messages.c.content)
            .join(sessions, sessions.c.id == messages.c.session_id)
            .where(self.where(messages.c.role == "assistant"), *of_agent)
            .order_by(messages.c.created_at.desc())
            .limit(window)
            .cte("recent")
        )
        block = (
            sa.func.jsonb_array_elements(recent.c.content)
            .table_valued(sa.column("value", JSONB))
            .alias("block")
        )
        names = (
            sa.select(sa.func.array_agg(sa.distinct(block.c.value["name"].astext)))
            .select_from(recent)
            .join(block, sa.true())
            .where(block.c.value["type"].astext == "tool_use")
        )
        row = self.conn.execute(
            sa.select(
                names.scalar_subquery(),
                sa.select(sa.func.count()).select_from(recent).scalar_subquery(),
                sa.select(sa.func.count()).select_from(sessions).where(*of_agent).scalar_subquery(),
            )
        ).one()
        return ToolUsage(frozenset(row[0] or ()), row[1], row[2])
