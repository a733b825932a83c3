"""A slow MCP listing on a real one-worker gunicorn (issue 48 §3): the listing ends at its one deadline,
and ``/healthz`` answers throughout."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import requests

from tests.reliability.conftest import MakeTenant
from tests.support.mcp import list_server, requests_seen
from tests.support.server import gunicorn_server

pytestmark = pytest.mark.server

LIST_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def one_worker(database_url: str) -> Iterator[str]:
    """One web worker: a request that held it would hold every other request too."""
    env = {"HANGO_MCP_ALLOW_NETWORKS": "127.0.0.0/8", "HANGO_MCP_LIST_TIMEOUT": str(LIST_TIMEOUT)}
    with gunicorn_server(database_url, workers=1, env=env) as url:
        yield url


def test_a_listing_of_50_slow_pages_ends_at_the_deadline_and_healthz_answers_throughout(
    one_worker: str, live_tenant: MakeTenant
) -> None:
    owner = live_tenant(one_worker).owner
    agent = owner.post("/v1/agents", json={"name": "slow"}).json()["id"]
    answers: dict[str, requests.Response] = {}
    probes: list[int] = []
    # 2 tools a page, 2 s a page, 50 pages: 100 s of listing the server would need
    with list_server(count=100, per_page=2, delay=2.0) as url:
        server = owner.post("/v1/mcp-servers", json={"name": "slow", "url": url}).json()["id"]

        def attach() -> None:
            answers["attach"] = owner.put(f"/v1/agents/{agent}/mcp-servers/{server}", json={})

        attaching = threading.Thread(target=attach)
        attaching.start()
        while attaching.is_alive() or not probes:
            probes.append(requests.get(f"{one_worker}/healthz", timeout=30).status_code)
        attaching.join()
        pages = requests_seen(url)

    attached = answers["attach"]
    assert attached.status_code == 502, attached.text
    assert attached.json()["error"]["code"] == "mcp_server_failed"
    assert "within 3 s (HANGO_MCP_LIST_TIMEOUT)" in attached.json()["error"]["message"]
    assert set(probes) == {200}
    assert pages < 10  # the listing stopped after a few of the server's 50 pages
    assert owner.get(f"/v1/mcp-servers/{server}").json()["tools"] is None
    assert owner.get(f"/v1/agents/{agent}/mcp-servers").json()["items"] == []
