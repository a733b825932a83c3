"""A server's tool listing, bounded (issue 48): who may make hango list, the caps, the names, the errors.

Every server here is the SDK's own Streamable HTTP server (``tests/fakes/mcp_list_server.py`` or
``tests/fakes/mcp_http_server.py``) in a process the test starts.
"""

from __future__ import annotations

import ipaddress
import uuid

import pytest
import sqlalchemy as sa

from hango.db.schema import mcp_servers
from hango.mcp import addresses, tool_lists
from tests.support.clients import error_code
from tests.support.mcp import http_mcp_server, list_server, requests_seen

LOOPBACK = "127.0.0.0/8"


@pytest.fixture
def owner(make_app, acme):
    """The tenant's owner on an app whose MCP URLs may reach loopback, with a server key."""
    acme.owner.client = make_app(mcp_allow_networks=LOOPBACK, secret_key="k" * 40).test_client()
    return acme.owner


def _register(who, name: str, url: str, **more) -> str:
    made = who.post("/v1/mcp-servers", json={"name": name, "url": url, **more})
    assert made.status_code == 201, made.get_json()
    return made.get_json()["id"]


def _stored(engine, server_id: str):
    with engine.connect() as conn:
        row = conn.execute(sa.select(mcp_servers).where(mcp_servers.c.id == uuid.UUID(server_id))).one()
    return row.tools, row.tools_hash


# -- one write rule ---------------------------------------------------------------------------


def test_a_members_attach_is_403_and_the_server_sees_no_request(owner, acme):
    with list_server(names=["look"]) as url:
        server = _register(owner, "looked", url)
        acme.member.client = owner.client
        agent = acme.member.post("/v1/agents", json={"name": "mine"}).get_json()["id"]

        attach = acme.member.put(f"/v1/agents/{agent}/mcp-servers/{server}", json={})
        detach = acme.member.delete(f"/v1/agents/{agent}/mcp-servers/{server}")
        refresh = acme.member.post(f"/v1/mcp-servers/{server}/refresh")
        seen = requests_seen(url)

    assert [(r.status_code, error_code(r)) for r in (attach, detach, refresh)] == [(403, "forbidden")] * 3
    assert attach.get_json()["error"]["details"]["may_change"] == ["owner", "admin"]
    assert seen == 0


# -- the caps: nothing stored past one --------------------------------------------------------


def _refused_refresh(owner, engine, url: str, monkeypatch, **caps) -> tuple[str, tuple]:
    """Attach the server at ``url`` under today's caps, then refresh it under ``caps``: the refresh's
    error message and the stored list before and after it."""
    server = _register(owner, "capped", url)
    agent = owner.post("/v1/agents", json={"name": "a"}).get_json()["id"]
    assert owner.put(f"/v1/agents/{agent}/mcp-servers/{server}", json={}).status_code == 200
    before = _stored(engine, server)
    for name, value in caps.items():
        monkeypatch.setattr(tool_lists, name, value)
    refused = owner.post(f"/v1/mcp-servers/{server}/refresh")
    assert (refused.status_code, error_code(refused)) == (502, "mcp_server_failed"), refused.get_json()
    assert _stored(engine, server) == before and before[0] is not None
    return refused.get_json()["error"]["message"], before


def test_caps_an_oversized_list_fails_naming_its_cap_and_the_stored_list_is_unchanged(
    owner, engine, monkeypatch
):
    with list_server(count=30, description_chars=1_000) as url:
        message, before = _refused_refresh(owner, engine, url, monkeypatch, MAX_LIST_BYTES=20_000)
    assert "past 20,000 (MAX_LIST_BYTES)" in message and len(before[0]) == 30


def test_caps_an_oversized_tool_fails_naming_its_cap_and_the_stored_list_is_unchanged(
    owner, engine, monkeypatch
):
    with list_server(count=3, description_chars=5_000) as url:
        message, _ = _refused_refresh(owner, engine, url, monkeypatch, MAX_TOOL_BYTES=4_000)
    assert "the tool 'tool_0' is" in message and "past 4,000 (MAX_TOOL_BYTES)" in message


