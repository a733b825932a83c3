"""The cyclic garbage collector held off while one request builds a large acyclic answer.

An inspect builds a few objects per message (messages, their blocks, one view
per part) that all live until its answer is written and are then freed by
reference counting: none is part of a cycle. The collector's automatic passes
meanwhile walk every one of them, and as the live set grows each full pass walks
more: at 50,000 messages they were a third of the request, and the cost per
message grew with the session (``docs/performance.md``). While ``paused()``
holds, no automatic pass runs; the first pass after it (the collector's next
threshold) collects any cycle the request left. Pauses nest, also across
threads: the collector runs again when the last one ends, if it ran before the
first. ``paused_during`` wraps a whole view, so the pause ends once the answer
is serialized and the objects it was built from are freed: the collector's first
pass after it has nothing of theirs to walk.

A try (``blueprints/context_try.py``) is paused the same way: it builds the same
state and keeps it until its answer, through its provider call. A gunicorn sync
worker serves one request at a time, so the pause holds only that request's
objects, and a call's wait allocates little; it ends with the request, by the
try's deadline at the latest.

Spacing the collector's passes once per process instead (``gc.set_threshold`` at start,
beside ``wsgi.py``'s ``gc.freeze()``) leaves the young and middle passes over every object
an inspect builds: 10,000 messages then cost 5-15 % more CPU than with the pause (312 ms against
272-297 ms, the least of six on a loaded machine), past
inspect's benchmark (0.7 of the floor), whatever the thresholds (700 to 50,000 young).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

_lock = threading.Lock()
_held = 0
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (``gc.collect()`` still works)."""
    global _held, _was_enabled
    with _lock:
        if _held == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _held += 1
    try:
        yield
    finally:
        with _lock:
            _held -= 1
            if _held == 0 and _was_enabled:
                gc.enable()


def paused_during(view: Callable[..., Any]) -> Callable[..., Any]:
    """``view`` (the outermost decorator, so its answer is serialized inside) with the collector paused."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paused():
            return view(*args, **kwargs)

    return wrapper
