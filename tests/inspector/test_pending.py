"""Pending changes on the server: the preview is the inspect response as if saved; one save stores both sets."""

from __future__ import annotations

from typing import Any

import pytest

from hango.agent.chain import Chain
from hango.agent.parts import tool_part
from hango.agent.tools.filesystem import FILESYSTEM_TOOLS
from hango.inspector import inspect_answer
from tests.inspector.conftest import (
    OFFLINE,
    Lab,
    assistant,
    by_id,
    calls,
    excluding,
    results,
    user,
)
from tests.support.clients import error_code
from tests.support.world import row_counts

HISTORY = [user("start"), calls("a", text="looking"), results("a"), assistant("done"), user("next")]


def preview(lab: Lab, session: str, body: dict[str, Any], who=None) -> Any:
    return (who or lab.who).post(f"/v1/sessions/{session}/context/preview", json=body)


def save(lab: Lab, session: str, body: dict[str, Any], who=None) -> Any:
    return (who or lab.who).post(f"/v1/sessions/{session}/context/save", json=body)


def figures(body: dict[str, Any]) -> dict[str, Any]:
    """Every figure the panel and the CLI show of an inspect response."""
    return {
        "total_after": body["total_after"],
        "totals": body["totals"],
        "free": body["free"],
        "parts": {
            p["id"]: (p["included"], p["tokens"], p["excluded_by"], p["cache_loss_tokens"])
            for p in (*body["system"], *body["tools"], *body["messages"])
        },
    }


@pytest.fixture
def session(lab: Lab) -> str:
    return lab.session(lab.agent(model=OFFLINE), HISTORY)


def test_unchecking_tool_task_shows_system_subagent_left_out_with_its_reason_and_the_after_total_of_saving(
    lab: Lab, session: str
):
    shown = preview(lab, session, {"agent": excluding("tool:task")})
    assert shown.status_code == 200, shown.get_json()
    body = shown.get_json()

    subagent = by_id(body)["system:subagent"]
    assert (subagent["included"], subagent["excluded_by"], subagent["override"]) == (False, "tool:task", None)
    assert body["totals"]["system"]["after"] < body["totals"]["system"]["before"]
    saved = save(lab, session, {"agent": excluding("tool:task")})
    assert saved.status_code == 200, saved.get_json()
    assert figures(lab.inspect(session)) == figures(body)


def test_a_preview_pulls_in_the_companions_a_save_would_and_names_who_pulled_them(lab: Lab, session: str):
    body = preview(lab, session, {"session": excluding("message:2")}).get_json()

    assert body["pending"]["added"] == ["message:3"]
    assert by_id(body)["message:3"]["excluded_by"] == "message:2"
    assert by_id(body)["message:2"]["excluded_by"] is None
    assert body["pending"]["changed"] == {"agent": False, "session": True}


def test_a_preview_writes_nothing_and_keeps_what_is_stored(lab: Lab, session: str, engine):
    before = lab.inspect(session)
    counts = row_counts(engine)

    preview(lab, session, {"agent": excluding("tool:grep"), "session": excluding("message:4")})

    assert row_counts(engine) == counts
    assert figures(lab.inspect(session)) == figures(before)


def test_a_preview_refuses_what_the_save_would_refuse(lab: Lab, session: str):
    shown = preview(lab, session, {"session": excluding("message:99")})
    saved = save(lab, session, {"session": excluding("message:99")})

    assert (shown.status_code, error_code(shown)) == (422, "unknown_part")
    assert (saved.status_code, error_code(saved)) == (422, "unknown_part")


def test_a_preview_without_changes_is_the_inspect_response_and_costs_no_cache(lab: Lab, session: str):
    body = preview(lab, session, {}).get_json()

    assert figures(body) == figures(lab.inspect(session))
    assert body["pending"]["cache_loss_tokens"] == 0
    assert body["pending"]["scope"]["sessions"] == 1


def test_one_save_stores_both_sets_and_answers_both_etags(lab: Lab, session: str):
    body = save(lab, session, {"agent": excluding("tool:grep"), "session": excluding("message:2")}).get_json()

    agent_id = lab.inspect(session)["agent_id"]
    agent_get = lab.who.get(f"/v1/agents/{agent_id}/context-overrides")
    session_get = lab.who.get(f"/v1/sessions/{session}/context-overrides")
    assert body["agent"]["etag"] == agent_get.headers["ETag"]
    assert body["session"]["etag"] == session_get.headers["ETag"]
    assert [o["part"] for o in session_get.get_json()["overrides"]] == ["message:2", "message:3"]
    assert body["session"]["added"] == ["message:3"]
    assert [o["part"] for o in agent_get.get_json()["overrides"]] == ["tool:grep"]


