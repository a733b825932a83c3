"""The closed set of run-event kinds: the steps a run writes to ``run_events`` and a client polls.

``RunEvents`` refuses any other kind, as ``Audit`` refuses an action outside ``audit.ACTIONS``; the
OpenAPI document lists the same set, in this order.
"""

from __future__ import annotations

RUN_STARTED = "run_started"
MODEL_CALL_STARTED = "model_call_started"
MODEL_CALL_FINISHED = "model_call_finished"
TOOL_STARTED = "tool_started"
TOOL_FINISHED = "tool_finished"
MESSAGE_STORED = "message_stored"
COMPACTION = "compaction"
ERROR = "error"
RUN_FINISHED = "run_finished"

RUN_EVENT_KINDS: tuple[str, ...] = (
    RUN_STARTED,
    MODEL_CALL_STARTED,
    MODEL_CALL_FINISHED,
    TOOL_STARTED,
    TOOL_FINISHED,
    MESSAGE_STORED,
    COMPACTION,
    ERROR,
    RUN_FINISHED,
)


def is_run_event_kind(kind: str) -> bool:
    """True when ``kind`` belongs to the closed set."""
    return kind in RUN_EVENT_KINDS
