"""The REST API object and the one place where errors become JSON envelopes."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from flask import Flask, Response, jsonify
from flask_smorest import Api
from marshmallow import Schema, fields
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from hango.errors import HangoError

log = logging.getLogger(__name__)

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "rate_limited",
}


class ErrorBodySchema(Schema):
    code = fields.String(required=True)
    message = fields.String(required=True)
    details = fields.Raw(allow_none=True)


class ErrorSchema(Schema):
    error = fields.Nested(ErrorBodySchema, required=True)


def envelope(status: int, code: str, message: str, details: Any = None) -> Response:
    """The JSON error body every error uses: ``{"error": {code, message, details}}``."""
    response = jsonify({"error": {"code": code, "message": message, "details": details}})
    response.status_code = status
    return response


def http_error_response(error: HTTPException) -> Response:
    """The envelope for a werkzeug/flask-smorest HTTP error, keeping ``Allow`` on 405."""
    data = getattr(error, "data", {}) or {}
    details = data.get("messages")
    message = data.get("message") or error.description or error.name
    if error.code == 422:
        message = "the request body or parameters are not valid"
    status = error.code or 500
    response = envelope(status, _CODES.get(status, "http_error"), message, details)
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        response.headers["Allow"] = ", ".join(sorted(error.valid_methods))
    for name, value in (data.get("headers") or {}).items():
        response.headers[name] = value
    return response


class HangoApi(Api):
    """flask-smorest's Api with hango's error envelope, documented on every operation."""

    ERROR_SCHEMA = ErrorSchema

    def handle_http_exception(self, error: HTTPException) -> Response:
        return http_error_response(error)


def _handle_hango_error(error: HangoError) -> Response:
    if error.status >= 500:
        log.warning("request failed: %s (%s)", error.code, error.status)
    response = envelope(error.status, error.code, error.message, error.details)
    response.headers.update(error.headers)
    return response


def _handle_unexpected(error: Exception) -> Response:
    if isinstance(error, HTTPException):
        return http_error_response(error)
    # The message of a database or library error can quote request content: log only where it failed.
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/site-packages/" not in f.filename] + frames[-1:]
    where = "".join(traceback.format_list(ours))
    log.error("unhandled %s\n%s", type(error).__name__, where)
    return envelope(500, "internal_error", "internal error")


def init_errors(app: Flask) -> None:
    """Register the envelope for domain errors and for anything unexpected."""
    app.register_error_handler(HangoError, _handle_hango_error)
    app.register_error_handler(Exception, _handle_unexpected)