def test_the_panel_saves_the_agent_set_then_the_session_set_and_a_refused_second_half_leaves_both_unchanged(
    lab: Lab, session: str
):
    agent_id = lab.inspect(session)["agent_id"]
    stale = lab.who.get(f"/v1/sessions/{session}/context-overrides").headers["ETag"]
    lab.put_session(session, excluding("message:4"))  # someone else saves the session set meanwhile
    agent_before = lab.who.get(f"/v1/agents/{agent_id}/context-overrides").get_json()
    session_before = lab.who.get(f"/v1/sessions/{session}/context-overrides").get_json()

    refused = save(
        lab,
        session,
        {"agent": excluding("tool:grep"), "session": {**excluding("message:2"), "if_match": stale}},
    )
    invalid = save(lab, session, {"agent": excluding("tool:grep"), "session": excluding("message:1")})

    assert (refused.status_code, error_code(refused)) == (412, "etag_mismatch")
    assert invalid.status_code == 422
    assert lab.who.get(f"/v1/agents/{agent_id}/context-overrides").get_json() == agent_before
    assert lab.who.get(f"/v1/sessions/{session}/context-overrides").get_json() == session_before


def test_a_member_saving_agent_parts_they_can_read_gets_403_forbidden_naming_who_may(lab: Lab):
    agent = lab.agent(model=OFFLINE, owner="owner")
    session = lab.session(agent, HISTORY, owner="member")
    member = lab.as_("member")

    refused = save(lab, session, {"agent": excluding("tool:grep")}, who=member)
    allowed = save(lab, session, {"session": excluding("message:4")}, who=member)

    assert (refused.status_code, error_code(refused)) == (403, "forbidden")
    assert "owner" in refused.get_json()["error"]["message"]
    assert allowed.status_code == 200, allowed.get_json()


def test_a_save_naming_neither_set_is_refused(lab: Lab, session: str):
    response = save(lab, session, {})

    assert (response.status_code, error_code(response)) == (422, "nothing_to_save")


def test_a_previews_cache_loss_is_inspects_price_of_the_part_less_what_is_no_longer_sent(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), HISTORY)
    assert lab.say(session, "go on").status_code == 201  # the provider now holds a call's prefixes
    body = lab.inspect(session)
    assert body["cache"]["outlook"] == "live"

    for part, route in (("tool:task", "agent"), ("system:agent", "agent"), ("message:4", "session")):
        answer = preview(lab, session, {route: excluding(part)}).get_json()
        shown, change = by_id(answer), answer["pending"]
        gone = sum(p["tokens"] for i, p in by_id(body).items() if p["included"] and not shown[i]["included"])
        # what is left out is not written again: it is saved, not lost
        assert 0 < change["cache_loss_tokens"] == by_id(body)[part]["cache_loss_tokens"] - gone, part
    assert by_id(body)["tool:task"]["cache_loss_tokens"] > sum(
        p["tokens"] for p in (*body["tools"], *body["system"]) if p["included"]
    )  # the messages cached after the tools and the system blocks are lost too


def test_who_left_a_part_out_is_read_from_the_calls_report_not_assembled_again(
    lab: Lab, session: str, monkeypatch: pytest.MonkeyPatch
):
    """The blocks a contributor drops with the tools it speaks of are named from the captured call's report
    (``Report.dropped_with``): naming them assembles no system block again, however many tools are out."""
    marking, marked, assembled = [], [], []
    mark, blocks = inspect_answer.mark_excluded_by, Chain.system_blocks
    monkeypatch.setattr(
        inspect_answer,
        "mark_excluded_by",
        lambda *a: (marking.append(1), marked.append(1), mark(*a), marking.pop()),
    )
    monkeypatch.setattr(Chain, "system_blocks", lambda *a: (assembled.append(bool(marking)), blocks(*a))[1])
    out = sorted(tool_part(t) for t in FILESYSTEM_TOOLS)

    body = preview(lab, session, {"agent": excluding("tool:task", *out)}).get_json()

    assert by_id(body)["system:subagent"]["excluded_by"] == "tool:task"
    assert by_id(body)["system:filesystem"]["excluded_by"] == out[0]
    assert not by_id(body)["system:filesystem"]["included"]
    assert marked and True not in assembled
