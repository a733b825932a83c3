"""A run's calls to MCP tools, through the queue worker: real servers over stdio and Streamable HTTP.

The reference ``mcp-server-time`` and ``mcp-server-git`` from PyPI, the SDK's own
HTTP server (``tests/fakes/mcp_http_server.py``) behind a bearer token, and the
fault servers of ``tests/fakes/mcp_stdio_faults.py``, each started from an operator
catalog. The model is the fake Anthropic (or OpenAI) API: it calls the tools, and
the tests read the results in the next request it receives.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hango.agent.deps import Deps
from hango.agent.runner import QueuedRun, execute_run
from hango.agent.state import Caller
from hango.mcp import calls
from hango.mcp.calls import MAX_RESULT_CHARS, ServerCall
from hango.mcp.catalog import read_catalog
from hango.mcp.connection import Limits, Target
from hango.store import TenantStore
from hango.telemetry import names
from tests.fakes.provider_server import CHAT_COMPLETIONS, MESSAGES, TEST_API_KEY, FakeProviderServer
from tests.runtime.chat import Chat, tool_call, tool_calls
from tests.runtime.conftest import OpenChat
from tests.support.mcp import attach, fault_servers, http_mcp_server, running, write_catalog
from tests.support.net import wait_until

MODEL = "anthropic/claude-test"
TOKEN = "tok-5d1e9a7c3b8f4e2a6c0d"
KEY = "k" * 40
Call = tuple[str, dict[str, Any]]
CANARY = "a message no log may quote 9c41"


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """The reference servers and every fault server."""
    return write_catalog(tmp_path, **fault_servers())


@pytest.fixture
def faults(open_chat: OpenChat, catalog: Path):
    """An agent (no built-in tools) with the fault server of ``fault`` attached as ``faults``."""

    def open_(fault: str, **config: Any) -> Chat:
        chat = open_chat(MODEL, tools=(), mcp_catalog=catalog, **config)
        attach(chat.who, chat.agent_id, "faults", catalog=f"faults-{fault}")
        return chat

    return open_


def tool_results(chat: Chat, fake: FakeProviderServer, *uses: Call) -> list[dict[str, Any]]:
    """The model calls ``uses`` in one answer, then ends: the tool results its next request holds, in order."""
    fake.reply(tool_calls(*((f"toolu_{n}", name, args) for n, (name, args) in enumerate(uses))), "Done.")
    answer = chat.say("Go.")
    assert answer.status_code == 201, answer.get_json()
    assert answer.get_json()["run"]["status"] == "completed"  # the run goes on past every fault
    results = fake.bodies(MESSAGES)[-1]["messages"][-1]
    assert results["role"] == "user", results
    return [block for block in results["content"] if block["type"] == "tool_result"]


def run_events(chat: Chat, engine: sa.Engine) -> list[Any]:
    run_id = uuid.UUID(chat.runs()[-1]["id"])
    with engine.connect() as conn:
        return TenantStore(conn, chat.tenant_id).run_events.after(run_id, 0)


# -- the reference servers and the SDK's HTTP server ------------------------------------------


def test_the_reference_time_server_answers_an_openai_model_in_its_tool_message(
    open_chat: OpenChat, fake: FakeProviderServer
):
    chat = open_chat("openai/gpt-test", tools=())
    attach(chat.who, chat.agent_id, "time", catalog="time")
    fake.reply(tool_call("call_1", "time__get_current_time", {"timezone": "Europe/Paris"}), "Done.")

    answer = chat.say("What time is it in Paris?")

    assert answer.get_json()["run"]["status"] == "completed", answer.get_json()
    [result] = [m for m in fake.bodies(CHAT_COMPLETIONS)[-1]["messages"] if m["role"] == "tool"]
    assert result["tool_call_id"] == "call_1"
    assert '"timezone": "Europe/Paris"' in result["content"]


def test_the_reference_git_server_answers_git_status_on_a_repository(
    open_chat: OpenChat, fake: FakeProviderServer, tmp_path: Path
):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "notes.md").write_text("one\n")
    chat = open_chat(MODEL, tools=())
    attach(chat.who, chat.agent_id, "git", ["git_status"], catalog="git")

    [result] = tool_results(chat, fake, ("git__git_status", {"repo_path": str(repo)}))

    assert not result["is_error"], result
    assert "notes.md" in result["content"]  # the untracked file git status lists


def test_a_streamable_http_server_is_called_with_its_bearer_token(
    open_chat: OpenChat, fake: FakeProviderServer
):
    with http_mcp_server(TOKEN) as url:
        chat = open_chat(MODEL, tools=(), mcp_allow_networks="127.0.0.0/8", secret_key=KEY)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        attach(chat.who, chat.agent_id, "web", ["echo", "fail", "huge"], url=url, headers=headers)

        echo, fail, huge = tool_results(
            chat, fake, ("web__echo", {"text": "hi"}), ("web__fail", {}), ("web__huge", {})
        )

    assert (echo["content"], echo["is_error"]) == ("echo: hi", False)
    assert fail["is_error"] and "the tool failed on purpose" in fail["content"]
    assert huge["is_error"] and "the answer passed 1,000,000 bytes" in huge["content"]


def test_events_spans_audit_and_usage_name_the_server_and_its_tool_and_never_the_content(
    open_chat: OpenChat, fake: FakeProviderServer, engine: sa.Engine, spans
):
    chat = open_chat(MODEL, tools=("ls",))
    server = attach(chat.who, chat.agent_id, "time", catalog="time")["id"]

    time_of, _ = tool_results(
        chat, fake, ("time__get_current_time", {"timezone": "Asia/Kathmandu"}), ("ls", {"path": "/"})
    )

    assert "Asia/Kathmandu" in time_of["content"]  # the content the traces and the audit must not hold
    finished = [e.detail for e in run_events(chat, engine) if e.kind == "tool_finished"]
    assert [(d["name"], d.get("server"), d.get("server_id"), d.get("server_tool")) for d in finished] == [
        ("time__get_current_time", "time", server, "get_current_time"),
        ("ls", None, None, None),
    ]
    finished_spans = spans()
    tool_spans = {
        s.attributes[names.GEN_AI_TOOL_NAME]: s.attributes
        for s in finished_spans
        if s.name.startswith("execute_tool")
    }
    served = tool_spans["time__get_current_time"]
    assert (served[names.MCP_SERVER], served[names.MCP_SERVER_ID], served[names.MCP_TOOL]) == (
        "time",
        server,
        "get_current_time",
    )
    assert names.MCP_SERVER not in tool_spans["ls"]
    assert not any("Kathmandu" in str(v) for span in finished_spans for v in span.attributes.values())

    [audited] = chat.who.get("/v1/audit", query_string={"action": "mcp_server.call"}).get_json()["items"]
    assert (audited["object_type"], audited["object_id"]) == ("mcp_server", server)
    assert audited["detail"]["server"] == "time" and audited["detail"]["tool"] == "get_current_time"
    assert (audited["detail"]["outcome"], audited["detail"]["run_id"]) == ("ok", chat.runs()[-1]["id"])
    assert "Kathmandu" not in json.dumps(audited)
    usage = chat.who.get("/v1/usage").get_json()
    assert usage["mcp_calls"] == [{"server": "time", "tool": "get_current_time", "calls": 1, "errors": 0}]


def test_usage_counts_a_servers_error_results_per_tool(faults, fake: FakeProviderServer):
    chat = faults("error")
    tool_results(chat, fake, ("faults__fault", {}), ("faults__whoami", {}), ("faults__fault", {}))

    assert chat.who.get("/v1/usage").get_json()["mcp_calls"] == [
        {"server": "faults", "tool": "fault", "calls": 2, "errors": 2},
        {"server": "faults", "tool": "whoami", "calls": 1, "errors": 0},
    ]


# -- one process per worker, tenant and server ------------------------------------------------


def test_a_stdio_server_is_reused_across_calls_and_started_again_once_it_exits_mid_call(
    faults, fake: FakeProviderServer
):
    chat = faults("exit")

    first, again, died, restarted = tool_results(
        chat,
        fake,
        ("faults__whoami", {}),
        ("faults__whoami", {}),
        ("faults__fault", {}),
        ("faults__whoami", {}),
    )

    assert first["content"] == again["content"]  # one process answered both
    assert died["is_error"] and "its process ended" in died["content"], died
    assert not restarted["is_error"] and restarted["content"] != first["content"]


def test_two_tenants_never_share_a_server_process(catalog: Path):
    target = Target("faults", command=read_catalog(catalog)["faults-exit"])
    limits = Limits(connect_timeout=30, call_timeout=30, max_answer_bytes=1_000_000)
    server = uuid.uuid4()

    def whoami(tenant: uuid.UUID) -> str:
        call = ServerCall((tenant, server), lambda: target, "whoami", {})
        return calls.call_tool(call, limits, timeout=30).text

    acme, globex = uuid.uuid4(), uuid.uuid4()
    try:
        assert whoami(acme) == whoami(acme)
        assert whoami(acme) != whoami(globex)
    finally:
        calls.pool().close_all()


def test_closing_the_pool_ends_the_server_processes(faults, fake: FakeProviderServer):
    """A worker's shutdown (``run_worker`` returns) ends the stdio servers its runs started."""
    chat = faults("exit")
    [whoami] = tool_results(chat, fake, ("faults__whoami", {}))  # the in-process worker has returned
    pid = int(whoami["content"].removeprefix("pid "))

    wait_until(lambda: not running(pid), timeout=30)


