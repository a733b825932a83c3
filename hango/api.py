"""The REST API object and the one place where errors become JSON envelopes."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

import flask_smorest
import marshmallow as ma
from flask import Flask, Response, g, jsonify, request
from flask_smorest import Api
from marshmallow import Schema, fields
from sqlalchemy import exc as sa_exc
from webargs.flaskparser import FlaskParser
from werkzeug.exceptions import HTTPException, InternalServerError, MethodNotAllowed

from hango.errors import BadRequest, HangoError, ServiceUnavailable, Unprocessable, UnsupportedMediaType

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


GENERIC_ERRORS = (
    "The error envelope. Besides the codes each operation lists: `bad_request` (400, malformed JSON: the "
    "message and `details` name the line and column), `unknown_parameter` (400, a query parameter the "
    "operation does not take; `details.accepted` lists those it does), "
    "`missing_api_key`, `malformed_api_key`, `invalid_api_key`, `revoked_api_key` (401), "
    "`method_not_allowed` (405, with `Allow`), `payload_too_large` (413), `unsupported_media_type` (415, a "
    "body sent without a JSON content type), "
    "`invalid` (422, the body or parameters break the schema; `details` says where), "
    "`nul_character` (422, a text holds U+0000, which cannot be stored), "
    "`lone_surrogate` (422, a text holds an unpaired UTF-16 surrogate, which cannot be stored), "
    "`rate_limited` (429, with `Retry-After`: all of a member's keys share one count per minute), "
    "`too_many_failures` (429, with `Retry-After`: too many failed authentications from this client or for "
    "this key prefix; the right key still passes), `internal_error` (500), "
    "`database_unavailable` (503, with `Retry-After`: the database lost or refused the connection; retry)."
)


class HangoApi(Api):
    """flask-smorest's Api with hango's error envelope, documented on every operation."""

    ERROR_SCHEMA = ErrorSchema

    def register_blueprint(
        self, blp: flask_smorest.Blueprint, *, parameters: Any = None, **options: Any
    ) -> None:
        super().register_blueprint(blp, parameters=parameters, **options)
        # Hooked per app under the blueprint's name: it runs after the app's own hooks, so
        # authentication and authorization answer first, and the shared blueprint is untouched.
        self._app.before_request_funcs.setdefault(blp.name, []).append(screen_input)

    def handle_http_exception(self, error: HTTPException) -> Response:
        original = getattr(error, "original_exception", None)
        if isinstance(error, InternalServerError) and original is not None:
            # Flask wraps what escapes the view and its handlers (a failed commit in after_request).
            return _handle_unexpected(original)
        return http_error_response(error)

    def _register_responses(self) -> None:
        """flask-smorest's responses, with the default error response listing the generic codes."""
        super()._register_responses()
        # flask-smorest registers it lazily with a fixed text; only its description changes here.
        self.spec.components._subsections_lazy["response"]["DEFAULT_ERROR"]["description"] = GENERIC_ERRORS


def _unstorable(text: str) -> str | None:
    """``nul_character`` or ``lone_surrogate`` when PostgreSQL's ``text`` cannot store ``text``, else None."""
    if "\x00" in text:
        return "nul_character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "lone_surrogate"
    return None


