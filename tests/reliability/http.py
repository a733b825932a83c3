"""An HTTP client of a live hango server, authenticated with one API key; and agent/session helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import requests

from tests.support.queue import finished_over_http

TIMEOUT = 30.0


@dataclass
class Http:
    """``requests`` against ``url`` with one key; every call is bounded by ``TIMEOUT``."""

    url: str
    key: str
    tenant_id: str
    user_id: str
    key_id: str
    session: requests.Session = field(default_factory=requests.Session, repr=False)

    def request(self, method: str, path: str, *, json: Any = None, **kw: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.key}", **kw.pop("headers", {})}
        kw.setdefault("timeout", TIMEOUT)
        return self.session.request(method, self.url + path, json=json, headers=headers, **kw)

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> requests.Response:
        return self.request("POST", path, json=json, **kw)

    def post_and_wait(self, path: str, json: Any = None, **kw: Any) -> Any:
        """``POST .../messages``, then poll its run to the end (``tests.support.queue``)."""
        return finished_over_http(self.get, self.post(path, json=json, **kw))

    def put(self, path: str, json: Any = None, **kw: Any) -> requests.Response:
        return self.request("PUT", path, json=json, **kw)

    def close(self) -> None:
        self.session.close()


def make_agent(who: Http, model: str, **fields: Any) -> str:
    """Create an agent through the API; returns its id."""
    body = {"name": "reliable", "model": model, "system_prompt": "You help.", **fields}
    made = who.post("/v1/agents", json=body)
    assert made.status_code == 201, made.text
    return made.json()["id"]


def make_session(who: Http, agent_id: str) -> str:
    """Create a session of ``agent_id`` through the API; returns its id."""
    made = who.post("/v1/sessions", json={"agent_id": agent_id})
    assert made.status_code == 201, made.text
    return made.json()["id"]


def history(who: Http, session_id: str) -> list[dict[str, Any]]:
    """Every stored message of the session, through the API."""
    page = who.get(f"/v1/sessions/{session_id}/messages", params={"limit": 10_000})
    assert page.status_code == 200, page.text
    return page.json()["items"]
