"""``GET /v1/sessions/{id}/context``: every part of the next request, its tokens and flags; nothing written."""

from __future__ import annotations

import json
import uuid

from hango.agent.estimator import estimate_request
from hango.agent.options import BUILTIN_TOOLS
from hango.messages import Message, Response, TextBlock, Usage
from hango.providers.anthropic import request_payload
from hango.telemetry import names
from tests.fakes.provider_server import COUNT_TOKENS, MESSAGES
from tests.inspector.conftest import (
    OFFLINE,
    Lab,
    assistant,
    by_id,
    calls,
    excluding,
    override_set,
    parts,
    request_of,
    results,
    user,
)
from tests.support.world import row_counts, snapshot

SYSTEM_PARTS = [
    "system:agent",
    "system:filesystem",
    "system:subagent",
    "system:skills",
    "system:memory:/memories/AGENTS.md",
    "system:memory:/memories/style.md",
    "system:todo",
]
HISTORY = [
    user("plan the launch"),
    calls("t1", text="looking around"),
    results("t1"),
    assistant("the plan is ready"),
    user("what is next?"),
]


def furnished(lab: Lab, model: str = OFFLINE, **fields) -> tuple[str, str]:
    """An agent with two memory files, a skill and todos, and a session with a tool pair; (agent, session)."""
    agent = lab.agent(model=model, **fields)
    lab.memory(agent, "/memories/AGENTS.md", "the team writes short notes")
    lab.memory(agent, "/memories/style.md", "answer in one line")
    lab.skill(agent, "deploy", ["grep"])
    session = lab.session(agent, HISTORY)
    lab.store(lambda s: s.todos.set(uuid.UUID(session), [{"content": "ship it", "status": "pending"}]))
    return agent, session


def included_sum(body: dict) -> int:
    return sum(p["tokens"] for p in by_id(body).values() if p["included"])


def test_inspect_lists_every_part_and_included_tokens_sum_to_the_captured_estimate(lab: Lab):
    agent, session = furnished(lab)
    plain = lab.inspect(session)
    agent_set = override_set(["system:filesystem", "tool:glob"], {"system:agent": "Be brief. " * 40})
    assert lab.put_agent(agent, agent_set).status_code == 200
    session_set = override_set(["message:4"], {"message:1": "plan it, in short"})
    assert lab.put_session(session, session_set).status_code == 200

    shown = lab.inspect(session)
    captured = request_of(lab.inspect(session, format="request"))

    for response in (plain, shown):
        assert parts(response["system"]) == SYSTEM_PARTS
        assert parts(response["tools"]) == [f"tool:{name}" for name in BUILTIN_TOOLS]
        assert parts(response["messages"]) == [f"message:{seq}" for seq in range(1, 6)]
    assert shown["counted"] == "estimate"
    assert included_sum(shown) == estimate_request(captured) == shown["total_after"]
    assert included_sum(plain) == plain["total_after"] == plain["total_before"]
    assert shown["total_before"] == plain["total_before"]
    for group in ("system", "tools", "messages"):
        assert shown["totals"][group]["before"] == plain["totals"][group]["before"]
        assert shown["totals"][group]["after"] == sum(p["tokens"] for p in shown[group] if p["included"])
    assert not by_id(shown)["system:filesystem"]["included"]
    assert by_id(shown)["system:agent"]["tokens"] > by_id(plain)["system:agent"]["tokens"]


def test_inspect_calls_no_provider_no_summarizer_and_writes_no_row(lab: Lab):
    lab.fake.fail(500, times=None)
    agent = lab.agent(context_window=1024)
    long = [m for i in range(20) for m in (user(f"question {i} " * 30), assistant(f"answer {i} " * 30))]
    session = lab.session(agent, long)
    counts, rows = row_counts(lab.engine), snapshot(lab.engine, lab.tenant.id)

    body = lab.inspect(session)

    assert body["would_compact"] is True
    assert parts(body["messages"]) == [f"message:{seq}" for seq in range(1, 41)]
    assert lab.fake.bodies(MESSAGES) == []
    assert row_counts(lab.engine) == counts
    assert snapshot(lab.engine, lab.tenant.id) == rows


