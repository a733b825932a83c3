"""A session's messages: ``GET /v1/sessions/{id}/messages``, paged by ``seq``."""

from __future__ import annotations

import uuid

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import error_response, page_of
from blueprints.message_schemas import MessageSchema
from hango import tenancy
from hango.api import Blueprint
from hango.store.pages import Page

blp = Blueprint(
    "messages", __name__, url_prefix="/v1/sessions/<uuid:session_id>/messages", description="Session history"
)

MAX_MESSAGE_PAGE = 10_000
MAX_SEQ = 2**31 - 1


class MessagePageArgsSchema(Schema):
    after_seq = fields.Integer(
        load_default=0,
        validate=validate.Range(min=0, max=MAX_SEQ),
        metadata={"description": "return messages with a greater seq; pass the previous page's next_cursor"},
    )
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=MAX_MESSAGE_PAGE))


MessagePageSchema = page_of(MessageSchema, "MessagePage")


@blp.route("")
class MessageList(MethodView):
    @blp.arguments(MessagePageArgsSchema, location="query")
    @blp.response(200, MessagePageSchema)
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    def get(self, args: dict, session_id: uuid.UUID) -> Page:
        """A page of the session's messages in seq order; next_cursor is the after_seq of the next page."""
        return tenancy.store().messages.page(session_id, args["after_seq"], args["limit"])
