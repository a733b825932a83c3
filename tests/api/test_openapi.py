"""The OpenAPI document describes every route of the authz table, each with a summary."""

from __future__ import annotations

import re

import pytest

from tests.api.examples import API_ROUTES, route_id


def openapi_path(rule: str) -> str:
    """``/v1/agents/<uuid:agent_id>`` as OpenAPI writes it: ``/v1/agents/{agent_id}``."""
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule)


@pytest.fixture(scope="module")
def document(session_app) -> dict:
    return session_app.test_client().get("/openapi.json").get_json()


@pytest.mark.parametrize("route", API_ROUTES, ids=route_id)
def test_every_route_is_documented_with_a_summary(document: dict, route):
    method, rule = route
    operation = document["paths"][openapi_path(rule)][method.lower()]
    assert operation["summary"]
    assert "default" in operation["responses"], "the error envelope is documented"


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("delete", "/v1/api-keys/{key_id}", "409", "last_api_key"),
        ("delete", "/v1/members/{user_id}", "409", "last_owner"),
        ("post", "/v1/members", "422", "role_not_allowed"),
        ("post", "/v1/sessions", "422", "unknown_agent"),
        ("put", "/v1/agents/{agent_id}/memory/{path}", "422", "invalid_path"),
        ("post", "/v1/agents/{agent_id}/skills", "409", "skill_exists"),
    ],
)
def test_specific_errors_are_documented(document: dict, method, path, status, code):
    response = document["paths"][path][method]["responses"][status]
    assert f"`{code}`" in response["description"]
    assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
