"""Traces in a real backend: hango's OTLP export read back from Arize Phoenix's REST API.

One scenario runs against a real gunicorn and a queue worker exporting to Phoenix:
a run with no override, a session override excluding the first answer, a run
under it, a try, an inspect and a compact-now (a queued run too). The tests then read the project's spans back from
``GET /v1/projects/<project>/spans``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from hango.cli.admin import create_principal
from hango.messages import Message, ToolUseBlock
from hango.telemetry import names
from tests.conftest import TEST_RATE_LIMIT, empty_tables
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer
from tests.reliability.http import Http, make_agent, make_session
from tests.support.net import wait_until
from tests.support.phoenix import project_spans
from tests.support.server import gunicorn_server

pytestmark = pytest.mark.server

# Every chat span in the backend carries these (extend the list as chat spans gain attributes).
CHAT_SPAN_ATTRIBUTES = (
    names.GEN_AI_OPERATION,
    names.GEN_AI_PROVIDER_NAME,
    names.GEN_AI_REQUEST_MODEL,
    names.GEN_AI_USAGE_INPUT_TOKENS,
    names.GEN_AI_USAGE_OUTPUT_TOKENS,
    names.GEN_AI_USAGE_CACHE_READ_TOKENS,
    names.GEN_AI_USAGE_CACHE_CREATION_TOKENS,
    names.CACHE_READ_RATIO,
    names.PURPOSE,
    names.CONTEXT_OVERRIDES,
    names.CONTEXT_EXCLUDED_TOKENS,
    names.CONTEXT_TRY,
    names.CACHE_EXPECTED_READ_TOKENS,
)
# The inspect span carries these.
INSPECT_SPAN_ATTRIBUTES = (
    names.CONTEXT_PARTS_SYSTEM,
    names.CONTEXT_PARTS_TOOLS,
    names.CONTEXT_PARTS_MESSAGES,
    names.CONTEXT_TOKENS_BEFORE,
    names.CONTEXT_TOKENS_AFTER,
    names.CONTEXT_WOULD_COMPACT,
)
SPANS_TIMEOUT = 60.0  # the test server flushes every 200 ms; Phoenix ingests in the background


def server_env(phoenix: str, provider: FakeProviderServer, project: str) -> dict[str, str]:
    """A server that calls the fake provider and exports its traces to Phoenix, flushing often."""
    return {
        "HANGO_ANTHROPIC_BASE_URL": provider.anthropic_base_url,
        "ANTHROPIC_API_KEY": TEST_API_KEY,
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix,
        "OTEL_METRICS_EXPORTER": "none",  # Phoenix takes traces only
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "HANGO_TRACE_PROJECT": project,
    }


def scenario(who: Http, provider: FakeProviderServer) -> None:
    """Two runs (the first with a tool call, the second under an override), a try, an inspect, a compaction."""
    session = make_session(who, make_agent(who, "anthropic/claude-fake-1", tools=["ls"]))
    provider.reply(Message("assistant", (ToolUseBlock("toolu_ls", "ls", {"path": "/"}),)), "Nothing there.")
    assert who.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "hello"}).status_code == 201
    excluding = {"overrides": [{"part": "message:4", "action": "exclude"}]}
    assert who.put(f"/v1/sessions/{session}/context-overrides", json=excluding).status_code == 200
    assert who.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "again"}).status_code == 201
    assert who.post(f"/v1/sessions/{session}/context/try", json={}).status_code == 200
    assert who.get(f"/v1/sessions/{session}/context").status_code == 200
    assert who.post_and_wait(f"/v1/sessions/{session}/compact", json={}).status_code == 200


def exported(phoenix: str, project: str) -> list[dict[str, Any]]:
    """The project's spans once Phoenix holds the scenario's five chat spans, its inspect, and its compaction
    under its job."""
    found: list[dict[str, Any]] = []

    def complete() -> bool:
        found[:] = project_spans(phoenix, project)
        chats = [s for s in found if s["name"] == names.SPAN_CHAT]
        named = {s["name"] for s in found}
        if not (len(chats) >= 5 and {names.SPAN_CONTEXT_INSPECT, names.SPAN_SESSION_COMPACT} <= named):
            return False
        # a parent ends (and is exported) after its children: wait for the compaction's job too
        [compaction] = [s for s in found if s["name"] == names.SPAN_SESSION_COMPACT]
        return any(a["name"] == JOB for a in ancestors(compaction, found))

    wait_until(complete, timeout=SPANS_TIMEOUT, interval=0.5)
    return found


@pytest.fixture(scope="module")
def traced(phoenix: str, engine: sa.Engine, database_url: str) -> list[dict[str, Any]]:
    """The spans Phoenix holds after the scenario ran on a gunicorn exporting to it."""
    project = f"hango-{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        made = create_principal(conn, "Traced", "owner@traced.test", "owner", TEST_RATE_LIMIT)
    try:
        with FakeProviderServer() as provider:
            env = server_env(phoenix, provider, project)
            with gunicorn_server(database_url, workers=1, env=env) as url:
                who = Http(url, made["api_key"], made["tenant_id"], made["user_id"], made["api_key_id"])
                try:
                    scenario(who, provider)
                    spans = exported(phoenix, project)
                finally:
                    who.close()
    finally:
        empty_tables(engine)
    return spans


def chat_spans(spans: list[dict[str, Any]], purpose: str) -> list[dict[str, Any]]:
    chats = [s for s in spans if s["name"] == names.SPAN_CHAT and s["attributes"][names.PURPOSE] == purpose]
    return sorted(chats, key=lambda s: s["start_time"])


def test_phoenix_files_hangos_spans_under_the_configured_project(traced: list[dict[str, Any]]) -> None:
    assert {s["name"] for s in traced} >= {names.SPAN_RUN, names.SPAN_CHAT, names.SPAN_CONTEXT_TRY}


def test_phoenix_shows_the_runs_chat_spans_with_the_active_overrides(traced: list[dict[str, Any]]) -> None:
    first, answer, second = chat_spans(traced, "run")

    for span in (first, answer, second):
        assert [a for a in CHAT_SPAN_ATTRIBUTES if a not in span["attributes"]] == []
        assert span["attributes"][names.GEN_AI_OPERATION] == names.OPERATION_CHAT
        assert span["attributes"][names.GEN_AI_PROVIDER_NAME] == "anthropic"
        assert span["attributes"][names.CONTEXT_TRY] is False
        assert span["span_kind"] == "LLM", "Phoenix recognises a GenAI chat span"
    assert first["attributes"][names.CACHE_MISS_REASON] == "first_call"
    assert first["attributes"][names.CONTEXT_OVERRIDES] == 0
    assert first["attributes"][names.CONTEXT_EXCLUDED_TOKENS] == 0
    assert second["attributes"][names.CONTEXT_OVERRIDES] == 1
    assert second["attributes"][names.CONTEXT_EXCLUDED_TOKENS] > 0


def test_phoenix_shows_the_try_chat_span_under_context_try(traced: list[dict[str, Any]]) -> None:
    [attempt] = chat_spans(traced, "context_try")
    by_id = {s["context"]["span_id"]: s for s in traced}

    assert [a for a in CHAT_SPAN_ATTRIBUTES if a not in attempt["attributes"]] == []
    assert attempt["attributes"][names.CONTEXT_TRY] is True
    assert by_id[attempt["parent_id"]]["name"] == names.SPAN_CONTEXT_TRY


def test_phoenix_shows_the_inspect_spans_context_attributes(traced: list[dict[str, Any]]) -> None:
    [inspect] = [s for s in traced if s["name"] == names.SPAN_CONTEXT_INSPECT]

    assert [a for a in INSPECT_SPAN_ATTRIBUTES if a not in inspect["attributes"]] == []
    attributes = inspect["attributes"]
    assert attributes[names.CONTEXT_PARTS_MESSAGES] == 6 and attributes[names.CONTEXT_WOULD_COMPACT] is False
    # tokens.after is the provider's count here (the fake's), tokens.before the estimate: both present.
    assert attributes[names.CONTEXT_TOKENS_BEFORE] > 0 and attributes[names.CONTEXT_TOKENS_AFTER] > 0


def test_phoenix_shows_the_tool_span_as_a_genai_tool_execution(traced: list[dict[str, Any]]) -> None:
    [tool] = [s for s in traced if s["name"] == names.SPAN_TOOL.format(name="ls")]

    assert tool["attributes"][names.GEN_AI_OPERATION] == names.OPERATION_EXECUTE_TOOL
    assert tool["attributes"][names.GEN_AI_TOOL_NAME] == "ls"
    assert tool["attributes"][names.GEN_AI_TOOL_CALL_ID] == "toolu_ls"
    assert tool["span_kind"] == "TOOL", "Phoenix recognises a GenAI tool execution"


JOB = names.SPAN_JOB.format(task="hango.run")


def ancestors(span: dict[str, Any], spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``span``'s parent, its parent's parent, ... as far as Phoenix holds them."""
    by_id = {s["context"]["span_id"]: s for s in spans}
    chain = []
    while span.get("parent_id") in by_id:
        span = by_id[span["parent_id"]]
        chain.append(span)
    return chain


