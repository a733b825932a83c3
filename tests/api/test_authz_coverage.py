"""The authz table and the URL map list the same routes, and every route has an example request."""

from __future__ import annotations

import pytest
from flask import Flask

from hango import authz
from tests.api.examples import API_ROUTES, BY_ROUTE, route_id

IGNORED_METHODS = {"HEAD", "OPTIONS"}


def url_map_routes(app: Flask) -> set[tuple[str, str]]:
    """Every (method, rule) the app serves, except Flask's static files and the API docs' pages."""
    return {
        (method, rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static" and not rule.endpoint.startswith("api-docs.")
        for method in rule.methods - IGNORED_METHODS
    }


def test_every_served_route_has_a_rule(session_app: Flask):
    missing = sorted(url_map_routes(session_app) - set(authz.TABLE))
    assert missing == [], "routes without a row in hango/authz.py TABLE"


@pytest.mark.parametrize("route", sorted(authz.TABLE), ids=route_id)
def test_every_table_row_is_served(session_app: Flask, route):
    served = {(m, rule.rule) for rule in session_app.url_map.iter_rules() for m in rule.methods}
    assert route in served


def test_every_route_has_an_example_request(session_app: Flask):
    api_served = {route for route in url_map_routes(session_app) if route[1].startswith("/v1/")}
    assert sorted((api_served | set(API_ROUTES)) - set(BY_ROUTE)) == []


def test_every_rule_is_known(session_app: Flask):
    known = {"public", "tenant", "admin", "agent:read", "agent:write", "session", "run", "api_key"}
    assert set(authz.TABLE.values()) <= known | {
        "member:admin",
        "mcp_server",
        "mcp_server:admin",
        "agent:admin",
    }


def test_an_unlisted_v1_route_fails_closed(make_app, acme):
    app = make_app()
    app.add_url_rule("/v1/unlisted", "unlisted", lambda: "open")
    response = app.test_client().get("/v1/unlisted", headers={"Authorization": f"Bearer {acme.owner.key}"})
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "not_found"
