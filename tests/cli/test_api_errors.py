"""The CLI says every API error in the server's words: message, status, code and every detail."""

from __future__ import annotations

import json

import requests

from hango.cli.client import ApiError


def answer(status: int, error: dict) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps({"error": error}).encode()
    return response


def test_the_cli_shows_every_errors_detail():
    invalid = {
        "code": "invalid",
        "message": "the request body or parameters are not valid",
        "details": {"query": {"to": ["expected a call id or 'next'"]}},
    }
    refused = {
        "code": "unknown_part",
        "message": "these parts are not in the session's next request: tool:nope",
        "details": {"reason": "unknown_part", "parts": ["tool:nope", "message:9"]},
    }
    limited = {"code": "too_many_runs", "message": "too many runs", "details": {"running": 4, "limit": 4}}
    nested = {
        "code": "invalid",
        "message": "not valid",
        "details": {"json": {"overrides": {"0": {"part": ["bad"]}}}},
    }

    assert str(ApiError(answer(422, invalid))) == (
        "the request body or parameters are not valid (422 invalid); to: expected a call id or 'next'"
    )
    assert str(ApiError(answer(422, refused))) == (
        "these parts are not in the session's next request: tool:nope (422 unknown_part); parts: tool:nope, message:9"
    )
    assert str(ApiError(answer(429, limited))) == "too many runs (429 too_many_runs); running: 4; limit: 4"
    assert str(ApiError(answer(422, nested))) == "not valid (422 invalid); overrides.0.part: bad"
    assert str(ApiError(answer(404, {"code": "not_found", "message": "gone", "details": None}))) == (
        "gone (404 not_found)"
    )
