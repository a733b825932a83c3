"""The report one capture returns with its draft: what each slot left out of the call and why, and the
compaction it made (``hango.agent.report``)."""

from __future__ import annotations

import dataclasses
import uuid

from hango.agent.assembly import capture, prepare_session
from hango.agent.compactor import StoredCompactor
from hango.agent.deps import Deps
from hango.agent.estimator import estimate_block, estimate_message, estimate_tool
from hango.agent.overrides import Overrides
from hango.agent.parts import SUMMARY, message_part, tool_part
from hango.agent.report import OVERRIDDEN, SUMMARIZED, LeftOut
from hango.agent.state import Caller, RunHandles
from hango.inspector import inspection
from hango.store import TenantStore
from tests.inspector.conftest import Lab, assistant, by_id, excluding, override_set, user
from tests.inspector.test_compact import long_chat

AGENT_PARTS, SESSION_PARTS = ("system:todo", "tool:grep"), ("message:1", "message:2")


def test_a_capture_reports_what_each_slot_left_out_and_why_and_the_compaction_it_made(lab: Lab):
    agent = lab.agent(context_window=1024)
    session = lab.session(agent, long_chat())  # past the trigger
    assert lab.put_agent(agent, excluding(*AGENT_PARTS)).status_code == 200
    assert lab.put_session(session, excluding(*SESSION_PARTS)).status_code == 200
    deps = Deps(lab.engine, lab.who.client.application.config["HANGO"])

    with lab.engine.connect() as conn:
        store = TenantStore(conn, lab.tenant_id)
        handles = RunHandles(compactor=StoredCompactor(deps))
        session_row = store.sessions.get(uuid.UUID(session))
        prepared = prepare_session(deps, store, session_row, Caller(None, None), handles=handles)
        state = prepared.state
        whole = prepared.chain.draft(dataclasses.replace(state, overrides=Overrides()))
        sent = capture(prepared.chain, state)

    report, through = sent.report, state.summary.through_seq
    system = {b.part: b.block for b in whole.system}
    tools = {tool_part(t.name): t for t in whole.tools}
    messages = {m.part: m.message for m in whole.messages}
    summarized = [message_part(seq) for seq in range(3, through + 1)]
    assert report.left_out == (
        LeftOut("chain", OVERRIDDEN, ("system:todo",), estimate_block(system["system:todo"])),
        LeftOut(
            "context_overrides",
            OVERRIDDEN,
            ("message:1", "message:2"),
            estimate_message(messages["message:1"]) + estimate_message(messages["message:2"]),
        ),
        LeftOut(
            "summarization",
            SUMMARIZED,
            tuple(summarized),
            sum(estimate_message(messages[p]) for p in summarized),
        ),
        LeftOut("tool_allowlist", OVERRIDDEN, ("tool:grep",), estimate_tool(tools["tool:grep"])),
    )
    assert report.excluded_tokens == sum(e.tokens for e in report.left_out if e.by != "summarization")
    assert report.compacted.through_seq == through and not report.would_compact
    kept = (
        {m.part for m in sent.messages}
        | {b.part for b in sent.system}
        | {tool_part(t.name) for t in sent.tools}
    )
    assert kept.isdisjoint([*AGENT_PARTS, *SESSION_PARTS, *summarized]) and SUMMARY in kept


def test_an_inspect_captures_its_call_once_and_reads_the_call_before_its_overrides_from_that_capture(
    lab: Lab, monkeypatch
):
    agent = lab.agent()
    session = lab.session(
        agent, [user("where is the config?"), assistant("In ./etc."), user("and the logs?")]
    )
    plain = lab.inspect(session)
    agent_set = override_set(exclude=AGENT_PARTS, replace={"system:agent": "Be brief."})
    assert lab.put_agent(agent, agent_set).status_code == 200
    assert lab.put_session(session, excluding(*SESSION_PARTS)).status_code == 200
    captures = []

    def counted(chain, state):
        captures.append(state.overrides)
        return capture(chain, state)

    monkeypatch.setattr(inspection, "capture", counted)
    body = lab.inspect(session)

    assert len(captures) == 1 and captures[0]  # one capture, the one with the overrides
    before, after = by_id(plain), by_id(body)
    assert list(before) == [p for p in after if not after[p]["stale"]]  # every part, in the same order
    for part in [*AGENT_PARTS, *SESSION_PARTS]:
        assert not after[part]["included"]
        assert (after[part]["tokens"], after[part]["preview"]) == (
            before[part]["tokens"],
            before[part]["preview"],
        )
    assert after["system:agent"]["original_tokens"] == before["system:agent"]["tokens"]
    assert after["system:agent"]["preview"] == "Be brief."
    assert body["total_before"] == plain["total_after"] > body["total_after"]
