"""The try pool: a bounded thread pool per app for ``POST .../context/try`` calls.

Created in ``create_app`` (``try_pool.init_app``), never at import time. A call
runs on the pool with the caller's trace context and a deadline: no answer by
then → 504. The provider call carries the time left to that same deadline as its
SDK timeout, so an abandoned call's thread ends at the deadline and frees its slot.
No free slot → 503 with ``Retry-After``, except that a slot whose call is already
past its deadline is waited for (at most ``GRACE`` seconds): its thread is ending.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TypeVar

from flask import Flask, current_app
from opentelemetry import context

from hango.errors import GatewayTimeout, ServiceUnavailable

POOL_SIZE = 4
GRACE = 5.0  # how long past its deadline an abandoned call may take to give its slot back
EXTENSION = "hango.try_pool"

T = TypeVar("T")


@dataclass
class Slots:
    """One app's pool and the deadlines of the calls holding its slots."""

    executor: ThreadPoolExecutor
    size: int
    changed: threading.Condition = field(default_factory=threading.Condition)
    deadlines: list[float] = field(default_factory=list)

    def take(self, deadline: float) -> None:
        """Hold a slot for a call due by ``deadline``; 503 when every slot's call is still within its own."""
        with self.changed:
            while len(self.deadlines) >= self.size:
                overdue, now = min(self.deadlines), time.monotonic()
                if overdue > now or now >= overdue + GRACE:
                    raise ServiceUnavailable(
                        "every try slot is busy", code="try_pool_full", headers={"Retry-After": "5"}
                    )
                self.changed.wait(overdue + GRACE - now)
            self.deadlines.append(deadline)

    def give_back(self, deadline: float) -> None:
        with self.changed:
            self.deadlines.remove(deadline)
            self.changed.notify()


class TryPool:
    """The extension: ``init_app`` gives the app its pool; ``run`` sends one call through it."""

    def init_app(self, app: Flask, size: int = POOL_SIZE) -> None:
        executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="context-try")
        app.extensions[EXTENSION] = Slots(executor, size)

    def run(self, call: Callable[[], T], deadline: float) -> T:
        """Run ``call`` on the pool with the caller's trace context; 503 when full, 504 at ``deadline``.

        ``deadline`` is a ``time.monotonic()`` instant; ``call`` must give its provider call
        the time left to it (the try's ``RunState.deadline``).
        """
        slots: Slots = current_app.extensions[EXTENSION]
        slots.take(deadline)
        parent = context.get_current()

        def run() -> T:
            token = context.attach(parent)
            try:
                return call()
            finally:
                context.detach(token)
                slots.give_back(deadline)

        future = slots.executor.submit(run)
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            raise GatewayTimeout(
                "the try call passed HANGO_CONTEXT_TRY_TIMEOUT", code="provider_timeout"
            ) from None


try_pool = TryPool()
