"""Spans: the names, the tree and the GenAI attributes of a run, and content only on the tenant's opt-in.

The canary test puts one unique string in a system prompt, a memory file, a
user message and (through ``read_file``) a tool result, then looks for it in
every span attribute and event and every log record at DEBUG.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from hango.config import REPO_ROOT
from hango.messages import Message, TextBlock, ToolUseBlock
from hango.telemetry import names
from hango.worker import run_task
from tests.budget.conftest import (
    DELEGATING,
    FAKE_MODEL,
    chat_spans,
    delegating_run,
    make_agent,
    make_session,
    say,
)
from tests.fakes.anthropic_tool_search import search_answer
from tests.fakes.provider_server import FakeProviderServer
from tests.support.clients import As

MESSAGES_ROUTE = "/v1/sessions/<uuid:session_id>/messages"
CONTENT_ATTRIBUTES = (
    names.GEN_AI_SYSTEM_INSTRUCTIONS,
    names.GEN_AI_INPUT_MESSAGES,
    names.GEN_AI_OUTPUT_MESSAGES,
)


def ratio(index: int) -> float:
    usage = DELEGATING[index].usage
    return usage.cache_read_tokens / (usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens)


def test_a_run_is_a_tree_of_server_run_chat_and_tool_spans(
    fake: FakeProviderServer, fake_owner: As, spans
) -> None:
    result = delegating_run(fake, fake_owner)

    finished = spans()
    by_id = {s.context.span_id: s for s in finished}
    [server] = [s for s in finished if s.kind == SpanKind.SERVER and MESSAGES_ROUTE in s.name]
    [job] = [s for s in finished if s.name == names.SPAN_JOB.format(task=run_task.name)]
    [run] = [s for s in finished if s.name == names.SPAN_RUN]
    [task] = [s for s in finished if s.name == names.SPAN_TOOL.format(name="task")]
    parent, child, answer = chat_spans(finished)

    assert server.name == f"POST {MESSAGES_ROUTE}" and server.attributes["http.route"] == MESSAGES_ROUTE
    assert job.kind == SpanKind.CONSUMER and job.parent.span_id == server.context.span_id
    assert run.parent.span_id == job.context.span_id
    assert parent.parent.span_id == run.context.span_id == answer.parent.span_id
    assert task.parent.span_id == run.context.span_id
    assert child.parent.span_id == task.context.span_id
    assert {s.context.trace_id for s in (server, job, run, task, parent, child, answer)} == {
        server.context.trace_id
    }
    assert by_id[by_id[run.parent.span_id].parent.span_id] is server

    assert run.attributes[names.RUN_ID] == result["run"]["id"]
    assert run.attributes[names.RUN_STATUS] == "completed"
    assert run.attributes[names.SESSION_ID] == result["run"]["session_id"]
    assert task.attributes[names.GEN_AI_OPERATION] == names.OPERATION_EXECUTE_TOOL
    assert task.attributes[names.GEN_AI_TOOL_NAME] == "task" and task.attributes[names.TOOL_ERROR] is False
    assert task.attributes[names.GEN_AI_TOOL_CALL_ID] == "toolu_task"


def test_chat_spans_carry_the_genai_attributes_and_the_cache_read_ratio(
    fake: FakeProviderServer, fake_owner: As, spans, metric_reader
) -> None:
    result = delegating_run(fake, fake_owner)

    calls = chat_spans(spans())

    assert [c.attributes[names.PURPOSE] for c in calls] == ["run", "subagent", "run"]
    for index, call in enumerate(calls):
        usage = DELEGATING[index].usage
        attributes = call.attributes
        assert attributes[names.GEN_AI_PROVIDER_NAME] == "anthropic"
        assert attributes[names.GEN_AI_OPERATION] == names.OPERATION_CHAT
        assert attributes[names.GEN_AI_REQUEST_MODEL] == "claude-fake-1"
        # The GenAI conventions count cached tokens in gen_ai.usage.input_tokens.
        all_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        assert attributes[names.GEN_AI_USAGE_INPUT_TOKENS] == all_input
        assert attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == usage.output_tokens
        assert attributes[names.GEN_AI_USAGE_CACHE_READ_TOKENS] == usage.cache_read_tokens
        assert attributes[names.GEN_AI_USAGE_CACHE_CREATION_TOKENS] == usage.cache_write_tokens
        assert attributes[names.CACHE_READ_RATIO] == pytest.approx(ratio(index))
        assert attributes[names.RUN_ID] == result["run"]["id"]
        assert not set(CONTENT_ATTRIBUTES) & set(attributes)
        assert not {"gen_ai.prompt", "gen_ai.completion", "gen_ai.system"} & set(attributes), "deprecated"
    assert calls[0].attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert calls[2].attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert purposes_measured(metric_reader) >= {"run", "subagent"}


def purposes_measured(reader) -> set[str]:
    """The purposes the ``hango.cache.read_ratio`` histogram has points for."""
    data = reader.get_metrics_data()
    return {
        point.attributes[names.PURPOSE]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == names.METRIC_CACHE_READ_RATIO
        for point in metric.data.data_points
    }


# -- the canary --------------------------------------------------------------------------------


CANARY = f"canary-{uuid.uuid4().hex}"
READ_MEMORY = Message(
    "assistant", (ToolUseBlock("toolu_read", "read_file", {"path": "/memories/canary.md"}),)
)


def canary_run(fake: FakeProviderServer, who: As) -> None:
    """A run whose system prompt, memory file, user message and tool result all hold the canary."""
    agent = make_agent(who, model=FAKE_MODEL, system_prompt=f"You guard {CANARY}.", tools=["read_file"])
    put = who.put(f"/v1/agents/{agent}/memory/canary.md", json={"content": f"secret: {CANARY}"})
    assert put.status_code == 200
    fake.reply(READ_MEMORY, Message("assistant", (TextBlock("I read it."),)))
    say(who, make_session(who, agent), f"please remember {CANARY}")
    [_, second] = fake.bodies("/v1/messages")
    assert CANARY in second["messages"][-1]["content"][0]["content"], "the tool result holds the canary"


def span_texts(span: ReadableSpan) -> list[str]:
    """Every string a span carries: name, attribute values, event names and event attribute values."""
    texts = [span.name, *(str(v) for v in span.attributes.values())]
    for event in span.events:
        texts += [event.name, *(str(v) for v in event.attributes.values())]
    return texts


@pytest.fixture
def all_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every log record of every logger at DEBUG, as the root logger's handlers would see them."""
    caplog.set_level(logging.DEBUG)
    return caplog


