"""The calls this process sent or rebuilt lately, kept so that following a lineage reads only what is new.

A ledger row never changes once written, so a call rebuilt (or sent) once is that
call for as long as this process keeps it. Loading a lineage passes the ids it keeps
for the session to the chain's query, which stops at the first of them: a try after
a try this worker made or read reads the rows since, not the chain back to a whole
row (``hango.store.model_calls``). What is kept is bounded by the parts it holds;
the least recently used session goes first.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

# At most this many parts over every kept call (a call of a session shares its parts'
# tuples with the call before it, so this bounds the memory more than it spends it).
KEPT_PARTS = 200_000
# The newest calls kept per session: a lineage continues from the latest, a try's from a run's.
PER_SESSION = 4


@dataclass(frozen=True)
class Known:
    """A call as a lineage continues from it: the ``SentCall`` (``hango.agent.ledger.record``, which keeps
    these), and how many deltas its row lies from a whole one."""

    call: Any
    depth: int


class RecentCalls:
    """Known calls by session and id; safe to share between a process's threads."""

    def __init__(self, kept_parts: int = KEPT_PARTS, per_session: int = PER_SESSION) -> None:
        self.kept_parts = kept_parts
        self.per_session = per_session
        self._sessions: OrderedDict[uuid.UUID, OrderedDict[uuid.UUID, Known]] = OrderedDict()
        self._parts = 0
        self._lock = threading.Lock()

    def of(self, session_id: uuid.UUID) -> dict[uuid.UUID, Known]:
        """The session's known calls (a copy: the caller's to read while others are added)."""
        with self._lock:
            calls = self._sessions.get(session_id)
            if calls is None:
                return {}
            self._sessions.move_to_end(session_id)
            return dict(calls)

    def put(self, session_id: uuid.UUID, call_id: uuid.UUID, known: Known) -> None:
        """Keep ``known`` as the session's newest call, dropping the oldest beyond the bounds."""
        size = len(known.call.parts)
        if size > self.kept_parts:
            return
        with self._lock:
            calls = self._sessions.setdefault(session_id, OrderedDict())
            self._sessions.move_to_end(session_id)
            if call_id in calls:
                calls.move_to_end(call_id)
                return
            calls[call_id] = known
            self._parts += size
            if len(calls) > self.per_session:
                self._parts -= len(calls.popitem(last=False)[1].call.parts)
            while self._parts > self.kept_parts:
                self._drop_oldest()

    def _drop_oldest(self) -> None:
        oldest_session, calls = next(iter(self._sessions.items()))
        self._parts -= len(calls.popitem(last=False)[1].call.parts)
        if not calls:
            del self._sessions[oldest_session]


RECENT = RecentCalls()
