"""MCP servers as tool sources (issue 39, part 1): the catalog, registering, attaching, refreshing."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from hango import secret_box
from hango.app import create_app
from hango.cli.common import config_or_exit
from hango.config import ConfigError, load_config
from hango.db.schema import audit_log, mcp_servers
from hango.mcp import addresses
from hango.mcp.catalog import catalog_servers
from tests.support.clients import error_code
from tests.support.mcp import TIME_TOOLS, http_mcp_server, write_catalog

TOKEN = "tok-7f3a9c1e5b2d4c6e8a0b"
KEY = "k" * 40
LOOPBACK = "127.0.0.0/8"


@pytest.fixture
def http_server():
    with http_mcp_server(TOKEN) as url:
        yield url


@pytest.fixture
def loopback_app(make_app):
    """An app whose operator lets MCP URLs reach the loopback network, with a server key."""
    return make_app(mcp_allow_networks=LOOPBACK, secret_key=KEY)


def _as(app, who):
    """``who`` calling ``app`` (the fixtures' principals belong to the session app's database)."""
    who.client = app.test_client()
    return who


# -- the operator's catalog ------------------------------------------------------------------


def test_operator_catalog_names_commands_args_and_env(tmp_path: Path):
    path = write_catalog(tmp_path, clock={"command": "/bin/clock", "args": ["-u"], "env": {"TZ": "UTC"}})
    servers = catalog_servers(load_config(env={"HANGO_MCP_CATALOG": str(path)}))
    assert sorted(servers) == ["clock", "git", "time"]
    assert (servers["clock"].command, servers["clock"].args, servers["clock"].env) == (
        "/bin/clock",
        ("-u",),
        {"TZ": "UTC"},
    )


@pytest.mark.parametrize(
    "document",
    [
        {"servers": []},
        {"servers": {"Bad Name": {"command": "x"}}},
        {"servers": {"git__hub": {"command": "x"}}},
        {"servers": {"x": {"args": []}}},
        {"servers": {"x": {"command": "x", "shell": True}}},
        {"servers": {"x": {"command": "x", "args": "-v"}}},
    ],
)
def test_operator_catalog_refuses_a_malformed_file_at_start(
    tmp_path: Path, document, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The app and every command read the catalog as they start (the configuration only names its file)."""
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    config = load_config(env={"HANGO_MCP_CATALOG": str(path)})
    with pytest.raises(ConfigError, match="HANGO_MCP_CATALOG"):
        create_app(config)
    monkeypatch.setenv("HANGO_MCP_CATALOG", str(path))
    with pytest.raises(SystemExit):
        config_or_exit()
    assert "HANGO_MCP_CATALOG" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["git__hub", "git_", "a" * 33, "Git", "_git"])
def test_a_server_name_that_would_blur_its_tools_names_is_refused(acme, name):
    """The model knows a tool as ``<server>__<tool>``: a name with "__" or ending in "_" is no server's."""
    response = acme.owner.post("/v1/mcp-servers", json={"name": name, "catalog": "time"})
    assert (response.status_code, error_code(response)) == (422, "invalid"), response.get_json()


@pytest.mark.parametrize("name", ["my_git", "git-2", "a" * 32])
def test_a_server_name_with_single_underscores_is_taken(acme, name):
    response = acme.owner.post("/v1/mcp-servers", json={"name": name, "catalog": "time"})
    assert response.status_code == 201, response.get_json()


def test_a_tenant_can_never_choose_a_command(acme):
    with_command = acme.owner.post(
        "/v1/mcp-servers", json={"name": "sh", "catalog": "time", "command": "/bin/sh"}
    )
    unknown = acme.owner.post("/v1/mcp-servers", json={"name": "sh", "catalog": "/bin/sh"})
    both = acme.owner.post(
        "/v1/mcp-servers", json={"name": "sh", "catalog": "time", "url": "https://93.184.216.34/"}
    )

    assert (with_command.status_code, error_code(with_command)) == (422, "invalid")
    assert (unknown.status_code, error_code(unknown)) == (422, "unknown_catalog")
    assert "git, time" in unknown.get_json()["error"]["message"]
    assert both.status_code == 422