# -- faults: the run goes on with a result the model can read ---------------------------------


def test_a_server_that_hangs_gives_an_error_result_at_the_call_deadline(faults, fake: FakeProviderServer):
    chat = faults("hang", mcp_call_timeout=2)

    hung, after = tool_results(chat, fake, ("faults__fault", {}), ("faults__whoami", {}))

    assert hung["is_error"] and "no answer in time (2 s)" in hung["content"], hung
    assert not after["is_error"], after  # the deadline ended that call only: the process answers the next


def test_a_hanging_call_ends_with_the_runs_deadline_and_the_run_with_a_clear_error(
    faults, fake: FakeProviderServer
):
    """The call deadline is far away: what the run has left bounds the call, so the worker is free."""
    chat = faults("hang", mcp_call_timeout=600, run_timeout=3)
    fake.reply(tool_call("toolu_1", "faults__fault", {}))

    answer = chat.say("Go.")

    assert (answer.status_code, answer.get_json()["error"]["code"]) == (504, "run_timeout")
    assert chat.runs()[-1]["status"] == "timeout"
    stored = chat.messages()  # whole turns only: the call and its error result, stored together
    assert [m["role"] for m in stored] == ["user", "assistant", "user"]
    [result] = stored[2]["content"]
    assert result["is_error"] and "no answer in time" in result["content"], result


