"""What the OpenAPI document promises beyond each view's own schemas: the text rule and the generic answers.

Every text hango stores holds no U+0000 (PostgreSQL's ``text`` and ``jsonb`` cannot
keep it) and no lone surrogate (it cannot be encoded as UTF-8): ``hango.api.screen_input``
refuses both in any string of a request (422 ``nul_character``, ``lone_surrogate``),
and every string property of the document says so (``NO_NUL``, or a pattern of its own).

Every ``/v1`` operation may also answer 401 (no or a bad key), 429 (the member's rate
limit, or too many failed authentications), 500 and 503; one with a path parameter 404;
one with a query 400 (a parameter it does not take) and 422; one with a body 400 (JSON
that does not parse, naming where), 413, 415 (a body sent without a JSON content type) and
422. ``ContractPlugin`` lists them on each operation with the error envelope, adding to the
statuses its view documents. The rules themselves live in one place each: the body's in
``hango.api.screen_input``, the query's in ``hango.api.InputParser``, a missing body in
``hango.api.Blueprint.arguments``.
"""

from __future__ import annotations

from typing import Any

from apispec import BasePlugin
from marshmallow import fields

# Text holds no U+0000: "does not match \x00" rather than "^[^\x00]*$", which says the same but makes
# regex-driven generators (hypothesis, schemathesis) build every string from a pattern, 60 times slower.
# Lone surrogates stay out of it: ECMA-262 with the ``u`` flag and Rust cannot name them (a string of
# Unicode scalar values holds none); the 422 answers and `JsonValue` say it, and the server refuses them.
NO_NUL = {"not": {"pattern": "\\x00"}}
TEXT_RULE = "no U+0000 and no lone surrogate"
# Text with some character that is not white space (and, as all text, no U+0000).
NON_BLANK_TEXT = {"pattern": "\\S", **NO_NUL}
ERROR_REF = {"$ref": "#/components/schemas/Error"}

# JSON whose strings (keys too) follow the text rule, nested at most ``JSON_DEPTH`` arrays or objects
# deep: an agent's ``settings`` values. Spelled out level by level (``JsonValue`` holds ``JsonValue3``
# ... ``JsonValue0``, a scalar), so every reader sees the whole rule without following a recursion.
JSON_VALUE = "JsonValue"
JSON_DEPTH = 4