# -- URLs: the address check -----------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/mcp",
        "http://[::1]/mcp",
        "http://10.1.2.3/mcp",
        "http://192.168.0.9/mcp",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00:ec2::254]/mcp",
        "http://[::ffff:127.0.0.1]/mcp",
        "http://localhost:8080/mcp",
        "http://0.0.0.0/mcp",
    ],
)
def test_url_refused_when_it_resolves_to_loopback_private_link_local_or_metadata(acme, url):
    response = acme.owner.post("/v1/mcp-servers", json={"name": "evil", "url": url})
    assert (response.status_code, error_code(response)) == (422, "address_refused"), response.get_json()
    assert "HANGO_MCP_ALLOW_NETWORKS" in response.get_json()["error"]["message"]


@pytest.mark.parametrize("url", ["ftp://93.184.216.34/", "https://user:pw@93.184.216.34/", "https:///x"])
def test_url_refused_when_it_is_not_a_plain_http_url(acme, url):
    response = acme.owner.post("/v1/mcp-servers", json={"name": "odd", "url": url})
    assert (response.status_code, error_code(response)) == (422, "address_refused")


def test_url_allowed_in_a_network_the_operator_allows(loopback_app, acme):
    owner = _as(loopback_app, acme.owner)
    response = owner.post("/v1/mcp-servers", json={"name": "local", "url": "http://127.0.0.1:9/mcp"})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["tools"] is None  # nothing is read until an attach or refresh


def test_connect_time_check_refuses_what_registration_allowed(loopback_app, make_app, acme, http_server):
    owner = _as(loopback_app, acme.owner)
    server = owner.post(
        "/v1/mcp-servers", json={"name": "f", "url": http_server, "headers": _bearer()}
    ).get_json()
    strict = _as(make_app(secret_key=KEY), acme.owner)  # the operator took the allowance back

    response = strict.post(f"/v1/mcp-servers/{server['id']}/refresh")

    assert (response.status_code, error_code(response)) == (502, "mcp_server_failed")
    assert "loopback" in response.get_json()["error"]["message"]


def test_connect_goes_to_the_checked_address_not_a_second_lookup(
    loopback_app, acme, http_server, monkeypatch
):
    """A name that answers loopback once (the check) reaches that address; no second lookup happens."""
    port = int(http_server.rsplit(":", 1)[1].split("/")[0])
    lookups: list[str] = []

    async def rebinding(host, port_, **kw):
        lookups.append(host)
        return [(2, 1, 6, "", ("127.0.0.1", port_))]

    monkeypatch.setattr(addresses.anyio, "getaddrinfo", rebinding)
    monkeypatch.setattr(
        addresses.socket, "getaddrinfo", lambda host, port_, **kw: [(2, 1, 6, "", ("127.0.0.1", port_))]
    )
    owner = _as(loopback_app, acme.owner)
    url = f"http://rebind.invalid:{port}/mcp"  # .invalid never resolves: only the checked address connects
    server = owner.post("/v1/mcp-servers", json={"name": "f", "url": url, "headers": _bearer()}).get_json()

    response = owner.post(f"/v1/mcp-servers/{server['id']}/refresh")

    assert response.status_code == 200, response.get_json()
    assert lookups == ["rebind.invalid"]


# -- header secrets --------------------------------------------------------------------------


def _bearer() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def test_header_secrets_are_write_only_and_encrypted_at_rest(
    loopback_app, acme, http_server, *, engine, caplog, spans
):
    caplog.set_level(logging.DEBUG)
    owner = _as(loopback_app, acme.owner)
    made = owner.post("/v1/mcp-servers", json={"name": "docs", "url": http_server, "headers": _bearer()})
    server_id = made.get_json()["id"]
    answers = [
        made,
        owner.get("/v1/mcp-servers"),
        owner.get(f"/v1/mcp-servers/{server_id}"),
        owner.post(f"/v1/mcp-servers/{server_id}/refresh"),
        owner.get("/v1/audit?limit=1000"),
    ]
    with engine.connect() as conn:
        sealed = conn.execute(
            sa.select(mcp_servers.c.headers_sealed).where(mcp_servers.c.id == uuid.UUID(server_id))
        ).scalar_one()
        audit = " ".join(repr(tuple(row)) for row in conn.execute(sa.select(audit_log)))

    assert [a.status_code for a in answers] == [201, 200, 200, 200, 200]
    assert made.get_json()["header_names"] == ["Authorization"] and "headers" not in made.get_json()
    assert secret_box.unseal(KEY, sealed) == _bearer()
    assert TOKEN.encode() not in bytes(sealed)
    span_text = repr([(s.name, dict(s.attributes or {})) for s in spans()])
    places = {
        "answers": " ".join(a.get_data(as_text=True) for a in answers),
        "audit": audit,
        "logs": caplog.text,
    }
    assert {name: TOKEN in text for name, text in {**places, "spans": span_text}.items()} == dict.fromkeys(
        [*places, "spans"], False
    )