def test_without_opt_in_content_is_in_no_span_and_no_log(
    fake: FakeProviderServer, fake_owner: As, spans, all_logs: pytest.LogCaptureFixture
) -> None:
    canary_run(fake, fake_owner)

    finished = spans()
    assert len(chat_spans(finished)) == 2
    leaks = [s.name for s in finished if any(CANARY in text for text in span_texts(s))]
    assert leaks == []
    assert all_logs.records, "DEBUG logging is captured"
    logged = [f"{r.name}: {r.getMessage()}" for r in all_logs.records]
    assert [line[:200] for line in logged if CANARY in line] == []


def test_with_opt_in_the_chat_spans_carry_the_content(
    fake: FakeProviderServer, fake_owner: As, spans
) -> None:
    assert fake_owner.patch("/v1/tenant", json={"trace_llm_content": True}).status_code == 200

    canary_run(fake, fake_owner)

    first, second = chat_spans(spans())
    for span in (first, second):
        assert CANARY in span.attributes[names.GEN_AI_SYSTEM_INSTRUCTIONS]
        assert CANARY in span.attributes[names.GEN_AI_INPUT_MESSAGES]
    assert json.loads(second.attributes[names.GEN_AI_OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "I read it."}],
            "finish_reason": "end_turn",
        }
    ]
    [*_, results] = json.loads(second.attributes[names.GEN_AI_INPUT_MESSAGES])
    assert [p["type"] for p in results["parts"]] == ["tool_call_response"]
    assert results["parts"][0]["id"] == "toolu_read" and CANARY in results["parts"][0]["response"]