def test_caps_a_list_past_the_tool_cap_fails_naming_it_and_the_stored_list_is_unchanged(
    owner, engine, monkeypatch
):
    with list_server(count=12, per_page=5) as url:
        message, _ = _refused_refresh(owner, engine, url, monkeypatch, MAX_TOOLS=10)
    assert "more than 10 tools (MAX_TOOLS)" in message


def test_caps_a_listing_with_a_cursor_left_after_max_pages_fails_and_stores_nothing(
    owner, engine, monkeypatch
):
    with list_server(count=9, per_page=2) as url:
        message, before = _refused_refresh(owner, engine, url, monkeypatch, MAX_PAGES=4)
    assert "more tools after 4 pages (MAX_PAGES)" in message and len(before[0]) == 9


def test_caps_the_default_caps_are_what_the_docs_say():
    assert (tool_lists.MAX_TOOLS, tool_lists.MAX_PAGES) == (1000, 50)
    assert (tool_lists.MAX_TOOL_BYTES, tool_lists.MAX_LIST_BYTES) == (64_000, 1_000_000)


# -- one overall listing deadline --------------------------------------------------------------


def test_listing_slow_pages_ends_at_the_one_listing_deadline_and_stores_nothing(make_app, acme, engine):
    app = make_app(mcp_allow_networks=LOOPBACK, mcp_list_timeout=2.0, mcp_call_timeout=30.0)
    acme.owner.client = app.test_client()
    with list_server(count=100, per_page=2, delay=0.5) as url:
        server = _register(acme.owner, "slow", url)
        response = acme.owner.post(f"/v1/mcp-servers/{server}/refresh")
        pages = requests_seen(url)

    assert (response.status_code, error_code(response)) == (502, "mcp_server_failed"), response.get_json()
    assert (
        "did not list its tools within 2 s (HANGO_MCP_LIST_TIMEOUT)"
        in response.get_json()["error"]["message"]
    )
    assert _stored(engine, server) == (None, None)
    assert pages < 50  # the listing stopped long before the server's 50 pages


# -- errors that say what happened ---------------------------------------------------------------


def test_a_wrong_bearer_token_reads_as_http_401(owner, engine):
    with http_mcp_server("right-token") as url:
        server = _register(owner, "locked", url, headers={"Authorization": "Bearer wrong"})
        response = owner.post(f"/v1/mcp-servers/{server}/refresh")

    assert (response.status_code, error_code(response)) == (502, "mcp_server_failed")
    message = response.get_json()["error"]["message"]
    assert "HTTP 401" in message and "-32603" not in message


@pytest.mark.parametrize(
    ("address", "embedded"),
    [
        ("2002:7f00:1::", "127.0.0.1"),  # 6to4
        ("2002:a00:1::", "10.0.0.1"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"),  # Teredo (client obfuscated)
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"),
        ("64:ff9b::7f00:1", "127.0.0.1"),  # NAT64, well-known prefix
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("64:ff9b:1:7f00:0:100::", "127.0.0.1"),  # NAT64, local-use /48
        ("::ffff:192.168.0.9", "192.168.0.9"),  # IPv4-mapped
        ("::10.0.0.1", "10.0.0.1"),  # IPv4-compatible
    ],
)
def test_ipv4_embedded_in_ipv6_is_checked_against_the_private_ranges(acme, address, embedded):
    parsed = ipaddress.ip_address(address)
    assert str(addresses.embedded_ipv4(parsed)) == embedded
    assert addresses.refusal(parsed, []) is not None
    response = acme.owner.post("/v1/mcp-servers", json={"name": "inner", "url": f"http://[{address}]/mcp"})
    assert (response.status_code, error_code(response)) == (422, "address_refused")


def test_ipv4_embedded_in_ipv6_is_allowed_when_the_operator_allows_its_network():
    allowed = [ipaddress.ip_network(LOOPBACK)]
    assert addresses.refusal(ipaddress.ip_address("2002:7f00:1::"), allowed) is None
    assert addresses.refusal(ipaddress.ip_address("2002:808:808::"), []) is None  # 8.8.8.8 is public
