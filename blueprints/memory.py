"""An agent's memory files: ``/v1/agents/{id}/memory``, addressed by ``/memories/...`` paths."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import error_response, found, page_of, paged
from hango import tenancy
from hango.api import Blueprint
from hango.paths import MAX_PATH_CHARS, segments_pattern
from hango.store.memory_files import MEMORY_ROOT, memory_path
from hango.store.pages import Page

blp = Blueprint(
    "memory", __name__, url_prefix="/v1/agents/<uuid:agent_id>/memory", description="Agent memory files"
)

MAX_MEMORY_CHARS = 100_000
NO_AGENT = "`not_found`: no such agent."
INVALID_PATH = (
    f"`invalid_path`: after normalising to `/memories/...`, the path has an empty, `.` or `..` segment,"
    f" a control or invisible format character (Unicode Cc, Cf), or more than {MAX_PATH_CHARS} characters"
    " (paths are compared in NFC, so a composed and a decomposed name are one file)."
)


class MemoryEntrySchema(Schema):
    path = fields.String()
    chars = fields.Integer(metadata={"description": "the content's length in characters"})
    updated_at = fields.DateTime()


class MemoryFileSchema(Schema):
    path = fields.String(dump_only=True)
    content = fields.String(required=True, validate=validate.Length(max=MAX_MEMORY_CHARS))
    updated_at = fields.DateTime(dump_only=True)


MemoryPageSchema = page_of(MemoryEntrySchema, "MemoryPage")


def _memory_file(agent_id: uuid.UUID, path: str) -> sa.Row:
    """The agent's memory file at ``path`` (normalised), or 404."""
    return found(tenancy.store().memory_files.get(agent_id, memory_path(path)), "memory file")


@blp.route("")
class MemoryList(MethodView):
    @paged(blp)
    @blp.response(200, MemoryPageSchema)
    @error_response(blp, 404, "`not_found`: no such agent.")
    def get(self, args: dict, agent_id: uuid.UUID) -> Page:
        """List the agent's memory files by path (without their content)."""
        return tenancy.store().memory_files.page(agent_id, args["cursor"], args["limit"])


# The path after the agent's memory root: the rule of hango/paths.py, segments none empty, `.` or `..`.
PATH_PARAMETER = {
    "in": "path",
    "name": "path",
    "required": True,
    "description": "a memory path, `/memories/` optional: `notes/todo.md` is `/memories/notes/todo.md`",
    "schema": segments_pattern(MAX_PATH_CHARS - len(MEMORY_ROOT)),
}


@blp.route("/<path:path>", parameters=[PATH_PARAMETER])
class MemoryFile(MethodView):
    @blp.response(200, MemoryFileSchema)
    @error_response(blp, 404, "`not_found`: no such agent or memory file.")
    @error_response(blp, 422, INVALID_PATH)
    def get(self, agent_id: uuid.UUID, path: str) -> sa.Row:
        """One memory file with its content."""
        return _memory_file(agent_id, path)

    @blp.arguments(MemoryFileSchema)
    @blp.response(200, MemoryFileSchema)
    @error_response(blp, 404, NO_AGENT)
    @error_response(blp, 422, f"`invalid`: the body is not valid. {INVALID_PATH}")
    def put(self, body: dict, agent_id: uuid.UUID, path: str) -> sa.Row:
        """Create or replace a memory file (content up to 100,000 characters)."""
        row = tenancy.store().memory_files.put(agent_id, memory_path(path), body["content"])
        tenancy.audit("memory.put", "agent", agent_id, {"path": row.path})
        return row

    @blp.response(204)
    @error_response(blp, 404, "`not_found`: no such agent or memory file.")
    @error_response(blp, 422, INVALID_PATH)
    def delete(self, agent_id: uuid.UUID, path: str) -> None:
        """Delete a memory file."""
        row = _memory_file(agent_id, path)
        tenancy.store().memory_files.delete(agent_id, row.path)
        tenancy.audit("memory.delete", "agent", agent_id, {"path": row.path})