def json_value_schemas(depth: int = JSON_DEPTH) -> dict[str, dict[str, Any]]:
    """The components ``JsonValue`` (``depth`` levels) down to ``JsonValue0`` (a string, number, bool or null)."""
    scalars: list[dict[str, Any]] = [
        {"type": "string", **NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
    ]
    schemas = {f"{JSON_VALUE}0": {"nullable": True, "anyOf": scalars}}
    for level in range(1, depth + 1):
        inner = {"$ref": f"#/components/schemas/{JSON_VALUE}{level - 1}"}
        nested = [
            {"type": "array", "items": inner},
            # JSON Schema's keyword for the keys (OpenAPI 3.0 lacks it: 3.0 readers skip it, schema-driven
            # clients and fuzzers read it); every mapping of the document carries one.
            {"type": "object", "additionalProperties": inner, "propertyNames": NO_NUL},
        ]
        name = JSON_VALUE if level == depth else f"{JSON_VALUE}{level}"
        schemas[name] = {"nullable": True, "anyOf": [*scalars, *nested]}
    schemas[JSON_VALUE]["description"] = (
        f"any JSON value nested at most {depth} arrays or objects deep; every string in it, keys too, "
        f"has {TEXT_RULE}"
    )
    return schemas


def json_depth(value: Any) -> int:
    """How many arrays or objects deep ``value`` nests (0 for a scalar); iterative, for any input."""
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            pending.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


GENERIC = {
    "401": "`missing_api_key`, `malformed_api_key`, `invalid_api_key`, `revoked_api_key`: "
    "no usable API key in `Authorization: Bearer`.",
    "429": "`rate_limited` (all of a member's keys share one count per minute) or `too_many_failures` "
    "(too many failed authentications from this client or for this key prefix; the right key still "
    "passes); both with `Retry-After`.",
    "500": "`internal_error`: hango failed; nothing of the request is kept.",
    "503": "`database_unavailable`, with `Retry-After`: the database lost or refused the connection; retry.",
}
WITH_PATH = {"404": "`not_found`: no such object in the caller's tenant, or not one the caller may see."}
WITH_INPUT = {
    "422": "`invalid`: the parameters or body break the schema (`details` says where); "
    "`nul_character`, `lone_surrogate`: a text holds U+0000 or a lone surrogate, which cannot be stored.",
}
WITH_QUERY = {
    **WITH_INPUT,
    "400": "`unknown_parameter`: a query parameter the operation does not take "
    "(`details.unknown`; `details.accepted` lists those it takes).",
}
WITH_BODY = {
    "400": "`bad_request`: the body is not valid JSON (the message and `details` name the line and "
    "column), or nests too deep.",
    "413": "`payload_too_large`: the body is larger than the server takes (`HANGO_MAX_BODY_BYTES`).",
    "415": "`unsupported_media_type`: a body sent without a JSON content type (`application/json`).",
    "422": WITH_INPUT["422"] + " `missing_body`: the operation needs a JSON body and got none.",
}


def text_keywords(self: Any, field: fields.Field, ret: dict, **_kw: Any) -> dict[str, Any]:
    """An apispec attribute function: no NUL in every plain string property, and the rule of a
    mapping's keys (a field's ``property_names`` metadata) as ``propertyNames``."""
    extra: dict[str, Any] = {}
    if isinstance(field, fields.Dict):
        extra["propertyNames"] = field.metadata.get("property_names", NO_NUL)
    plain = ret.get("type") == "string" and not {"pattern", "format", "enum"} & ret.keys()
    if plain and isinstance(field, fields.String):
        extra.update(NO_NUL)
    return extra


def nullable_nested(self: Any, field: fields.Field, ret: dict, **_kw: Any) -> dict[str, Any]:
    """An apispec attribute function: a nested schema that may be null is that schema or null.

    apispec writes OpenAPI 3.0's nullable reference as ``anyOf: [$ref, {type: object, nullable}]``,
    whose second branch takes any object at all: a reader (or a fuzzer) then believes a body the
    server refuses is valid. ``allOf: [$ref]`` with ``nullable`` says what the server reads.
    """
    nullable_object = {"type": "object", "nullable": True}
    any_of = ret.get("anyOf")
    if isinstance(field, fields.Nested) and any_of and len(any_of) == 2 and any_of[1] == nullable_object:
        del ret["anyOf"]
        return {"allOf": [any_of[0]], "nullable": True}
    return {}


class ContractPlugin(BasePlugin):
    """Lists the answers every ``/v1`` operation can give besides its own, with the error envelope."""

    def operation_helper(self, path: str | None = None, operations: dict | None = None, **_kw: Any) -> None:
        if not path or not path.startswith("/v1/"):
            return
        for operation in (operations or {}).values():
            generic = {**GENERIC, **(WITH_PATH if "{" in path else {})}
            if any(p.get("in") == "query" for p in operation.get("parameters", []) if isinstance(p, dict)):
                generic |= WITH_QUERY
            if "requestBody" in operation:
                generic = _joined(generic, WITH_BODY)
            responses = operation.setdefault("responses", {})
            for status, text in generic.items():
                _document(responses, status, text)


def _joined(generic: dict[str, str], more: dict[str, str]) -> dict[str, str]:
    """``generic`` with ``more``; a status both list says both texts (a query's 400 and a body's)."""
    joined = dict(generic)
    for status, text in more.items():
        own = joined.get(status)
        joined[status] = text if own is None or text.startswith(own) else f"{own} {text}"
    return joined


def _document(responses: dict, status: str, text: str) -> None:
    """Add ``status`` with ``text``, or append ``text`` to the view's own entry when it has one."""
    # flask-smorest keys a view's statuses by int here; apispec writes them as strings later.
    key = next((k for k in (int(status), status) if k in responses), status)
    own = responses.get(key)
    if own is None or isinstance(own, str):
        # flask-smorest's own 422 (a component name) says only "Unprocessable Entity".
        responses[key] = {"description": text, "content": {"application/json": {"schema": ERROR_REF}}}
    elif text not in own.get("description", ""):
        own["description"] = f"{own.get('description', '')} {text}".strip()
