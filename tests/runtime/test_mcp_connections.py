"""The pool of MCP connections a worker holds: reconnects, one call's end, and its bounds.

Real servers only: the SDK's own Streamable HTTP server (``tests/fakes/mcp_http_server.py``),
restarted or expiring its sessions, and the stdio fault server of ``tests/fakes/mcp_stdio_faults.py``
(``hang`` lets a test see which calls hang and hear a ``notifications/cancelled``), each
called through ``hango.mcp.calls`` as a run's tool call is.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from hango.mcp import calls, servers
from hango.mcp.calls import Answer, ServerCall
from hango.mcp.catalog import read_catalog
from hango.mcp.connection import Limits, Stop, Stopped, Target
from tests.runtime.conftest import OpenChat
from tests.support.mcp import attach, fault_servers, http_mcp_server, running, write_catalog
from tests.support.net import free_port, wait_until

TOKEN = "tok-8c2f4a6e1d3b5a7c9e0f"
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


def limits(**more: Any) -> Limits:
    return Limits(connect_timeout=30, call_timeout=60, max_answer_bytes=1_000_000, allowed=LOOPBACK, **more)


@pytest.fixture
def pool():
    """This process's pool, told nothing about a database, empty before the test and after it.

    Emptied first too: a run of an earlier test on this worker may have left a connection held.
    """
    calls.pool().watch(None)
    calls.pool().close_all()
    yield calls.pool()
    calls.pool().watch(None)
    calls.pool().close_all()


@pytest.fixture
def faults(tmp_path: Path):
    """The catalog entry of each fault server."""
    return read_catalog(write_catalog(tmp_path, **fault_servers()))


def call(key: calls.Key, target: Target, tool: str, bounds: Limits, **more: Any) -> Answer:
    return calls.call_tool(ServerCall(key, lambda: target, tool, {}), bounds, **{"timeout": 60, **more})


def pid_of(answer: Answer) -> int:
    assert not answer.is_error, answer
    return int(answer.text.removeprefix("pid "))


# -- session loss is a reconnect, not a failure -----------------------------------------------


def test_a_server_restart_is_a_reconnect_not_a_failure(pool):
    """The restarted server answers the old session id with 404: the next call runs on a new session."""
    port, key = free_port(), (uuid.uuid4(), uuid.uuid4())
    echo = ServerCall(key, lambda: target, "echo", {"text": "hi"})
    with http_mcp_server(TOKEN, port=port) as url:
        target = Target("web", url=url, headers={"Authorization": f"Bearer {TOKEN}"})
        assert calls.call_tool(echo, limits(), timeout=60) == Answer("echo: hi", False)
    with http_mcp_server(TOKEN, port=port):
        assert calls.call_tool(echo, limits(), timeout=60) == Answer("echo: hi", False)
        assert calls.call_tool(echo, limits(), timeout=60) == Answer("echo: hi", False)
    assert pool.held() == 1


def test_a_server_that_expires_sessions_after_1_s_answers_calls_2_s_apart(pool):
    key = (uuid.uuid4(), uuid.uuid4())
    with http_mcp_server(TOKEN, session_seconds=1) as url:
        target = Target("web", url=url, headers={"Authorization": f"Bearer {TOKEN}"})
        echo = ServerCall(key, lambda: target, "echo", {"text": "again"})
        answers = []
        for n in range(3):
            if n:
                time.sleep(2)  # past the session's life, whatever the machine's load
            answers.append(calls.call_tool(echo, limits(), timeout=60))
    assert answers == [Answer("echo: again", False)] * 3


# -- one call's end never touches another call ------------------------------------------------


@pytest.mark.parametrize("ending", ["cancel", "deadline"])
def test_one_calls_cancel_or_deadline_never_touches_another_call(pool, faults, ending: str):
    """Two calls share one process; one hangs and ends by a cancel or its deadline: the server hears
    ``notifications/cancelled`` for it, the other call (waiting for that) completes, and the same
    process answers the next call."""
    key, target, bounds = (
        (uuid.uuid4(), uuid.uuid4()),
        Target("faults", command=faults["faults-hang"]),
        limits(),
    )
    before = pid_of(call(key, target, "whoami", bounds))
    stop, ended, waited = Stop(), [], []
    hung_timeout = 600 if ending == "cancel" else 3

    def hang() -> None:
        try:
            ended.append(call(key, target, "fault", bounds, timeout=hung_timeout, stop=stop))
        except Stopped:
            ended.append("stopped")

    threads = [
        threading.Thread(target=hang),
        threading.Thread(target=lambda: waited.append(call(key, target, "wait", bounds))),
    ]
    for thread in threads:
        thread.start()
    wait_until(
        lambda: json.loads(call(key, target, "state", bounds).text) == {"hanging": 1, "waiting": 1}, 60
    )
    if ending == "cancel":
        stop.stop()
    for thread in threads:
        thread.join(120)

    if ending == "cancel":
        assert ended == ["stopped"]
    else:
        [answer] = ended
        assert answer.is_error and "no answer in time (3 s)" in answer.text, answer
    assert waited == [Answer("cancelled 1 hanging call(s)", False)]
    assert pid_of(call(key, target, "whoami", bounds)) == before
    assert pool.held() == 1


# -- the pool's bounds ------------------------------------------------------------------------


def test_the_pool_holds_at_most_its_cap_closing_the_least_recently_used(pool, faults):
    bounds, tenant = limits(pool_max=2, pool_idle_seconds=3600), uuid.uuid4()
    target = Target("faults", command=faults["faults-exit"])
    pids = [pid_of(call((tenant, uuid.uuid4()), target, "whoami", bounds)) for _ in range(4)]

    wait_until(lambda: [running(pid) for pid in pids] == [False, False, True, True], 60)
    assert pool.held() == 2


def test_after_servers_used_once_and_the_idle_timeout_no_process_lives(pool, faults):
    bounds, tenant = limits(pool_max=2, pool_idle_seconds=1), uuid.uuid4()
    target = Target("faults", command=faults["faults-exit"])
    pids = [pid_of(call((tenant, uuid.uuid4()), target, "whoami", bounds)) for _ in range(3)]

    wait_until(lambda: not any(running(pid) for pid in pids), 60)
    assert pool.held() == 0


@pytest.mark.parametrize("ending", ["delete", "detach"])
def test_deleting_or_detaching_a_server_ends_its_process(
    pool, open_chat: OpenChat, tmp_path: Path, ending: str
):
    """The worker's pool checks the database: the server's process ends, with no call to it."""
    catalog = write_catalog(tmp_path, **fault_servers())
    chat = open_chat("anthropic/claude-test", tools=(), mcp_catalog=catalog)
    server_id = attach(chat.who, chat.agent_id, "faults", catalog="faults-exit")["id"]
    pool.watch(servers.still_attached(chat.engine))
    key, target = (
        (chat.tenant_id, uuid.UUID(server_id)),
        Target("faults", command=read_catalog(catalog)["faults-exit"]),
    )
    pid = pid_of(call(key, target, "whoami", limits(pool_idle_seconds=3600)))
    assert pid == pid_of(call(key, target, "whoami", limits(pool_idle_seconds=3600)))  # attached: it stays

    path = (
        f"/v1/mcp-servers/{server_id}"
        if ending == "delete"
        else f"/v1/agents/{chat.agent_id}/mcp-servers/{server_id}"
    )
    assert chat.who.delete(path).status_code == 204

    wait_until(lambda: not running(pid), 60)
    assert pool.held() == 0
