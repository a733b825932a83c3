"""How a run is answered wherever one is: its lifecycle state, its result and, once it ended, its messages.

A message's run (``POST …/messages``), a compaction (``POST …/compact``) and a scratch
turn (``POST …/context/try`` with ``"mode": "turn"``) are answered 202 with the run
as ``GET /v1/runs/{id}`` shows it, with the same ``Location`` and the same 429.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from blueprints.call_schemas import CallDetailSchema, CallUsageSchema
from blueprints.context_schemas import simulated_at_field
from blueprints.message_schemas import MessageSchema
from hango import tenancy
from hango.store.runs import SCRATCH_TURN_KIND

# The run's lifecycle in five words; ``status`` keeps the detail (completed, max_turns, timeout, ...).
STATES = {
    "queued": "queued",
    "running": "running",
    "completed": "succeeded",
    "max_turns": "succeeded",
    "failed": "failed",
    "timeout": "failed",
    "quota_exhausted": "failed",
    "cancelled": "cancelled",
}
ENDED = {status for status, state in STATES.items() if state not in ("queued", "running")}


def state_of(run: Any) -> str:
    """The run's lifecycle state (``run`` a row or a mapping)."""
    status = run["status"] if isinstance(run, dict) else run.status
    return STATES[status]


TOO_MANY_RUNS = "`too_many_runs`: the member's or tenant's runs in flight are at their cap."

# A queued run's 202: where to poll it.
LOCATION = {
    "Location": {
        "description": "`/v1/runs/{id}`",
        "schema": {"type": "string", "pattern": "^/v1/runs/[0-9a-f-]{36}$"},
    }
}


def location_of(run: Any) -> dict[str, str]:
    """The ``Location`` header of a queued run's 202."""
    return {"Location": f"/v1/runs/{run.id}"}


def multitask_field() -> fields.String:
    """``multitask``: what a new run does while the session has one queued or running."""
    return fields.String(
        load_default="reject",
        validate=validate.OneOf(["reject", "enqueue"]),
        metadata={
            "description": "while a run is in flight: `reject` (409 `session_busy`) or `enqueue` behind it"
        },
    )


class CompactResultSchema(Schema):
    through_seq = fields.Integer(metadata={"description": "the summary stands for the messages up to here"})
    summarize = fields.List(fields.Integer(), metadata={"description": "first and last seq summarized"})
    keep_from = fields.Integer(
        allow_none=True, metadata={"description": "the first kept message; null when every one is summarized"}
    )
    tokens_summarized = fields.Integer(
        metadata={"description": "the messages summarized (not the old summary)"}
    )
    previous_summary_tokens = fields.Integer(metadata={"description": "the earlier summary folded in"})
    tokens_kept = fields.Integer()
    model = fields.String()


class TurnToolSchema(Schema):
    call = fields.Integer(
        allow_none=True, metadata={"description": "the index in `calls` of the call that asked"}
    )
    id = fields.String()
    name = fields.String()
    input = fields.Dict()
    result = fields.String(metadata={"description": "what the tool returned"})
    is_error = fields.Boolean()
    duration_ms = fields.Integer()


class TurnSearchSchema(Schema):
    query = fields.String(metadata={"description": "what the model searched for"})
    revealed = fields.List(
        fields.String(),
        metadata={"description": "the parts of the deferred tools it revealed, in the turn's state only"},
    )
    called = fields.List(
        fields.String(),
        metadata={"description": "the revealed tools the turn called after the search, by name, each once"},
    )


class TurnDeferralSchema(Schema):
    defer = fields.List(fields.String(), metadata={"description": "the parts the try deferred, as asked"})
    undefer = fields.List(
        fields.String(), metadata={"description": "the parts the try sent though the agent defers them"}
    )


class FileChangeSchema(Schema):
    path = fields.String()
    change = fields.String(metadata={"enum": ["created", "edited", "deleted"]})
    diff = fields.String(metadata={"description": "a unified diff from `a<path>` to `b<path>`"})