def test_token_totals_are_counted_by_the_provider_when_it_has_a_counter(lab: Lab):
    _, session = furnished(lab, model="anthropic/claude-test")
    lab.fake.count(4321)
    counts = row_counts(lab.engine)

    body = lab.inspect(session)

    assert (body["counted"], body["total_before"], body["total_after"]) == ("provider", 4321, 4321)
    assert body["free"] == body["context_window"] - 4321 - body["output_reserve"]
    assert len(lab.fake.bodies(COUNT_TOKENS)) == 1
    assert lab.fake.bodies(MESSAGES) == []
    assert row_counts(lab.engine) == counts


def test_token_totals_fall_back_to_the_estimate_when_the_counter_fails(lab: Lab):
    _, session = furnished(lab, model="anthropic/claude-test")
    lab.fake.fail(529, path=COUNT_TOKENS)

    body = lab.inspect(session)

    assert body["counted"] == "estimate"
    assert body["total_after"] == included_sum(body)


def test_token_totals_fall_back_to_the_estimate_when_the_counter_hangs(make_lab):
    lab = make_lab(token_count_timeout=0.5)
    _, session = furnished(lab, model="anthropic/claude-test")
    lab.fake.hang(10, path=COUNT_TOKENS)

    body = lab.inspect(session)

    assert body["counted"] == "estimate"
    assert body["total_after"] == included_sum(body)


def test_format_request_is_the_request_the_counter_is_sent(lab: Lab):
    agent, session = furnished(lab, model="anthropic/claude-test")
    lab.put_agent(agent, excluding("system:subagent", "tool:task"))
    lab.put_session(session, excluding("message:4"))

    body = lab.inspect(session, format="request")
    lab.inspect(session)

    counted = lab.fake.bodies(COUNT_TOKENS)[-1]
    request = request_of(body)
    assert counted == {**request_payload(request), "model": "claude-test"}
    assert "task" not in [t["name"] for t in body["tools"]]
    assert [m["content"][0]["text"] for m in body["messages"] if m["role"] == "assistant"] == [
        "looking around"
    ]
    assert [b["cache_control"] for b in body["system"]] == [False, False, False, False, True, False]
    assert body["messages"][-1]["cache_control"] is True


def test_full_returns_the_whole_part_and_its_replacement(lab: Lab):
    agent = lab.agent(model=OFFLINE)
    long = "é" * 150 + "👍" * 150
    session = lab.session(agent, [user(long), assistant("ok")])
    lab.put_session(session, override_set(replace={"message:2": "fine"}))

    body = lab.inspect(session)
    first = lab.inspect(session, full="message:1")
    second = lab.inspect(session, full="message:2")

    assert by_id(body)["message:1"]["preview"] == long[:200]
    assert first == {
        "id": "message:1",
        "kind": "message",
        "content": [{"type": "text", "text": long}],
        "replacement": None,
        "tokens": by_id(body)["message:1"]["tokens"],
        "original_tokens": by_id(body)["message:1"]["tokens"],
    }
    assert second["content"] == [{"type": "text", "text": "ok"}] and second["replacement"] == "fine"
    assert lab.inspect(session, full="system:agent")["content"].startswith("You are")
    assert (
        lab.who.get(f"/v1/sessions/{session}/context", query_string={"full": "message:99"}).status_code == 404
    )
    bad = lab.who.get(f"/v1/sessions/{session}/context", query_string={"full": "message:x"})
    assert bad.status_code == 422 and bad.get_json()["error"]["code"] == "malformed_part"


def test_window_and_compact_at(make_lab):
    lab = make_lab(compact_trigger=0.5)
    agent = lab.agent(model=OFFLINE, context_window=50_000)
    session = lab.session(agent, [user("hi")])

    body = lab.inspect(session)

    assert (body["context_window"], body["compact_at"]) == (50_000, 25_000)
    assert body["would_compact"] is False  # free and free_before_compaction: tests/inspector/test_numbers.py


def test_the_output_reserve_is_the_requests_max_tokens(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), [user("hi")])
    reserve = lab.inspect(session)["output_reserve"]
    assert reserve == lab.inspect(session, format="request")["max_tokens"] == 4096