def test_header_secrets_need_a_server_key(make_app, acme):
    owner = _as(make_app(mcp_allow_networks=LOOPBACK), acme.owner)
    response = owner.post(
        "/v1/mcp-servers", json={"name": "d", "url": "http://127.0.0.1:9/", "headers": _bearer()}
    )
    assert (response.status_code, error_code(response)) == (503, "secret_key_missing")


@pytest.mark.parametrize("headers", [{"Host": "x"}, {"X-A": "a\r\nInjected: 1"}, {"bad name": "x"}])
def test_header_secrets_refuse_headers_the_transport_owns_or_breaks(loopback_app, acme, headers):
    owner = _as(loopback_app, acme.owner)
    response = owner.post(
        "/v1/mcp-servers", json={"name": "d", "url": "http://127.0.0.1:9/", "headers": headers}
    )
    assert (response.status_code, error_code(response)) == (422, "invalid")


# -- attach and refresh: the stored tool list ------------------------------------------------


def test_attach_lists_the_tools_of_a_catalog_stdio_server_and_stores_them(acme):
    agent = acme.owner.post("/v1/agents", json={"name": "clock"}).get_json()
    server = acme.owner.post("/v1/mcp-servers", json={"name": "time", "catalog": "time"}).get_json()

    attached = acme.owner.put(f"/v1/agents/{agent['id']}/mcp-servers/{server['id']}", json={})
    listed = acme.member.get(f"/v1/agents/{agent['id']}/mcp-servers").get_json()["items"]

    assert attached.status_code == 200, attached.get_json()
    body = attached.get_json()
    assert sorted(tool["name"] for tool in body["tools"]) == sorted(TIME_TOOLS)
    assert len(body["tools_hash"]) == 64 and body["tools_read_at"] and body["chosen_tools"] is None
    assert [(item["name"], item["tools_hash"]) for item in listed] == [("time", body["tools_hash"])]


def test_attach_a_subset_of_tools_and_refuse_a_tool_the_server_does_not_list(acme, world):
    path = f"/v1/agents/{world.agent}/mcp-servers/{world.mcp_server}"
    subset = acme.owner.put(path, json={"tools": ["get_current_time"]})
    unknown = acme.owner.put(path, json={"tools": ["rm_rf"]})

    assert subset.get_json()["chosen_tools"] == ["get_current_time"]
    assert (unknown.status_code, error_code(unknown)) == (422, "unknown_tool")
    assert acme.member.get(f"/v1/agents/{world.agent}/mcp-servers").get_json()["items"][0][
        "chosen_tools"
    ] == ["get_current_time"]


def test_refresh_stores_the_list_with_a_new_hash_and_time(acme, world, engine):
    before = acme.owner.get(f"/v1/mcp-servers/{world.mcp_server}").get_json()  # the world's made-up list

    after = acme.owner.post(f"/v1/mcp-servers/{world.mcp_server}/refresh").get_json()

    assert before["tools_hash"] != after["tools_hash"] and after["tools_read_at"] > before["tools_read_at"]
    assert {tool["name"] for tool in after["tools"]} == set(TIME_TOOLS)
    assert "IANA" in json.dumps(after["tools"])  # the real server's descriptions, not the world's


def test_refresh_of_a_server_the_catalog_no_longer_lists_fails_clearly(make_app, acme, world, tmp_path):
    (tmp_path / "none.json").write_text('{"servers": {}}')
    owner = _as(make_app(mcp_catalog=tmp_path / "none.json"), acme.owner)

    response = owner.post(f"/v1/mcp-servers/{world.mcp_server}/refresh")

    assert (response.status_code, error_code(response)) == (502, "mcp_server_failed")
    assert "no longer lists 'time'" in response.get_json()["error"]["message"]


