"""Suggestions: ``GET /v1/sessions/{id}/context/suggestions`` — what to drop from the next request, and its price.

Computed from the same assembly and snapshot inspect answers with; no model is
called and nothing is written. Applying one is an ordinary override PUT on its
``target`` route (or, for ``would_compact``, ``POST .../compact``; for ``defer_server``,
``PATCH /v1/agents/{agent_id}`` with its ``apply`` body).
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import MAX_PAGE, error_response
from blueprints.context_schemas import simulated_at_field
from hango import tenancy
from hango.api import Blueprint
from hango.inspector import service

# Nested in ``context`` (``blueprints/__init__.py``): the inspector is one API area, one OpenAPI tag.
blp = Blueprint("suggestions", __name__)


class SuggestionArgsSchema(Schema):
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=MAX_PAGE))


class SuggestionSchema(Schema):
    kind = fields.String(metadata={"enum": list(service.SUGGESTION_KINDS)})
    parts = fields.List(fields.String(), metadata={"description": "parts to exclude, closed under pairing"})
    tokens_saved = fields.Integer()
    cache_loss_tokens = fields.Integer(
        metadata={
            "description": "the next call's expected read of what the provider holds without the change "
            "(less the parts it leaves out: saved, not lost) minus the one with it: tokens written again "
            "instead of read, in the unit of inspect's `cache.expected_read_tokens` (`cache.unit`); "
            "negative when the change restores cache the next call would otherwise write (a gain; the "
            "preview's `pending` has the same field); 0 when nothing is held (`cache.outlook`)"
        }
    )
    usd_saved_per_call = fields.Float(
        allow_none=True,
        metadata={
            "description": "tokens_saved on every later call: at the cache-read price when the provider caches "
            "(those parts would have been read from the cache), else the input price; null when the price is "
            "unknown"
        },
    )
    usd_cache_loss = fields.Float(
        allow_none=True,
        metadata={
            "description": "once, on the next call: cache_loss_tokens written again instead of read (cache-write "
            "less cache-read price); negative for a gain"
        },
    )
    break_even_calls = fields.Integer(
        allow_none=True,
        metadata={
            "description": "calls until the saving pays the one write: ceil(usd_cache_loss / usd_saved_per_call); "
            "0 when nothing is written again, null when it never pays or the price is unknown"
        },
    )
    simulated_at = simulated_at_field()
    target = fields.String(
        metadata={
            "enum": ["agent", "session", "defer"],
            "description": "the override route that applies it; `defer` (defer_server): the agent PATCH "
            "with the suggestion's `apply` body",
        }
    )
    reason = fields.String()
    sessions_affected = fields.Integer(metadata={"description": "unused_tool: the agent's sessions"})
    calls = fields.Integer(
        metadata={"description": "defer_server: the history's calls of the server's tools (tool_use blocks)"}
    )
    answers = fields.Integer(
        metadata={"description": "defer_server: the assistant messages of the history `calls` counts over"}
    )
    apply = fields.Dict(
        metadata={
            "description": "defer_server: the body of `PATCH /v1/agents/{agent_id}` that applies it: "
            '`{"defer": {"tools": [...the agent\'s list, "tool:<server>/*"], "auto_percent": ...}}`'
        }
    )
    compaction = fields.Dict(metadata={"description": "would_compact: the compaction preview"})


class SuggestionsSchema(Schema):
    session_id = fields.String()
    agent_id = fields.String(metadata={"description": "whose override route applies `agent` suggestions"})
    total_after = fields.Integer(
        metadata={"description": "the next request's tokens, as inspect counts them"}
    )
    count = fields.Integer(metadata={"description": "suggestions found (the list holds at most `limit`)"})
    suggestions = fields.List(fields.Nested(SuggestionSchema))
    compaction = fields.Dict(
        allow_none=True, metadata={"description": "what compact-now (or the next call's compaction) would do"}
    )


@blp.route("/suggestions")
class Suggestions(MethodView):
    @blp.arguments(SuggestionArgsSchema, location="query")
    @blp.response(200, SuggestionsSchema)
    @error_response(blp, 404, "`not_found`: no such session, or not the caller's.")
    def get(self, args: dict, session_id: uuid.UUID) -> dict[str, Any]:
        """Ranked suggestions of parts to drop, with the tokens each saves and the cache it costs."""
        return tenancy.inspector().suggestions(args["limit"])
