"""``hango context suggest [--apply N]`` and ``hango context compact`` against a real gunicorn server."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from hango.store import TenantStore
from tests.support.mcp import store_server

pytestmark = pytest.mark.server

# A suggestion's first three lines: its number, kind, route and figures; its dollars; then its parts.
ITEM = re.compile(
    r"^(?P<n>\d+)\. (?P<kind>\w+) on the \w+: saves (?P<saved>\d+) tokens, cache (?:cost|gain) [\d,]+\n"
    r"   (?P<price>.+)\n   (?P<parts>.+)$",
    re.MULTILINE,
)


def suggested(hango, session: str) -> dict:
    result = hango("context", "suggest", "--session", session, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_suggest_prints_the_ranked_list_with_savings_and_cache_cost(hango, demo_session, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per field: the goldens pin the wrapping
    session = demo_session["session_id"]
    body = suggested(hango, session)
    assert body["suggestions"], "the demo re-reads and edits /notes.md: something is out of date"

    result = hango("context", "suggest", "--session", session)

    assert (result.code, result.err) == (0, "")
    rows = [m.groupdict() for m in ITEM.finditer(result.out)]
    assert [(r["kind"], int(r["saved"]), r["parts"]) for r in rows] == [
        (s["kind"], s["tokens_saved"], ", ".join(s["parts"]) or "(compaction)") for s in body["suggestions"]
    ]
    assert [int(r["n"]) for r in rows] == list(range(1, len(rows) + 1))
    assert body["suggestions"][0]["reason"] in result.out


def test_suggest_apply_puts_the_parts_with_if_match_and_the_savings_show(hango, demo_session):
    session = demo_session["session_id"]
    before = json.loads(hango("context", "show", "--session", session, "--json").out)
    first = suggested(hango, session)["suggestions"][0]

    result = hango("context", "suggest", "--session", session, "--apply", "1")

    assert result.code == 0, result.err
    assert result.out.startswith(f"excluded {', '.join(first['parts'])} on the {first['target']}")
    after = json.loads(hango("context", "show", "--session", session, "--json").out)
    assert before["total_after"] - after["total_after"] == first["tokens_saved"]
    assert first not in suggested(hango, session)["suggestions"]


def test_suggest_apply_out_of_range_is_a_usage_error(hango, demo_session):
    count = len(suggested(hango, demo_session["session_id"])["suggestions"])
    result = hango("context", "suggest", "--session", demo_session["session_id"], "--apply", "99")
    numbers = "1" if count == 1 else f"1 to {count}"
    assert result.code == 2
    assert f"--apply takes a suggestion's number from the list: {numbers}, not 99" in result.err


def test_suggest_apply_5_with_no_suggestions_says_there_are_none_to_apply(hango, demo_session):
    created = hango("sessions", "create", "--agent", demo_session["agent_id"], "--json")
    session = json.loads(created.out)["id"]
    assert suggested(hango, session)["suggestions"] == []

    result = hango("context", "suggest", "--session", session, "--apply", "5")

    assert result.code == 2
    assert "--apply 5: there are no suggestions to apply (nothing in the next request looks like dead" in (
        result.err
    )
    assert "(1-0)" not in result.err and "it has 0" not in result.err


def test_compact_prints_what_it_summarized_and_the_history_stays(hango, demo_session):
    session = demo_session["session_id"]
    history = hango("messages", "--session", session, "--json").out

    result = hango("context", "compact", "--session", session, "--instructions", "keep the file names")

    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert re.fullmatch(r"summarized messages 1-\d+ \(\d+ tokens\) into the session's summary", lines[0])
    assert lines[1].startswith("kept from message ")
    assert hango("messages", "--session", session, "--json").out == history
    shown = json.loads(hango("context", "show", "--session", session, "--json").out)
    assert shown["messages"][0]["id"] == "summary"


def test_suggest_apply_of_defer_server_patches_the_agents_deferral(hango, demo_session, engine):
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo_session["tenant_id"]))
        store_server(store, uuid.UUID(demo_session["agent_id"]), "git", ["git_log", "git_status", "git_diff"])
    session = demo_session["session_id"]
    items = suggested(hango, session)["suggestions"]
    number = next(n for n, s in enumerate(items, 1) if s["kind"] == "defer_server")

    result = hango("context", "suggest", "--session", session, "--apply", str(number))

    assert result.code == 0, result.err
    assert result.out.startswith("deferred tool:git/*: saves ")
    shown = json.loads(hango("context", "show", "--session", session, "--json").out)
    (git,) = [g for g in shown["tool_groups"] if g["server"] == "git"]
    assert (git["sent"], git["deferred"]) == (0, 3)
    assert "defer_server" not in [s["kind"] for s in suggested(hango, session)["suggestions"]]