# -- export ------------------------------------------------------------------------------------


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that keeps what it is sent."""

    server: _CollectorServer

    def do_POST(self) -> None:
        self.server.received.append(
            (self.path, self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        )
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


class _CollectorServer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Collector)
        self.received: list[tuple[str, bytes]] = []


def exported(database_url: str, **otel: str) -> list[tuple[str, bytes]]:
    """What a fresh app process serving one request sends to a collector at the ``otel`` endpoints.

    Each value of ``otel`` is a format string given the collector's ``{url}``.
    """
    collector = _CollectorServer()
    serving = threading.Thread(target=collector.serve_forever, kwargs={"poll_interval": 0.05})
    serving.start()
    url = f"http://127.0.0.1:{collector.server_address[1]}"
    env = {**os.environ, "HANGO_DATABASE_URL": database_url}
    env |= {name: value.format(url=url) for name, value in otel.items()}
    try:
        # A fresh process: this one's providers are the tests' in-memory ones. Exit flushes the exporters.
        subprocess.run(
            [sys.executable, "-c", "from wsgi import app; app.test_client().get('/healthz')"],
            cwd=REPO_ROOT,
            env=env,
            check=True,
            timeout=60,
        )
    finally:
        collector.shutdown()
        serving.join()
        collector.server_close()
    return collector.received


def test_the_otlp_endpoint_alone_exports_traces_under_its_project_and_metrics(database_url: str) -> None:
    received = exported(database_url, OTEL_EXPORTER_OTLP_ENDPOINT="{url}", HANGO_TRACE_PROJECT="proj-7")

    traces = [body for path, body in received if path == "/v1/traces"]
    assert traces and any(b"GET /healthz" in body for body in traces)
    assert all(names.PROJECT_NAME.encode() in body and b"proj-7" in body for body in traces)
    assert {path for path, _ in received} == {"/v1/traces", "/v1/metrics"}


def test_otel_metrics_exporter_none_serves_a_trace_only_backend(database_url: str) -> None:
    received = exported(database_url, OTEL_EXPORTER_OTLP_ENDPOINT="{url}", OTEL_METRICS_EXPORTER="none")

    assert {path for path, _ in received} == {"/v1/traces"}


def test_a_per_signal_endpoint_is_that_signals_whole_url_and_overrides_the_base(database_url: str) -> None:
    received = exported(
        database_url,
        OTEL_EXPORTER_OTLP_ENDPOINT="{url}/base",
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="{url}/metrics-here",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="{url}/traces-here",
    )

    assert {path for path, _ in received} == {"/traces-here", "/metrics-here"}


def test_metrics_go_only_to_the_configured_metrics_endpoint(database_url: str) -> None:
    received = exported(database_url, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="{url}/metrics-here")

    assert {path for path, _ in received} == {"/metrics-here"}


def test_a_chat_span_counts_the_providers_own_tool_searches_of_its_answer(
    fake: FakeProviderServer, fake_owner: As, spans
) -> None:
    fake.reply(search_answer("find text", ["grep"], ToolUseBlock("g1", "grep", {"pattern": "x"})), "done")
    defer = {"tools": ["tool:grep"], "native": True}
    session = make_session(
        fake_owner, make_agent(fake_owner, model=FAKE_MODEL, tools=["ls", "grep"], defer=defer)
    )
    say(fake_owner, session, "look")

    searched, answered = chat_spans(spans())
    assert searched.attributes[names.TOOL_SEARCHES] == 1
    assert names.TOOL_SEARCHES not in answered.attributes