class TodosChangeSchema(Schema):
    before = fields.List(fields.Dict())
    after = fields.List(fields.Dict())


class TurnChangesSchema(Schema):
    files = fields.List(fields.Nested(FileChangeSchema), metadata={"description": "session files"})
    memory = fields.List(
        fields.Nested(FileChangeSchema), metadata={"description": "the agent's memory files"}
    )
    todos = fields.Nested(
        TodosChangeSchema, allow_none=True, metadata={"description": "null when the todo list did not change"}
    )


class RunResultSchema(CompactResultSchema):
    """A `compact` run's figures (the fields above `answer`), or what a `try` run's turn did."""

    answer = fields.Dict(allow_none=True, metadata={"description": "the turn's last assistant message"})
    stop_reason = fields.String(allow_none=True)
    calls = fields.List(
        fields.Nested(CallDetailSchema),
        metadata={
            "description": "each model call, as `GET …/calls/{id}` shows it (only `id` in a list of runs)"
        },
    )
    tools = fields.List(fields.Nested(TurnToolSchema))
    usage = fields.Nested(CallUsageSchema, metadata={"description": "the turn's calls summed"})
    cost = fields.Float(
        allow_none=True,
        metadata={
            "description": "the turn's price in USD, a number as each call's `cost.usd`; null when a call "
            "has no price"
        },
    )
    cost_simulated_at = simulated_at_field()
    changes = fields.Nested(TurnChangesSchema, metadata={"description": "what the turn would have written"})
    excluded = fields.List(fields.String())
    added = fields.List(fields.String())
    searches = fields.List(
        fields.Nested(TurnSearchSchema),
        metadata={
            "description": "each `tool_search` call of the turn, in order: did it find what was called"
        },
    )
    deferral = fields.Nested(
        TurnDeferralSchema, metadata={"description": "the deferral changes the try ran with (the body's)"}
    )


class RunSchema(Schema):
    id = fields.UUID()
    session_id = fields.UUID()
    kind = fields.String(metadata={"enum": ["message", "compact", SCRATCH_TURN_KIND]})
    status = fields.String(
        metadata={"enum": list(STATES), "description": "the detailed status; `state` is its lifecycle"}
    )
    state = fields.Function(
        state_of,
        metadata={"type": "string", "enum": sorted(set(STATES.values()))},
    )
    stop_reason = fields.String(allow_none=True)
    error = fields.Raw(allow_none=True, metadata={"description": "`{code, message, status}` of a failed run"})
    queued_at = fields.DateTime()
    started_at = fields.DateTime(
        metadata={"description": "when a worker started it (its queueing time before)"}
    )
    finished_at = fields.DateTime(allow_none=True)
    result = fields.Nested(
        RunResultSchema,
        allow_none=True,
        metadata={
            "description": "a succeeded `compact` run's compaction, an ended `try` run's turn; null otherwise"
        },
    )


class RunWithMessagesSchema(RunSchema):
    messages = fields.List(
        fields.Nested(MessageSchema), metadata={"description": "the messages it stored, once it ended"}
    )
    message_kept = fields.Boolean(
        metadata={
            "description": "whether the session's history holds the run's user message: false before a"
            " worker stored it, and for a run that ended without an answer (failed, cancelled or"
            " interrupted: its message was rolled back, resend it to ask again)"
        }
    )


def with_messages(run: Any) -> dict[str, Any]:
    """The run, whether its user message is kept and, once it ended, the messages it stored (a try run's
    calls shown whole)."""
    stored = tenancy.store().messages.of_run(run.id) if run.kind == "message" else []
    kept = any(message.role == "user" for message in stored)
    shown = {**run._mapping, "messages": stored if run.status in ENDED else [], "message_kept": kept}
    if run.kind == SCRATCH_TURN_KIND and run.result is not None:
        shown["result"] = {**run.result, "calls": tenancy.inspector().run_calls(run)}
    return shown