def test_a_50_mb_answer_passes_the_cap_and_is_an_error_result(faults, fake: FakeProviderServer):
    chat = faults("huge")
    [huge] = tool_results(chat, fake, ("faults__fault", {}))
    assert huge["is_error"] and "the answer passed 1,000,000 bytes" in huge["content"], huge


def test_a_long_answer_under_the_cap_is_cut_to_what_a_tool_result_holds(faults, fake: FakeProviderServer):
    chat = faults("long")
    [long] = tool_results(chat, fake, ("faults__fault", {}))
    assert not long["is_error"], long
    assert long["content"] == "y" * MAX_RESULT_CHARS + "\n[cut: the answer had 300,000 characters]"


def test_an_answer_that_is_not_json_rpc_ends_the_call_at_once(faults, fake: FakeProviderServer):
    """With a deadline far away, the error names the garbage: the call did not wait for the deadline."""
    chat = faults("garbage", mcp_call_timeout=600)
    [garbage] = tool_results(chat, fake, ("faults__fault", {}))
    assert garbage["is_error"] and "not JSON-RPC" in garbage["content"], garbage


def test_a_failed_mcp_call_says_why(faults, fake: FakeProviderServer, caplog: pytest.LogCaptureFixture):
    """One WARNING with the failure, the server, where it runs, the run and the attempt; no content."""
    chat = faults("garbage", mcp_call_timeout=600)
    caplog.set_level(logging.WARNING, logger="hango.calls")
    fake.reply(tool_call("toolu_1", "faults__fault", {"note": CANARY}), "Done.")

    assert chat.say(CANARY).status_code == 201

    [record] = [r for r in caplog.records if r.name == "hango.calls"]
    run_id = chat.runs()[-1]["id"]
    assert record.levelno == logging.WARNING
    assert (record.call_kind, record.call_target, record.call_host) == ("mcp", "faults", "stdio")
    assert (record.run_id, record.attempt) == (run_id, 1)
    said = record.getMessage()
    assert said.startswith(f"mcp call failed: faults host=stdio run={run_id} attempt=1: ServerFailure: ")
    assert "not JSON-RPC" in said
    assert CANARY not in caplog.text


