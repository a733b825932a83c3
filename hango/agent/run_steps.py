"""A run's steps as they happen: what a client polls (``run_events``), and where a cancel is obeyed.

The turn loop, the gateway and the tool phase report their steps to ``RunState.steps``, a
``Steps``: every kind implements it. Inspect and try keep the default, ``NoSteps``, which
records nothing and is never cancelled (a subagent reports to its parent's); a scratch turn's
``RecordingSteps`` (``hango.agent.scratch``) notes its calls on their way to the run's. A
queued run's ``StoredSteps`` writes each step in its own short transaction
(a client sees it at once, and a turn rolled back keeps its record), and ``check``
raises ``Cancelled`` at a step boundary once the run's cancel is requested. A model
call is no step boundary to wait for: while one is in flight a watcher thread asks
``should_stop`` every ``WATCH_INTERVAL`` seconds and, once a cancel is requested,
hangs the call up (``hango.providers.hangup``), which then ends in ``Cancelled`` too. A tool
that waits on another process is watched the same way (``watching``): an MCP tool's source
stops its request on the MCP loop.

A worker shutting down (SIGTERM, its grace over: ``should_stop`` answers ``SHUTDOWN``)
asks less: the step in progress finishes, so a model answer that is arriving is paid
for and stored with its turn (its tools run), and the run stops before its next model
call (``check_before_call``) with ``Interrupted``: ``failed``, error ``interrupted``,
rolled back like any run that ends without an answer.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from sqlalchemy.engine import Engine

from hango.errors import Cancelled, Interrupted
from hango.providers.hangup import Hangup, calling
from hango.store import TenantStore

WATCH_INTERVAL = 0.25  # seconds between a model call's looks at its run's cancel (an in-memory flag)
SHUTDOWN = "shutdown"  # what ``should_stop`` answers when the worker stops, not the run's cancel


@runtime_checkable
class Steps(Protocol):
    """Where a run reports its steps and obeys a cancel: what the turn loop, gateway and tools call."""

    def emit(self, kind: str, **detail: Any) -> None: ...

    def check(self) -> None: ...

    def check_before_call(self) -> None: ...

    def model_call(self) -> contextlib.AbstractContextManager[None]: ...

    def watching(
        self, end: Callable[[], None], ended: Callable[[], bool]
    ) -> contextlib.AbstractContextManager[None]: ...


class NoSteps:
    """Records nothing and never stops: every assembly that is not a queued run."""

    def emit(self, kind: str, **detail: Any) -> None:
        """Record one step (nothing here)."""

    def check(self) -> None:
        """Raise ``Cancelled`` when the run should stop here (never here)."""

    def check_before_call(self) -> None:
        """Before a model call: ``check``, and ``Interrupted`` once the worker shuts down (never here)."""

    @contextlib.contextmanager
    def model_call(self) -> Iterator[None]:
        """Around a provider call: one a cancel would hang up (never here)."""
        yield

    @contextlib.contextmanager
    def watching(self, end: Callable[[], None], ended: Callable[[], bool]) -> Iterator[None]:
        """Around a wait on another process: ``end`` is called once a cancel is requested (never here)."""
        yield


class StoredSteps(NoSteps):
    """The steps of one run, numbered from ``first``; ``should_stop`` says a cancel is requested (truthy),
    or that the worker shuts down (``SHUTDOWN``)."""

    def __init__(
        self,
        engine: Engine,
        tenant_id: uuid.UUID,
        run_id: uuid.UUID,
        should_stop: Callable[[], object],
        first: int = 1,
    ) -> None:
        self.engine, self.tenant_id, self.run_id = engine, tenant_id, run_id
        self.should_stop = should_stop
        self.seq = first - 1

    def emit(self, kind: str, **detail: Any) -> None:
        self.seq += 1
        with self.engine.begin() as conn:
            TenantStore(conn, self.tenant_id).run_events.add(self.run_id, self.seq, kind, detail)

    def _cancelled(self) -> bool:
        asked = self.should_stop()
        return bool(asked) and asked != SHUTDOWN

    def check(self) -> None:
        if self._cancelled():
            raise Cancelled()

    def check_before_call(self) -> None:
        asked = self.should_stop()
        if asked == SHUTDOWN:
            raise Interrupted()
        if asked:
            raise Cancelled()

    @contextlib.contextmanager
    def model_call(self) -> Iterator[None]:
        """Around a provider call: hung up once a cancel is requested, ending in ``Cancelled`` (a shutdown
        lets the answer arrive)."""
        call = Hangup()
        with self.watching(call.hang_up, lambda: call.hung_up), calling(call):
            yield

    @contextlib.contextmanager
    def watching(self, end: Callable[[], None], ended: Callable[[], bool]) -> Iterator[None]:
        """A watcher thread calls ``end`` once a cancel is requested; a failure after ``ended`` is ``Cancelled``."""
        done = threading.Event()

        def watch() -> None:
            while not done.wait(WATCH_INTERVAL):
                if self._cancelled():
                    end()
                    return

        watcher = threading.Thread(target=watch, name=f"hango-cancel-{self.run_id}", daemon=True)
        watcher.start()
        try:
            yield
        except Exception as exc:
            if ended():
                raise Cancelled() from exc
            raise
        finally:
            done.set()
            watcher.join()
