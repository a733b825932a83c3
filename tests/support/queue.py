"""Waiting for queued runs in tests: a worker that drains the queue in-process, and "post and wait".

``POST .../messages`` answers 202 with a queued run. In-process tests (the Flask
test client) run the queued jobs to their end here with procrastinate's own worker
(``wait=False``: it stops once the queue is empty); server tests run a real
``hango worker`` beside gunicorn and poll. Either way ``post_and_wait`` hands back
the answer the synchronous API gave before runs were queued: 201 with
``{"run", "messages"}`` for a run that ended without an error (200 with the
compaction's figures for a compact run), the error's status
and envelope for one that failed (its ``error.status``), and any answer other
than 202 as it came (402, 404, 409, 422, 429).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import procrastinate
from flask import Flask

from hango.agent.deps import Deps
from hango.worker import run_worker

WAIT_TIMEOUT = 180.0  # a loaded 2-core machine may take long; a run that never ends fails the test
ABORT_POLL = 0.1  # seconds: a cancel requested while a test's run works is seen at its next step
ENDED = {"completed", "max_turns", "quota_exhausted", "failed", "timeout", "cancelled"}


@contextlib.contextmanager
def worker_thread(app: procrastinate.App, options: dict[str, Any], name: str) -> Iterator[None]:
    """Procrastinate's worker of ``app`` with ``options``, in a thread of its own, until the block ends
    (then it stops as on SIGTERM: its running jobs get their grace)."""
    stop = threading.Event()

    async def work() -> None:
        async with app.open_async():
            running = asyncio.create_task(app.run_worker_async(**options, install_signal_handlers=False))
            await asyncio.to_thread(stop.wait)
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running

    thread = threading.Thread(target=asyncio.run, args=(work(),), name=name)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=WAIT_TIMEOUT)


def drain(app: Flask, concurrency: int = 1) -> None:
    """Run every queued job to its end in this process, then return (nothing waits for new jobs).

    The worker runs in a thread of its own: procrastinate starts an event loop, and this
    thread may already have one running (Playwright's sync API, in a browser session).
    """
    deps = Deps(app.extensions["hango.engine"], app.config["HANGO"])
    failed: list[BaseException] = []

    def work() -> None:
        try:
            run_worker(
                deps,
                periodic=False,  # the periodic jobs are the server tests' (a pass here would add its statements)
                wait=False,
                install_signal_handlers=False,
                listen_notify=False,
                abort_job_polling_interval=ABORT_POLL,
                concurrency=concurrency,
            )
        except BaseException as exc:  # handed to the test's thread
            failed.append(exc)

    worker = threading.Thread(target=work, name="drain")
    worker.start()
    worker.join()
    if failed:
        raise failed[0]


@dataclass
class Finished:
    """A finished run, answered the way the synchronous ``POST .../messages`` answered it."""

    status_code: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, run: dict[str, Any], headers: dict[str, str]) -> Finished:
        error = run.get("error")
        if error and error.get("status"):
            envelope = {"code": error["code"], "message": error["message"], "details": error.get("details")}
            return cls(error["status"], {"error": envelope}, headers)
        if run["kind"] == "compact" and run["status"] == "completed":
            return cls(200, run["result"], headers)  # compact-now's synchronous 200
        messages = run.pop("messages")
        return cls(201, {"run": run, "messages": messages}, headers)

    def get_json(self) -> dict[str, Any]:
        return self.body

    def json(self) -> dict[str, Any]:
        return self.body

    @property
    def text(self) -> str:
        """The body as the synchronous answer's text: what a failed assertion prints."""
        return json.dumps(self.body)


def finished_in_process(who: Any, sent: Any) -> Any:
    """Drain the app's queue and read the run ``sent`` (a 202) queued; other answers come back as they are."""
    if sent.status_code != 202:
        return sent
    drain(who.client.application)
    run = who.get(sent.headers["Location"])
    assert run.status_code == 200, run.get_json()
    return Finished.of(run.get_json(), dict(sent.headers))


def finished_over_http(get: Callable[[str], Any], sent: Any, timeout: float = WAIT_TIMEOUT) -> Any:
    """Poll the run ``sent`` (a 202 from a live server) through ``get(path)`` until it ends.

    Other answers come back as they are.
    """
    if sent.status_code != 202:
        return sent
    deadline = time.monotonic() + timeout
    while True:
        run = get(sent.headers["Location"])
        assert run.status_code == 200, run.text
        body = run.json()
        if body["status"] in ENDED:
            return Finished.of(body, dict(sent.headers))
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {body['id']} still {body['status']} after {timeout} s")
        time.sleep(0.05)
