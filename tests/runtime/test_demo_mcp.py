"""The demo's MCP server: the catalog's reference ``time`` server, attached to the demo agent once and
its tools deferred (``tool_search`` reveals them)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from flask import Flask

from hango.agent.toolset import TOOL_SEARCH
from hango.cli import demo
from hango.config import load_config
from tests.support.mcp import TIME_TOOLS


def test_the_demo_has_the_time_mcp_server_attached_and_inspect_shows_its_group(
    app: Flask, engine: sa.Engine, database_url: str, mcp_catalog: Path
) -> None:
    config = load_config(overrides={"database_url": database_url, "mcp_catalog": mcp_catalog})
    first = demo.seed(engine, config)
    again = demo.seed(engine, config)  # a second ``scripts/run``: the demo is found, nothing is added

    client = app.test_client()
    auth = {"Authorization": f"Bearer {again['owner_key']}"}
    servers = client.get("/v1/mcp-servers", headers=auth).get_json()["items"]
    assert [(s["name"], s["catalog"]) for s in servers] == [("time", "time")]
    attached = client.get(f"/v1/agents/{first['agent_id']}/mcp-servers", headers=auth).get_json()["items"]
    assert [(s["name"], s["chosen_tools"]) for s in attached] == [("time", None)]

    context = client.get(f"/v1/sessions/{first['session_id']}/context", headers=auth).get_json()
    groups = {group["server"]: group for group in context["tool_groups"]}
    assert list(groups) == [None, "time"]
    assert (groups["time"]["sent"], groups["time"]["deferred"]) == (0, len(TIME_TOOLS))
    time_parts = sorted(part["id"] for part in context["tools"] if part["id"].startswith("tool:time/"))
    assert time_parts == sorted(f"tool:time/{name}" for name in TIME_TOOLS)


def test_the_demo_without_a_time_server_in_the_catalog_has_no_mcp_server(
    app: Flask, engine: sa.Engine, database_url: str
) -> None:
    config = load_config(overrides={"database_url": database_url})
    seeded = demo.seed(engine, config)
    auth = {"Authorization": f"Bearer {seeded['owner_key']}"}
    assert app.test_client().get("/v1/mcp-servers", headers=auth).get_json()["items"] == []


def test_the_demo_agent_defers_the_time_server_keeps_its_built_ins_sent_and_a_rerun_keeps_an_owners_change(
    app: Flask, engine: sa.Engine, database_url: str, mcp_catalog: Path
) -> None:
    config = load_config(overrides={"database_url": database_url, "mcp_catalog": mcp_catalog})
    first = demo.seed(engine, config)
    client = app.test_client()
    auth = {"Authorization": f"Bearer {first['owner_key']}"}
    agent = client.get(f"/v1/agents/{first['agent_id']}", headers=auth).get_json()
    assert agent["defer"] == {"tools": ["tool:time/*"], "auto_percent": None, "native": False}

    context = client.get(f"/v1/sessions/{first['session_id']}/context", headers=auth).get_json()
    tools = {part["id"]: part for part in context["tools"]}
    assert all(tools[f"tool:time/{name}"]["deferred"] for name in TIME_TOOLS)
    built_ins = [part for part in context["tools"] if part["server"] is None]
    assert built_ins and not any(part["deferred"] for part in built_ins)
    assert tools[f"tool:{TOOL_SEARCH}"]["included"] is True  # what reveals the deferred server
    # the seeded calls were sent before the deferral: the next call's miss is explained, not unknown
    assert context["cache"]["miss_cause"] == "tool_list_changed", context["cache"]

    undeferred = client.patch(
        f"/v1/agents/{first['agent_id']}", headers=auth, json={"defer": {"tools": [], "auto_percent": None}}
    )
    assert undeferred.status_code == 200, undeferred.get_json()
    again = demo.seed(engine, config)  # a second ``scripts/run`` leaves the owner's deferral as it is
    auth = {"Authorization": f"Bearer {again['owner_key']}"}
    agent = client.get(f"/v1/agents/{first['agent_id']}", headers=auth).get_json()
    assert agent["defer"] == {"tools": [], "auto_percent": None, "native": False}