def _holds_unstorable(value: Any) -> str | None:
    """The first reason any string (key or value) inside a parsed JSON document cannot be stored (no recursion)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            reason = _unstorable(item)
            if reason:
                return reason
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None


UNSTORABLE = {
    "nul_character": "a NUL character (U+0000)",
    "lone_surrogate": "a lone surrogate (U+D800–U+DFFF without its pair)",
}


def screen_input() -> None:
    """Refuse what the argument parser cannot take: a body that is not JSON, JSON nested too deep, text
    PostgreSQL cannot store.

    A body sent without a JSON content type is 415 ``unsupported_media_type``; JSON nested past
    Python's parser stack raises ``RecursionError`` inside the parser (400 ``bad_request`` here);
    invalid JSON is 400 naming the line and column; U+0000 and lone surrogates cannot be stored in
    PostgreSQL's ``text`` (422 ``nul_character`` / ``lone_surrogate``).
    """
    where, reason = None, None
    if "\x00" in request.path or any("\x00" in k + v for k, v in request.args.items(multi=True)):
        where, reason = "path or query", "nul_character"
    elif request.get_data(cache=True) and not request.is_json:
        raise UnsupportedMediaType("the body must be JSON: send it with Content-Type: application/json")
    elif request.is_json and request.get_data(cache=True):
        try:
            body = json.loads(request.get_data(cache=True))
        except RecursionError:
            raise BadRequest("the JSON body is nested too deeply", code="bad_request") from None
        except json.JSONDecodeError as exc:
            raise BadRequest(
                f"the body is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                code="bad_request",
                details={"line": exc.lineno, "column": exc.colno, "position": exc.pos},
            ) from None
        except ValueError:
            return  # not UTF-8: the argument parser answers 400 with its reason
        g.json_body = body
        reason = _holds_unstorable(body)
        where = "body" if reason else None
    if where is not None:
        raise Unprocessable(
            f"the {where} holds {UNSTORABLE[reason]}, which hango cannot store",
            code=reason,
            details={"location": where},
        )


UNKNOWN_FIELD = ma.Schema._default_error_messages["unknown"]  # marshmallow's word for an unknown field


class InputParser(FlaskParser):
    """webargs' parser, reading the JSON body ``screen_input`` already parsed: one parse a request.

    An unknown query parameter is refused (400 ``unknown_parameter`` naming the accepted ones), as
    unknown body fields are (422).
    """

    DEFAULT_UNKNOWN_BY_LOCATION = {**FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION, "query": ma.RAISE}

    def handle_error(self, error: ma.ValidationError, req: Any, schema: ma.Schema, **kw: Any) -> Any:
        messages = error.messages.get("query") if isinstance(error.messages, dict) else None
        unknown = sorted(k for k, v in (messages or {}).items() if v == [UNKNOWN_FIELD])
        if unknown:
            accepted = sorted(f.data_key or name for name, f in schema.fields.items())
            raise BadRequest(
                f"unknown query parameter {', '.join(unknown)}; accepted: {', '.join(accepted) or 'none'}",
                code="unknown_parameter",
                details={"unknown": unknown, "accepted": accepted},
            )
        return super().handle_error(error, req, schema, **kw)

    def _raw_load_json(self, req: Any) -> Any:
        if "json_body" in g:
            return g.json_body
        return super()._raw_load_json(req)


class Blueprint(flask_smorest.Blueprint):
    """The blueprint every API area uses: flask-smorest's, with hango's argument parser."""

    ARGUMENTS_PARSER = InputParser()


def _handle_hango_error(error: HangoError) -> Response:
    if error.status >= 500:
        log.warning("request failed: %s (%s)", error.code, error.status)
    response = envelope(error.status, error.code, error.message, error.details)
    response.headers.update(error.headers)
    return response


def _handle_unexpected(error: Exception) -> Response:
    if isinstance(error, HTTPException):
        return http_error_response(error)
    if _database_unavailable(error):
        return _handle_hango_error(
            ServiceUnavailable(
                "the database could not serve this request right now, try again",
                code="database_unavailable",
                headers={"Retry-After": "1"},
            )
        )
    # The message of a database or library error can quote request content: log only where it failed.
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/site-packages/" not in f.filename] + frames[-1:]
    where = "".join(traceback.format_list(ours))
    log.error("unhandled %s\n%s", type(error).__name__, where)
    return envelope(500, "internal_error", "internal error")


def _database_unavailable(error: Exception) -> bool:
    """True for a lost or refused connection (a restart), a deadlock or a cancelled statement: worth a retry."""
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError)


def init_errors(app: Flask) -> None:
    """Register the envelope for domain errors and for anything unexpected."""
    app.register_error_handler(HangoError, _handle_hango_error)
    app.register_error_handler(Exception, _handle_unexpected)
