"""Following a queued run from the command line: poll its steps, print them, cancel on Ctrl-C.

This is the poll loop every client writes (``docs/learning/background-runs.md``):
``GET /v1/runs/{id}/events?after=N`` until the run has ended, then
``GET /v1/runs/{id}`` for its messages. Steps go to stderr, so stdout keeps the
answer alone: plain lines when stderr is piped, one line redrawn with a spinner
on a terminal. The first Ctrl-C asks the server to cancel the run (it stops at
its next step); a second one stops waiting.
"""

from __future__ import annotations

import itertools
import sys
import time
from typing import Any, TextIO

from hango import run_events
from hango.cli.client import Client, ClientError

POLL_SECONDS = 0.5
ENDED = {"completed", "max_turns", "quota_exhausted", "failed", "timeout", "cancelled"}
SPINNER = "|/-\\"


def describe_step(step: dict[str, Any]) -> str:
    """One step as a short line: what happened, with its figures (never any content)."""
    kind, detail = step["kind"], step["detail"]
    if kind == run_events.MODEL_CALL_STARTED:
        return f"model call ({detail.get('purpose')}) {detail.get('model')}..."
    if kind == run_events.MODEL_CALL_FINISHED:
        usage = detail.get("usage") or {}
        cache = detail.get("cache") or {}
        verdict = f", cache miss: {cache['miss_reason']}" if cache.get("miss_reason") else ""
        return (
            f"model answered in {detail.get('duration_ms')} ms: {usage.get('input_tokens')} in, "
            f"{usage.get('output_tokens')} out, {usage.get('cache_read_tokens')} cached{verdict}"
        )
    if kind == run_events.TOOL_STARTED:
        return f"tool {detail.get('name')}..."
    if kind == run_events.TOOL_FINISHED:
        failed = " (error)" if detail.get("error") else ""
        return f"tool {detail.get('name')} done in {detail.get('duration_ms')} ms{failed}"
    if kind == run_events.MESSAGE_STORED:
        return f"stored #{detail.get('seq')} {detail.get('role')}"
    if kind == run_events.COMPACTION:
        return f"compacted the history through #{detail.get('through_seq')}"
    if kind == run_events.ERROR:
        return f"error: {detail.get('message')} ({detail.get('code')})"
    if kind == run_events.RUN_FINISHED:
        return f"run {detail.get('status')}"
    return kind.replace("_", " ")


class Printer:
    """Where steps go: plain lines, or one redrawn line with a spinner on a terminal."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.spin = itertools.cycle(SPINNER)
        self.last = "queued"

    def step(self, step: dict[str, Any]) -> None:
        self.last = describe_step(step)
        if not self.tty:
            print(self.last, file=self.out, flush=True)

    def tick(self) -> None:
        if self.tty:
            self.out.write(f"\r\x1b[K{next(self.spin)} {self.last}")
            self.out.flush()

    def done(self) -> None:
        if self.tty:
            self.out.write("\r\x1b[K")
            self.out.flush()


def follow(api: Client, run: dict[str, Any], out: TextIO | None = None) -> dict[str, Any]:
    """Print ``run``'s steps until it ends; returns the ended run with its messages."""
    out = out or sys.stderr  # read at the call: a test (or a caller) may have replaced it
    printer, after, cancelled = Printer(out), 0, False
    while True:
        try:
            page = api.request("GET", f"/v1/runs/{run['id']}/events", params={"after": after})
            for step in page["items"]:
                printer.step(step)
            after = page["next_after"]
            if page["status"] in ENDED:
                break
            printer.tick()
            time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            if cancelled:
                raise
            cancelled = True
            print("\ncancelling the run (Ctrl-C again stops waiting)...", file=out, flush=True)
            api.request("POST", f"/v1/runs/{run['id']}/cancel")
    printer.done()
    return api.request("GET", f"/v1/runs/{run['id']}")


def succeeded(run: dict[str, Any]) -> dict[str, Any]:
    """``run`` when it ended without an error; a ``ClientError`` with its error (or its cancel) otherwise."""
    error = run.get("error")
    if error or run["status"] == "cancelled":
        message = error["message"] if error else "the run was cancelled"
        code = error["code"] if error else "cancelled"
        raise ClientError(f"{message} (run {run['id']}: {run['status']}, {code})")
    return run
