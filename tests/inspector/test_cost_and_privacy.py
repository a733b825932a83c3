"""The inspector's cost bound (SQL statements per inspect) and its privacy (no content on logs, spans, audit)."""

from __future__ import annotations

import json
import logging
import re
import uuid

import sqlalchemy as sa

from hango.db.schema import audit_log
from tests.inspector.conftest import Lab, assistant, excluding, override_set, user
from tests.support.sql import MAX_INSPECT_STATEMENTS, count_statements

CANARY = "CANARY-7f3a9c"
_FROM = re.compile(r"\bFROM (\w+)", re.IGNORECASE)


def long_session(lab: Lab, agent: str, length: int) -> str:
    """A session of ``length`` alternating messages, inserted in one statement."""
    session = lab.session(agent)
    items = [
        ("user" if seq % 2 else "assistant", [{"type": "text", "text": f"message {seq}"}])
        for seq in range(1, length + 1)
    ]
    lab.store(lambda s: s.messages.append_many(uuid.UUID(session), items))
    lab.put_session(session, excluding("message:2"))
    lab.summary(session, 2, "the first two messages")
    return session


def inspect_statements(lab: Lab, session: str) -> list[str]:
    with count_statements(lab.app_engine) as statements:
        lab.inspect(session)
    return statements


def test_an_inspect_issues_the_same_small_number_of_statements_for_10_and_1000_messages(lab: Lab):
    agent = lab.agent(model="offline/echo")
    lab.memory(agent, "/memories/AGENTS.md", "notes")
    lab.skill(agent, "deploy", ["grep"])
    lab.put_agent(agent, excluding("tool:glob"))
    short, long = long_session(lab, agent, 10), long_session(lab, agent, 1000)

    few, many = inspect_statements(lab, short), inspect_statements(lab, long)

    assert len(few) == len(many) <= MAX_INSPECT_STATEMENTS, many
    selects = [s for s in many if s.lstrip().upper().startswith("SELECT")]
    tables = [_FROM.search(s).group(1) for s in selects]
    assert len(tables) == len(set(tables)), tables


def _logged(caplog) -> str:
    return "\n".join(f"{r.getMessage()} {r.args!r} {r.__dict__!r}" for r in caplog.records)


def _on_spans(finished) -> str:
    pieces = []
    for span in finished:
        pieces.append(json.dumps(dict(span.attributes or {}), default=str))
        pieces.extend(f"{e.name} {json.dumps(dict(e.attributes or {}), default=str)}" for e in span.events)
    return "\n".join(pieces)


def test_a_canary_in_a_message_a_memory_file_and_a_replacement_reaches_no_log_span_or_audit(
    lab: Lab, caplog, spans
):
    agent = lab.agent()
    lab.memory(agent, "/memories/AGENTS.md", f"memory holds {CANARY}-memory")
    session = lab.session(agent, [user(f"message holds {CANARY}-message"), assistant("noted"), user("go on")])
    spans()
    caplog.set_level(logging.DEBUG)

    replaced = f"{CANARY}-replacement"
    assert lab.put_session(session, override_set(replace={"message:2": replaced})).status_code == 200
    assert lab.put_agent(agent, override_set(replace={"system:agent": replaced})).status_code == 200
    shown = lab.who.get(f"/v1/sessions/{session}/context").get_data(as_text=True)
    full = lab.inspect(session, full="message:1")
    tried = lab.try_(session, {"replace": {"message:1": f"{CANARY}-try"}, "message": f"{CANARY}-extra"})
    ran = lab.say(session, f"{CANARY}-run")

    assert tried.status_code == 200 and ran.status_code == 201
    assert f"{CANARY}-memory" in shown and f"{CANARY}-message" in json.dumps(full)  # the API caller sees it
    wire = json.dumps(lab.fake.bodies())
    assert all(f"{CANARY}-{where}" in wire for where in ("memory", "message", "replacement", "try", "run"))
    assert CANARY not in _logged(caplog)
    assert CANARY not in _on_spans(spans())
    with lab.engine.connect() as conn:
        details = conn.execute(sa.select(audit_log.c.detail)).scalars().all()
    assert details and CANARY not in json.dumps(details)


def test_the_privacy_sinks_are_watched_content_reaches_spans_only_when_the_tenant_opts_in(lab: Lab, spans):
    lab.store(lambda s: s.update_tenant(trace_llm_content=True))
    session = lab.session(lab.agent(), [user(f"message holds {CANARY}-message")])
    spans()

    assert lab.try_(session).status_code == 200

    assert f"{CANARY}-message" in _on_spans(spans())
