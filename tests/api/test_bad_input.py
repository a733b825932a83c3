"""Bad input on every write route: the documented status and envelope, and no row written."""

from __future__ import annotations

import json

import pytest

from tests.api.examples import BODY_ROUTES, BY_ROUTE, fill, route_id
from tests.support.clients import error_code
from tests.support.world import World, row_counts

KINDS = {
    "malformed_json": (400, "bad_request"),
    "not_an_object": (422, "invalid"),
    "unknown_field": (422, "invalid"),
    "wrong_type": (422, "invalid"),
    "out_of_range": (422, "invalid"),
    "not_json_content_type": (415, "unsupported_media_type"),
    "lone_surrogate": (422, "lone_surrogate"),
}


def _payload(kind: str, body: dict | None, bad: dict) -> dict:
    """The request arguments that carry one kind of bad input."""
    if kind == "malformed_json":
        return {"data": '{"name": ', "content_type": "application/json"}
    if kind == "not_json_content_type":
        return {"data": json.dumps(body or {}), "content_type": "text/plain"}
    if kind == "lone_surrogate":  # valid JSON (an escape) that PostgreSQL's text cannot hold
        return {"data": json.dumps({**(body or {}), "note": "\ud800"}), "content_type": "application/json"}
    if kind == "not_an_object":
        return {"json": ["a", "list"]}
    if kind == "unknown_field":
        return {"json": {**(body or {}), "colour": "blue"}}
    return {"json": bad[kind]}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("route", BODY_ROUTES, ids=route_id)
def test_bad_input_is_refused_and_writes_nothing(route, kind, acme, world: World, engine):
    example = BY_ROUTE[route]
    assert {"wrong_type", "out_of_range"} <= set(example.bad), f"{route}: add bad bodies to the example"
    path, body = example.for_world(world.values())
    before = row_counts(engine)

    payload = _payload(kind, body, fill(example.bad, world.values()))
    response = acme.owner.request(example.method, path, **payload)

    status, code = KINDS[kind]
    assert response.status_code == status, response.get_json()
    assert error_code(response) == code
    assert row_counts(engine) == before


def test_invalid_json_is_400_naming_where_it_broke(acme, world: World):
    response = acme.owner.request(
        "POST", "/v1/agents", data='{"name": "a",\n "model": }', content_type="application/json"
    )

    assert (response.status_code, error_code(response)) == (400, "bad_request")
    error = response.get_json()["error"]
    assert "line 2, column" in error["message"]
    assert error["details"]["line"] == 2


def test_an_unknown_query_parameter_is_400_naming_the_accepted_ones(acme, world: World):
    response = acme.owner.get(f"/v1/sessions/{world.session}/context", query_string={"fromat": "request"})

    assert (response.status_code, error_code(response)) == (400, "unknown_parameter")
    error = response.get_json()["error"]
    assert error["details"] == {"unknown": ["fromat"], "accepted": ["compaction", "format", "full"]}
    assert "accepted: compaction, format, full" in error["message"]
