"""A run's steps as they happen: what a client polls (``run_events``), and where a cancel is obeyed.

The run loop, the gateway and the tool phase report their steps to ``RunState.steps``.
Inspect, try and the subagent's own turns keep the default, which records nothing and
is never cancelled. A run's ``Steps`` writes each step in its own short transaction
(a client sees it at once, and a turn rolled back keeps its record), and ``check``
raises ``Cancelled`` at a step boundary once the run's cancel is requested.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine

from hango.errors import Cancelled
from hango.store import TenantStore


class NoSteps:
    """Records nothing and never stops: every assembly that is not a queued run."""

    def emit(self, kind: str, **detail: Any) -> None:
        """Record one step (nothing here)."""

    def check(self) -> None:
        """Raise ``Cancelled`` when the run should stop here (never here)."""


class Steps(NoSteps):
    """The steps of one run, numbered from ``first``; ``should_stop`` says a cancel is requested."""

    def __init__(
        self,
        engine: Engine,
        tenant_id: uuid.UUID,
        run_id: uuid.UUID,
        should_stop: Callable[[], bool],
        first: int = 1,
    ) -> None:
        self.engine, self.tenant_id, self.run_id = engine, tenant_id, run_id
        self.should_stop = should_stop
        self.seq = first - 1

    def emit(self, kind: str, **detail: Any) -> None:
        self.seq += 1
        with self.engine.begin() as conn:
            TenantStore(conn, self.tenant_id).run_events.add(self.run_id, self.seq, kind, detail)

    def check(self) -> None:
        if self.should_stop():
            raise Cancelled()