def test_phoenix_holds_the_request_its_job_and_the_runs_model_and_tool_spans_in_one_trace(
    traced: list[dict[str, Any]],
) -> None:
    runs = sorted((s for s in traced if s["name"] == names.SPAN_RUN), key=lambda s: s["start_time"])
    first = runs[0]
    trace = first["context"]["trace_id"]
    in_trace = [s for s in traced if s["context"]["trace_id"] == trace]
    [job] = [s for s in in_trace if s["name"] == JOB]
    [request] = [s for s in in_trace if s["name"].startswith("POST") and s["name"].endswith("/messages")]

    assert ancestors(first, traced)[0] is job, "the run's span is the job's child"
    assert request in ancestors(job, traced), "the job continues the request's trace"
    assert job["attributes"][names.RUN_ID] == first["attributes"][names.RUN_ID]
    assert job["attributes"][names.MESSAGING_OPERATION_TYPE] == "process"
    chats = [s for s in in_trace if s["name"] == names.SPAN_CHAT]
    [tool] = [s for s in in_trace if s["name"] == names.SPAN_TOOL.format(name="ls")]
    assert len(chats) == 2  # the tool call, then the answer
    assert all(first in ancestors(s, traced) for s in (*chats, tool))
    assert runs[1]["context"]["trace_id"] != trace  # the second message is a request (and trace) of its own


def test_phoenix_holds_a_compactions_request_job_and_summarizer_call_in_one_trace(
    traced: list[dict[str, Any]],
) -> None:
    [compaction] = [s for s in traced if s["name"] == names.SPAN_SESSION_COMPACT]
    chain = ancestors(compaction, traced)
    [summarizer] = chat_spans(traced, "summarize")

    assert chain[0]["name"] == JOB
    assert chain[-1]["name"].startswith("POST") and chain[-1]["name"].endswith("/compact")
    assert compaction in ancestors(summarizer, traced)
    assert summarizer["context"]["trace_id"] == chain[-1]["context"]["trace_id"]
