"""Errors: one JSON envelope with the right status for every bad request; nothing written."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import g
from flask_smorest import Blueprint

from hango import authz
from hango.db.schema import agents
from tests.support.clients import error_code


def _agent_count(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(agents)).scalar_one()


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ('{"name": "a",', 400, "bad_request"),
        ('{"name": "a", "colour": "red"}', 422, "invalid"),
        ('{"name": 42}', 422, "invalid"),
        ('{"name": "a", "context_window": "big"}', 422, "invalid"),
        ('{"name": "a", "tools": ["rm_rf"]}', 422, "invalid"),
        ('{"name": ""}', 422, "invalid"),
        ("[1, 2]", 422, "invalid"),
        ('"just a string"', 422, "invalid"),
    ],
)
def test_bad_bodies_get_the_envelope_and_write_nothing(acme, engine, body, status, code):
    response = acme.owner.post("/v1/agents", data=body, headers=JSON)
    assert response.status_code == status
    assert error_code(response) == code
    assert _agent_count(engine) == 0


def test_validation_details_name_the_field(acme):
    response = acme.owner.post("/v1/agents", json={"name": "a", "colour": "red"})
    assert response.get_json()["error"]["details"] == {"json": {"colour": ["Unknown field."]}}


def test_oversize_body_gets_413(acme, engine, make_app):
    app = make_app(max_body_bytes=1024)
    acme.owner.client = app.test_client()
    response = acme.owner.post("/v1/agents", json={"name": "a", "system_prompt": "x" * 2048})
    assert response.status_code == 413
    assert error_code(response) == "payload_too_large"
    assert _agent_count(engine) == 0


def test_bad_uuid_in_a_path_is_404(acme):
    response = acme.owner.get("/v1/agents/not-a-uuid")
    assert response.status_code == 404
    assert error_code(response) == "not_found"


def test_unknown_route_is_a_json_404(acme, client):
    for response in (acme.owner.get("/v1/nothing-here"), client.get("/nothing-here")):
        assert response.status_code == 404
        assert response.is_json
        assert error_code(response) == "not_found"


def test_wrong_method_is_405_with_allow(acme):
    response = acme.owner.put("/v1/agents", json={})
    assert response.status_code == 405
    assert error_code(response) == "method_not_allowed"
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS", "POST"}


def _broken_app(make_app):
    """An app with one route that writes a row and then fails in the database."""
    app = make_app()
    broken = Blueprint("broken", __name__)

    @broken.post("/v1/broken")
    def fail():
        g.store.agents.create(g.principal.user_id, name="half", model="offline/echo")
        g.store.conn.execute(sa.text("select * from no_such_table where secret = 'canary-123'"))

    app.register_blueprint(broken)
    return app


def test_a_v1_route_missing_from_the_authz_table_fails_closed(acme, make_app):
    acme.owner.client = _broken_app(make_app).test_client()
    response = acme.owner.post("/v1/broken")
    assert response.status_code == 404


def test_database_errors_are_500_without_detail_and_rolled_back(acme, engine, make_app, monkeypatch):
    monkeypatch.setitem(authz.TABLE, ("POST", "/v1/broken"), "tenant")
    acme.owner.client = _broken_app(make_app).test_client()
    response = acme.owner.post("/v1/broken")
    assert response.status_code == 500
    assert response.get_json() == {
        "error": {"code": "internal_error", "message": "internal error", "details": None}
    }
    assert "canary-123" not in response.get_data(as_text=True)
    assert _agent_count(engine) == 0


def test_a_json_body_is_parsed_once(acme, monkeypatch):
    def second_parse(_data):
        raise AssertionError("webargs parsed a body the input screen had already parsed")

    monkeypatch.setattr("webargs.core.parse_json", second_parse)
    response = acme.owner.post("/v1/agents", json={"name": "parsed once"})
    assert response.status_code == 201
    assert response.get_json()["name"] == "parsed once"