def test_attach_a_streamable_http_server_with_a_bearer_token(loopback_app, acme, http_server):
    owner = _as(loopback_app, acme.owner)
    agent = owner.post("/v1/agents", json={"name": "a"}).get_json()
    server = owner.post(
        "/v1/mcp-servers", json={"name": "faults", "url": http_server, "headers": _bearer()}
    ).get_json()
    wrong = owner.post(
        "/v1/mcp-servers",
        json={"name": "wrong", "url": http_server, "headers": {"Authorization": "Bearer x"}},
    )

    attached = owner.put(f"/v1/agents/{agent['id']}/mcp-servers/{server['id']}", json={"tools": ["echo"]})
    refused = owner.post(f"/v1/mcp-servers/{wrong.get_json()['id']}/refresh")

    assert attached.status_code == 200, attached.get_json()
    assert {"echo", "hang", "crash", "huge"} <= {tool["name"] for tool in attached.get_json()["tools"]}
    assert (refused.status_code, error_code(refused)) == (502, "mcp_server_failed")


def test_a_server_listing_500_tools_is_stored_and_one_past_the_answer_cap_is_refused(make_app, acme, engine):
    app = make_app(mcp_allow_networks=LOOPBACK, secret_key=KEY, mcp_max_answer_bytes=200_000)
    owner = _as(app, acme.owner)
    with http_mcp_server(TOKEN, extra_tools=500) as many, http_mcp_server(TOKEN, 500, 1_000) as huge:
        ok = owner.post(
            "/v1/mcp-servers", json={"name": "many", "url": many, "headers": _bearer()}
        ).get_json()
        big = owner.post(
            "/v1/mcp-servers", json={"name": "big", "url": huge, "headers": _bearer()}
        ).get_json()
        stored = owner.post(f"/v1/mcp-servers/{ok['id']}/refresh")
        capped = owner.post(f"/v1/mcp-servers/{big['id']}/refresh")

    assert stored.status_code == 200 and len(stored.get_json()["tools"]) == 505
    assert (capped.status_code, error_code(capped)) == (502, "mcp_server_failed")
    assert "passed 200,000 bytes" in capped.get_json()["error"]["message"]
    with engine.connect() as conn:
        unread = conn.execute(sa.select(mcp_servers.c.tools).where(mcp_servers.c.name == "big")).scalar_one()
    assert unread is None  # nothing half-stored


def test_another_tenants_server_cannot_be_attached(acme, globex, world):
    agent = globex.owner.post("/v1/agents", json={"name": "theirs"}).get_json()
    response = globex.owner.put(f"/v1/agents/{agent['id']}/mcp-servers/{world.mcp_server}", json={})
    assert (response.status_code, error_code(response)) == (404, "not_found")


def test_inspect_reads_the_stored_list_and_never_talks_to_a_server(acme, world, monkeypatch):
    """Reading servers (list, item, agent's servers) opens no connection: only attach and refresh do."""
    from hango.mcp import connection

    def refuse(*args, **kw):
        raise AssertionError("a read talked to an MCP server")

    monkeypatch.setattr(connection.Connection, "open", refuse)
    reads = [
        acme.member.get("/v1/mcp-servers"),
        acme.member.get(f"/v1/mcp-servers/{world.mcp_server}"),
        acme.member.get(f"/v1/agents/{world.agent}/mcp-servers"),
    ]
    assert [r.status_code for r in reads] == [200, 200, 200]


# answers initialize, then never answers tools/list
SILENT_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        info = {"name": "silent", "version": "1"}
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"""


def test_refresh_of_a_server_that_never_lists_its_tools_fails_within_the_deadline(make_app, acme, tmp_path):
    import sys

    catalog = write_catalog(tmp_path, silent={"command": sys.executable, "args": ["-c", SILENT_SERVER]})
    owner = _as(make_app(mcp_catalog=catalog, mcp_call_timeout=2.0), acme.owner)
    server = owner.post("/v1/mcp-servers", json={"name": "silent", "catalog": "silent"}).get_json()

    response = owner.post(f"/v1/mcp-servers/{server['id']}/refresh")

    assert (response.status_code, error_code(response)) == (502, "mcp_server_failed"), response.get_json()
    assert "no answer in time (2 s)" in response.get_json()["error"]["message"]
