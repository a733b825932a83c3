"""Liveness and readiness probes."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from sqlalchemy.exc import SQLAlchemyError

from hango.api import envelope
from hango.db import db, migrate

blp = Blueprint("health", __name__)


@blp.get("/healthz")
def healthz() -> Response:
    """The process is up."""
    return jsonify({"status": "ok"})


@blp.get("/readyz")
def readyz() -> Response:
    """The database is reachable and its migrations are current."""
    try:
        migrate.check_current(db.engine)
    except migrate.SchemaNotCurrent as exc:
        return envelope(503, "schema_not_current", str(exc))
    except SQLAlchemyError:
        return envelope(503, "database_unavailable", "the database is not reachable")
    return jsonify({"status": "ready", "migration": migrate.head_revision()})
