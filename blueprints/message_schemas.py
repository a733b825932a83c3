"""How a stored message is shown: in a session's history and in the run that stored it."""

from __future__ import annotations

from marshmallow import Schema, fields


class MessageSchema(Schema):
    id = fields.UUID()
    seq = fields.Integer()
    role = fields.String()
    content = fields.List(
        fields.Dict(), metadata={"description": "content blocks: text, tool_use, tool_result"}
    )
    run_id = fields.UUID(allow_none=True)
    created_at = fields.DateTime()
