"""A try's one ``context.try`` audit row, written with its call's record when it can be.

A call answered while its request still waits writes the row in the transaction
that records it (``with_call``, the gateway's ``alongside``): one committed write
less on the answer's path. Otherwise the request writes it alone, after the call
(``alone``), with the outcome it answers: a failed call, a full pool, or a call it
stopped waiting for at the deadline (504), whose late record then writes no row.
A request that stops waiting while the record is being committed waits for that
commit (at most ``RECORD_WAIT``): the row is then the record's, ``ok``, since the call
was answered and billed. So exactly one row is written whichever thread gets there first.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hango.store import TenantStore

OPEN, PENDING, WRITTEN, ALONE = "open", "pending", "written", "alone"
RECORD_WAIT = 5.0  # how long a request that stopped waiting waits for the record's commit it found open


class TryAudit:
    """The row's detail (``excluded``, ``model``) and who tried; which thread writes it is settled once."""

    def __init__(self, session_id: uuid.UUID, who: Any, excluded: list[str], model: str) -> None:
        self.session_id, self.who = session_id, who
        self.detail = {"excluded": excluded, "model": model}
        self._changed = threading.Condition()
        self._state = OPEN

    @contextmanager
    def with_call(self) -> Iterator[Callable[[TenantStore], object] | None]:
        """Around the call's record transaction: the write of the ``ok`` row, or None when it is not the
        record's to write (the request wrote it already)."""
        with self._changed:
            mine = self._state == OPEN
            if mine:
                self._state = PENDING
        try:
            yield (lambda store: self.write(store, "ok")) if mine else None
        except BaseException:
            if mine:
                self._settle(OPEN)  # rolled back: the request writes it
            raise
        if mine:
            self._settle(WRITTEN)

    def alone(self, outcome: str, store: TenantStore) -> bool:
        """Write the row with ``outcome`` in ``store``'s transaction, unless the call's record wrote it;
        whether it was written here."""
        with self._changed:
            self._changed.wait_for(lambda: self._state != PENDING, timeout=RECORD_WAIT)
            if self._state == WRITTEN:
                return False
            self._state = ALONE
        self.write(store, outcome)
        return True

    def write(self, store: TenantStore, outcome: str) -> None:
        store.audit.record(
            "context.try",
            "session",
            self.session_id,
            actor_user_id=self.who.user_id,
            api_key_id=self.who.api_key_id,
            detail={**self.detail, "outcome": outcome},
        )

    def _settle(self, state: str) -> None:
        with self._changed:
            self._state = state
            self._changed.notify_all()