def test_last_call_shows_the_estimate_beside_the_reported_tokens(lab: Lab):
    _, session = furnished(lab, model="anthropic/claude-test")
    assert lab.inspect(session)["last_call"] is None
    reply = Response(Message("assistant", (TextBlock("done"),)), "end_turn", Usage(700, 5, 200, 30))
    lab.fake.reply(reply)
    assert lab.say(session, "and now?").status_code == 201

    body = lab.inspect(session)

    assert len(lab.fake.bodies(MESSAGES)) == 1
    assert body["last_call"]["reported"] == 700 + 200 + 30
    # the run's one call sent everything the session holds now but its answer (message 7)
    assert body["last_call"]["estimated"] == included_sum(body) - by_id(body)["message:7"]["tokens"]


def test_cache_loss_tokens_count_every_cached_part_from_the_changed_one_on_messages_included(lab: Lab):
    _, session = furnished(lab, model=OFFLINE)
    assert lab.say(session, "go on").status_code == 201  # the provider now holds that call's prefixes

    body = lab.inspect(session)

    sent = [p for p in (*body["tools"], *body["system"], *body["messages"]) if p["included"]]
    assert all(p["cached_prefix"] for p in sent)  # the last message carries a breakpoint
    # a change at the first part loses the whole read of what the provider holds
    assert sent[0]["cache_loss_tokens"] == body["cache"]["expected_read_tokens"] > 0
    losses = [p["cache_loss_tokens"] for p in sent]
    assert losses == sorted(losses, reverse=True) and losses[-2] > 0
    assert losses[-1] == 0, "the answer since was never held: changing it loses no cache"


def test_a_provider_without_a_prompt_cache_loses_nothing_by_a_change(make_lab):
    lab = make_lab(cache_rules=json.dumps({"offline": {"enabled": False}}))  # a provider without a cache
    _, session = furnished(lab)

    body = lab.inspect(session)

    assert all(p["cache_loss_tokens"] == 0 and not p["cached_prefix"] for p in by_id(body).values())


def test_would_compact_is_decided_on_the_history_after_overrides(lab: Lab):
    agent = lab.agent(model=OFFLINE, tools=[], system_prompt="", context_window=2048)
    session = lab.session(agent, [user("word " * 2000), assistant("ok"), user("short")])
    assert lab.inspect(session)["would_compact"] is True

    lab.put_session(session, override_set(replace={"message:1": "gist"}))

    body = lab.inspect(session)
    assert body["would_compact"] is False
    assert body["total_before"] > body["compact_at"] > body["total_after"]


def test_the_inspect_span_carries_part_counts_totals_and_stale_and_paired_events(lab: Lab, spans):
    agent = lab.agent(model=OFFLINE)
    session = lab.session(agent, [user("a"), calls("t1"), results("t1"), assistant("b"), user("c")])
    lab.memory(agent, "/memories/gone.md", "soon gone")
    lab.put_agent(agent, excluding("system:memory:/memories/gone.md"))
    lab.store(lambda s: s.memory_files.delete(uuid.UUID(agent), "/memories/gone.md"))
    lab.put_session(session, excluding("message:2"))
    spans()

    body = lab.inspect(session)

    span = next(s for s in spans() if s.name == names.SPAN_CONTEXT_INSPECT)
    assert {k: v for k, v in span.attributes.items() if k.startswith("hango.context.")} == {
        names.CONTEXT_PARTS_SYSTEM: len(body["system"]),
        names.CONTEXT_PARTS_TOOLS: len(body["tools"]),
        names.CONTEXT_PARTS_MESSAGES: 5,
        names.CONTEXT_TOKENS_BEFORE: body["total_before"],
        names.CONTEXT_TOKENS_AFTER: body["total_after"],
        names.CONTEXT_WOULD_COMPACT: False,
    }
    assert [(e.name, dict(e.attributes)) for e in span.events] == [
        (names.EVENT_OVERRIDE_STALE, {"part": "system:memory:/memories/gone.md"}),
        (names.EVENT_OVERRIDE_PAIRED, {"part": "message:3"}),
    ]
