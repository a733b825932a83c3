"""The try pool: a bounded thread pool per app for ``POST .../context/try`` calls.

Created in ``create_app`` (``try_pool.init_app``), never at import time. A call
runs on the pool with the caller's trace context; no free slot → 503 with
``Retry-After``, no answer within the timeout → 504 (the SDK call carries the
same timeout, so an abandoned call ends and frees its slot).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TypeVar

from flask import Flask, current_app
from opentelemetry import context

from hango.errors import GatewayTimeout, ServiceUnavailable

POOL_SIZE = 4
EXTENSION = "hango.try_pool"

T = TypeVar("T")


@dataclass(frozen=True)
class Slots:
    """One app's pool and the semaphore that bounds its calls in flight."""

    executor: ThreadPoolExecutor
    free: threading.BoundedSemaphore


class TryPool:
    """The extension: ``init_app`` gives the app its pool; ``run`` sends one call through it."""

    def init_app(self, app: Flask, size: int = POOL_SIZE) -> None:
        executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="context-try")
        app.extensions[EXTENSION] = Slots(executor, threading.BoundedSemaphore(size))

    def run(self, call: Callable[[], T], timeout: float) -> T:
        """Run ``call`` on the pool with the caller's trace context; 503 when full, 504 past ``timeout``."""
        slots: Slots = current_app.extensions[EXTENSION]
        if not slots.free.acquire(blocking=False):
            raise ServiceUnavailable(
                "every try slot is busy", code="try_pool_full", headers={"Retry-After": "5"}
            )
        parent = context.get_current()

        def run() -> T:
            token = context.attach(parent)
            try:
                return call()
            finally:
                context.detach(token)
                slots.free.release()

        future = slots.executor.submit(run)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            raise GatewayTimeout(
                "the try call passed HANGO_CONTEXT_TRY_TIMEOUT", code="provider_timeout"
            ) from None


try_pool = TryPool()
