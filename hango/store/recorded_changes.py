"""What was recorded between two calls of a session: the facts a diff's causes are read from (one query).

The interval runs from the earlier call's start to the later one's (``now`` for the next call);
each row is one recorded change, oldest first, as ``(at, what, detail, seq)``:

- ``context.override``, ``memory.delete``, ``agent.update``, ``skill.create|update|delete``: audit
  rows of the session or its agent (``detail`` as audited, never content);
- ``agent.mcp_attach``, ``agent.mcp_detach``: an MCP server attached to or detached from the agent;
  ``mcp_server.refresh`` and an attach to any agent whose reading of the server's tool list found a
  new hash (``detail.tools_changed``; ``detail.name`` the server);
- ``memory.write``: a memory file of the agent written (by the API or a run's tool), ``detail.path``;
- ``compaction``: a summary stored for the session, ``seq`` the last message it covers;
- ``rollback``: a run of the session that ended without keeping its turn (cancelled, failed,
  timed out), ``seq`` the last message kept when it ended;
- ``todos``: a run of the session changed its todo list (``write_todos``);
- ``reveal``: ``tool_search`` revealed a deferred tool in the session, ``detail.part`` the tool;
- ``call``: one of the two calls itself, ``detail`` its ``id`` and ``purpose``.
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from hango.store.base import Scoped

KEPT = ("completed", "max_turns", "quota_exhausted")  # a run that ended so keeps its turn

_BETWEEN = sa.text(
    """
WITH ends AS (
    SELECT id, started_at, purpose FROM model_calls
    WHERE tenant_id = :tenant AND session_id = :session AND id IN (:earlier, :later)
), bounds AS (
    SELECT min(started_at) AS since, CASE WHEN :next THEN now() ELSE max(started_at) END AS until FROM ends
)
SELECT a.created_at AS at, a.action AS what, a.detail AS detail, NULL::integer AS seq
FROM audit_log a, bounds b
WHERE a.tenant_id = :tenant AND a.created_at > b.since AND a.created_at <= b.until AND (
    (a.action = 'context.override' AND (
        (a.object_type = 'session' AND a.object_id = :session_text)
        OR (a.object_type = 'agent' AND a.object_id = :agent_text)))
    OR (a.action IN ('memory.delete', 'agent.update') AND a.object_id = :agent_text)
    OR (a.action IN ('skill.create', 'skill.update', 'skill.delete') AND a.detail->>'agent_id' = :agent_text)
    OR (a.action IN ('agent.mcp_attach', 'agent.mcp_detach') AND a.object_id = :agent_text)
    OR (a.action IN ('mcp_server.refresh', 'agent.mcp_attach') AND a.detail->>'tools_changed' = 'true'))
UNION ALL
SELECT m.updated_at, 'memory.write', jsonb_build_object('path', m.path), NULL
FROM memory_files m, bounds b
WHERE m.tenant_id = :tenant AND m.agent_id = :agent AND m.updated_at > b.since AND m.updated_at <= b.until
UNION ALL
SELECT s.created_at, 'compaction', '{}'::jsonb, s.through_seq
FROM session_summaries s, bounds b
WHERE s.tenant_id = :tenant AND s.session_id = :session AND s.created_at > b.since AND s.created_at <= b.until
UNION ALL
SELECT r.finished_at, 'rollback', '{}'::jsonb, (
    SELECT coalesce(max(m.seq), 0) FROM messages m
    WHERE m.tenant_id = :tenant AND m.session_id = :session AND m.created_at <= r.finished_at)
FROM runs r, bounds b
WHERE r.tenant_id = :tenant AND r.session_id = :session AND r.kind = 'message'
    AND r.status NOT IN :kept AND r.finished_at > b.since AND r.finished_at <= b.until
UNION ALL
SELECT e.at, 'todos', '{}'::jsonb, NULL
FROM run_events e JOIN runs r ON r.tenant_id = e.tenant_id AND r.id = e.run_id, bounds b
WHERE e.tenant_id = :tenant AND r.session_id = :session AND r.kind = 'message'
    AND e.kind = 'tool_finished' AND e.detail->>'name' = 'write_todos' AND e.detail->>'error' = 'false'
    AND e.at > b.since AND e.at <= b.until
UNION ALL
SELECT t.created_at, 'reveal', jsonb_build_object('part', t.part), t.seq
FROM revealed_tools t, bounds b
WHERE t.tenant_id = :tenant AND t.session_id = :session AND t.created_at > b.since AND t.created_at <= b.until
UNION ALL
SELECT started_at, 'call', jsonb_build_object('id', id::text, 'purpose', purpose), NULL FROM ends
ORDER BY at
"""
).bindparams(sa.bindparam("kept", expanding=True))


class RecordedChanges(Scoped):
    """Reads several tables, each filtered by the tenant (``where``/``select`` are not for it)."""

    def between(
        self, session_id: uuid.UUID, agent_id: uuid.UUID, earlier: uuid.UUID, later: uuid.UUID | None
    ) -> list[sa.Row]:
        """The changes recorded between call ``earlier`` and call ``later`` (None: the next call, now)."""
        values: dict[str, Any] = {
            "tenant": self.tenant_id,
            "session": session_id,
            "session_text": str(session_id),
            "agent": agent_id,
            "agent_text": str(agent_id),
            "earlier": earlier,
            "later": later or earlier,
            "next": later is None,
            "kept": list(KEPT),
        }
        return list(self.conn.execute(_BETWEEN, values))
