"""The REST API object and the one place where errors become JSON envelopes."""

from __future__ import annotations

import functools
import json
import logging
import re
import traceback
from collections.abc import Callable
from typing import Any

import flask_smorest
import marshmallow as ma
from flask import Flask, Response, g, jsonify, request
from flask_smorest import Api
from marshmallow import Schema, fields
from sqlalchemy import exc as sa_exc
from webargs.flaskparser import FlaskParser
from werkzeug.exceptions import HTTPException, InternalServerError, MethodNotAllowed

from hango import contract
from hango.errors import (
    BadRequest,
    HangoError,
    PayloadTooLarge,
    ServiceUnavailable,
    Unprocessable,
    UnsupportedMedia,
)

log = logging.getLogger(__name__)

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
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
    # Written out: flask-smorest converts this schema before ``text_keywords`` is registered.
    code = fields.String(required=True, metadata={"pattern": "^[a-z_]+$"})
    message = fields.String(required=True, metadata={"not": contract.NO_NUL["not"]})
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
    if error.code == 413 and request.max_content_length is not None:  # werkzeug's, on Content-Length
        message = too_large(request.max_content_length)
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
    "`forbidden` (403, a write on what the caller may read but not change: an agent, its memory, skills "
    "and override set by a member who does not own it, the tenant's settings and members by a member; "
    "`details.may_change` says who may), "
    "`method_not_allowed` (405, with `Allow`), `payload_too_large` (413), `unsupported_media_type` (415, a "
    "body sent without a JSON content type), "
    "`invalid` (422, the body or parameters break the schema; `details` says where), "
    "`nul_character`, `lone_surrogate` (422, a text holds U+0000 or a lone surrogate, which cannot be "
    "stored), `missing_body` (422, the operation needs a JSON body and got none), "
    "`header_too_large` (431, a request header or all of them past the server's limit), "
    "`rate_limited` (429, with `Retry-After`: all of a member's keys share one count per minute), "
    "`too_many_failures` (429, with `Retry-After`: too many failed authentications from this client or for "
    "this key prefix; the right key still passes), `internal_error` (500), "
    "`database_unavailable` (503, with `Retry-After`: the database lost or refused the connection; retry)."
)


class HangoApi(Api):
    """flask-smorest's Api with hango's error envelope, documented on every operation."""

    ERROR_SCHEMA = ErrorSchema

    def _init_spec(self, *, extra_plugins: Any = None, **options: Any) -> None:
        super()._init_spec(extra_plugins=[*(extra_plugins or ()), contract.ContractPlugin()], **options)
        self.ma_plugin.converter.add_attribute_function(contract.text_keywords)
        self.ma_plugin.converter.add_attribute_function(contract.nullable_nested)
        for name, schema in contract.json_value_schemas().items():
            self.spec.components.schema(name, schema)

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


def _unstorable(value: Any) -> str | None:
    """``nul_character`` or ``lone_surrogate`` when a string (key or value) inside a parsed JSON
    document holds U+0000 or a lone surrogate; None when every string can be stored (no recursion)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return "nul_character"
            if _LONE_SURROGATE.search(item):
                return "lone_surrogate"
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = {
    "nul_character": "a NUL character (U+0000)",
    "lone_surrogate": "a lone surrogate (U+D800–U+DFFF without its pair)",
}


def request_body() -> bytes:
    """The body, read once; one sent chunked (no ``Content-Length``) past the limit is 413 as a declared one is.

    werkzeug stops reading a streamed body at ``MAX_CONTENT_LENGTH`` and hands back its first bytes,
    which would be judged as JSON cut short (400); one more byte on the server's stream tells the
    two apart, so a body of exactly the limit still passes. Up to another limit's worth is read and
    dropped first, so a client still sending reads its 413 rather than a reset connection.
    """
    data = request.get_data(cache=True)
    limit = request.max_content_length
    streamed = request.content_length is None and limit is not None and len(data) >= limit
    rest = request.environ["wsgi.input"]
    if streamed and rest.read(1):
        rest.read(limit)
        raise PayloadTooLarge(too_large(limit))
    return data


def too_large(limit: int) -> str:
    """The one 413 message, for a body declared too large (``Content-Length``) and one sent chunked."""
    return f"the request body is larger than {limit} bytes (HANGO_MAX_BODY_BYTES)"


def screen_input() -> None:
    """Refuse what the argument parser cannot take: a body that is not JSON, JSON that does not parse
    or nests too deep, text hango cannot store. The one place these rules live.

    A body sent without a JSON content type is 415 ``unsupported_media_type``; JSON nested past
    Python's parser stack raises ``RecursionError`` inside the parser (400 ``bad_request``);
    invalid JSON is 400 ``bad_request`` naming the line and column. U+0000 cannot be stored in
    PostgreSQL's ``text`` (422 ``nul_character``), a lone surrogate (JSON's ``"\\ud800"``) cannot
    be encoded as UTF-8 (422 ``lone_surrogate``); a path or query string never holds one (werkzeug
    decodes bad UTF-8 to U+FFFD). A missing body is the view's to judge (``Blueprint.arguments``).
    """
    where, code = None, None
    data = request_body()
    if "\x00" in request.path or any("\x00" in k + v for k, v in request.args.items(multi=True)):
        where, code = "path or query", "nul_character"
    elif data and not request.is_json:
        raise UnsupportedMedia("the body must be JSON: send it with Content-Type: application/json")
    elif request.is_json and data:
        try:
            body = json.loads(data)
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
        code = _unstorable(body)
        where = "body" if code else None
    if where is not None and code is not None:
        raise Unprocessable(
            f"the {where} holds {_UNSTORABLE[code]}, which hango cannot store",
            code=code,
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
    """The blueprint every API area uses: flask-smorest's, with hango's argument parser.

    A JSON body the document marks required is required: webargs reads a missing body as ``{}``,
    which a PATCH would take for "change nothing" (422 ``missing_body``). A body of another media
    type never gets here: ``screen_input`` answers it 415 for every operation.
    """

    ARGUMENTS_PARSER = InputParser()

    def arguments(self, schema: Any, *, location: str = "json", required: bool = True, **kwargs: Any):
        decorate = super().arguments(schema, location=location, required=required, **kwargs)
        if location != "json":
            return decorate
        return lambda view: _checking_body(decorate(view), required)


def _checking_body(view: Callable[..., Any], required: bool) -> Callable[..., Any]:
    """``view``, refusing a request whose body is missing when ``required``."""

    @functools.wraps(view)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if required and not request.get_data(cache=True):
            raise Unprocessable(
                "this operation needs a JSON body", code="missing_body", details={"json": "missing"}
            )
        return view(*args, **kwargs)

    return checked


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
