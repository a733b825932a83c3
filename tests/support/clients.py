"""Test clients that call the API as one key, and the tenants they belong to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.support.queue import finished_in_process


@dataclass
class As:
    """The app's test client, authenticated with one API key."""

    client: FlaskClient
    key: str
    tenant_id: str
    user_id: str
    role: str

    def _headers(self, headers: dict[str, str] | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}", **(headers or {})}

    def request(
        self, method: str, path: str, *, json: Any = None, headers: dict | None = None, **kw
    ) -> TestResponse:
        return self.client.open(path, method=method, json=json, headers=self._headers(headers), **kw)

    def get(self, path: str, **kw) -> TestResponse:
        return self.request("GET", path, **kw)

    def post(self, path: str, json: Any = None, **kw) -> TestResponse:
        return self.request("POST", path, json=json, **kw)

    def post_and_wait(self, path: str, json: Any = None, **kw) -> Any:
        """``POST .../messages`` (or ``.../compact``), then the run to its end in this process (``tests.support.queue``)."""
        return finished_in_process(self, self.post(path, json=json, **kw))

    def put(self, path: str, json: Any = None, **kw) -> TestResponse:
        return self.request("PUT", path, json=json, **kw)

    def patch(self, path: str, json: Any = None, **kw) -> TestResponse:
        return self.request("PATCH", path, json=json, **kw)

    def delete(self, path: str, **kw) -> TestResponse:
        return self.request("DELETE", path, **kw)


@dataclass
class Tenant:
    """One tenant with an owner, an admin and two members."""

    id: str
    owner: As
    admin: As
    member: As
    member2: As


def error_code(response: TestResponse) -> str:
    """The envelope's error code, asserting the envelope's shape on the way."""
    body = response.get_json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]["code"]
