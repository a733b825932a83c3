"""Property: the preview, the one save, inspect, a run and the ledger agree on every figure.

Random histories and random proposed agent and session sets go through ``POST
…/context/preview`` and ``POST …/context/save``: both refuse alike (same status
and code) or the inspect response after the save shows exactly the preview's
figures, a run against the judging fake (``anthropic_rules``, with Anthropic's prompt
cache) succeeds, the ledger's first call of that run sent the preview's parts, in its
order, and no call of the run is judged ``unexplained`` by the faithful cache.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, seed
from hypothesis import strategies as st

from tests.reliability.histories import agent_sets, histories, session_sets
from tests.reliability.test_inspector_properties import (  # noqa: F401 (fixtures)
    PROPERTY,
    Judged,
    checked_alone,
    judged,
    judging_fake,
)


def figures(body: dict[str, Any]) -> dict[str, Any]:
    """Every figure the panel and the CLI show of an inspect response."""
    parts = [*body["tools"], *body["system"], *body["messages"]]
    return {
        "counted": body["counted"],
        "total_after": body["total_after"],
        "totals": body["totals"],
        "free": body["free"],
        "cache": body["cache"],
        "parts": [
            (p["id"], p["included"], p["tokens"], p["excluded_by"], p["cache_loss_tokens"]) for p in parts
        ],
    }


def sent_parts(body: dict[str, Any]) -> list[str]:
    """The parts an inspect response sends, in cache order (tools, system blocks, messages)."""
    return [p["id"] for p in (*body["tools"], *body["system"], *body["messages"]) if p["included"]]


def test_preview_save_inspect_run_and_ledger_show_the_same_figures(judged: Judged):  # noqa: F811
    @seed(2025)
    @PROPERTY
    @given(st.data())
    def example(data):
        judged.start()
        history = data.draw(histories())
        session = judged.session_with(history)
        proposal = {
            "agent": {"overrides": data.draw(agent_sets())},
            "session": {"overrides": data.draw(session_sets(history))},
        }
        shown = judged.who.post(f"/v1/sessions/{session}/context/preview", json=proposal)
        saved = judged.who.post(f"/v1/sessions/{session}/context/save", json=proposal)
        assert shown.status_code == saved.status_code, (shown.get_json(), saved.get_json())
        judged.count("saves")
        if shown.status_code != 200:
            assert shown.get_json()["error"]["code"] == saved.get_json()["error"]["code"]
            judged.count("refused")
            return
        preview = shown.get_json()
        inspect = judged.who.get(f"/v1/sessions/{session}/context").get_json()
        assert figures(inspect) == figures(preview)
        judged.run(session)
        calls = judged.who.get(f"/v1/sessions/{session}/calls").get_json()["items"]
        first = calls[-1]  # newest first: the run's first call is the oldest
        ledger = judged.who.get(f"/v1/sessions/{session}/calls/{first['id']}").get_json()["parts"]
        assert [p["id"] for p in ledger][: len(sent_parts(preview))] == sent_parts(preview)
        # the faithful cache fake read what the verdicts expected: no call of the run is a false miss
        assert [c["cache"] for c in calls if c["cache"]["miss_reason"] == "unexplained"] == []
        judged.assert_all_valid()

    checked_alone(judged, example)