def test_an_is_error_result_reaches_the_model_as_an_error_result(faults, fake: FakeProviderServer):
    chat = faults("error")
    [failed] = tool_results(chat, fake, ("faults__fault", {}))
    assert (failed["is_error"], failed["content"]) == (True, "the tool failed on purpose")


def test_a_server_listing_500_tools_is_attached_and_called(faults, fake: FakeProviderServer):
    chat = faults("many")
    inspected = chat.who.get(f"/v1/sessions/{chat.session_id}/context").get_json()["tools"]
    assert len(inspected) == 500 and "tool:faults/tool_497" in {part["id"] for part in inspected}

    [result] = tool_results(chat, fake, ("faults__tool_497", {}))
    assert (result["content"], result["is_error"]) == ("no fault", False)


def test_a_server_the_catalog_no_longer_lists_gives_an_error_result(
    faults, fake: FakeProviderServer, make_app, tmp_path: Path
):
    attached = faults("error")
    (tmp_path / "bare").mkdir()
    bare = make_app(  # the operator took faults-error away
        mcp_catalog=write_catalog(tmp_path / "bare"),
        anthropic_base_url=fake.anthropic_base_url,
        anthropic_api_key=TEST_API_KEY,
    )
    chat = dataclasses.replace(attached, who=dataclasses.replace(attached.who, client=bare.test_client()))

    [gone] = tool_results(chat, fake, ("faults__fault", {}))

    assert gone["is_error"] and "no longer lists 'faults-error'" in gone["content"], gone


# -- cancel -----------------------------------------------------------------------------------


def test_a_cancel_stops_a_call_waiting_on_a_hanging_server(
    faults, fake: FakeProviderServer, engine: sa.Engine
):
    """The call deadline is far away: the run ends ``cancelled`` because the cancel stopped the wait."""
    chat = faults("hang", mcp_call_timeout=600, run_timeout=900)
    fake.reply(tool_call("toolu_1", "faults__fault", {}))
    queued = chat.who.post(f"/v1/sessions/{chat.session_id}/messages", json={"content": "Go."})
    assert queued.status_code == 202, queued.get_json()
    run_id = uuid.UUID(queued.get_json()["id"])

    def waiting() -> bool:
        with engine.connect() as conn:
            return any(
                e.kind == "tool_started"
                for e in TenantStore(conn, chat.tenant_id).run_events.after(run_id, 0)
            )

    deps = Deps(engine, chat.who.client.application.config["HANGO"])
    job = QueuedRun(chat.tenant_id, run_id, Caller(uuid.UUID(chat.who.user_id), None))
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(execute_run(deps, job, waiting)), daemon=True)
    worker.start()
    worker.join(120)

    assert not worker.is_alive()  # the worker is free long before the call's deadline
    assert done[0].run.status == "cancelled"
    assert chat.messages() == []  # nothing of the run is stored: its user message goes with it
    assert len(fake.bodies(MESSAGES)) == 1  # the model never heard of the stopped call
    [audited] = chat.who.get("/v1/audit", query_string={"action": "mcp_server.call"}).get_json()["items"]
    assert (audited["detail"]["tool"], audited["detail"]["outcome"]) == ("fault", "cancelled")
