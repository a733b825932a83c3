"""``hango context show|exclude|include|replace|try`` against a real gunicorn server on the test database.

The golden output of each command is in ``test_context_golden.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
import requests

from hango.cli import context
from hango.config import REPO_ROOT
from tests.support.net import free_port

pytestmark = pytest.mark.server

ROW = re.compile(r"^\[(?P<box>[x ])\] (?P<id>\S+) .*?(?P<tokens>\d+)(?:  (?P<badges>[a-z ]+))?$")
HEADING = re.compile(r"^(SYSTEM|TOOLS|MESSAGES)  \d+ parts?  (\d+) → (\d+) tokens  \d+% of the window$")
READ_NOTES = 'Read it again.\n/tool read_file {"path": "/notes.md"}'


def inspect_json(hango, session: str) -> dict[str, Any]:
    result = hango("context", "show", "--session", session, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def table(out: str) -> dict[str, list[dict[str, str]]]:
    """The rows of a printed table by group heading, each row's regex groups."""
    groups: dict[str, list[dict[str, str]]] = {}
    current = None
    for line in out.splitlines():
        heading = HEADING.match(line)
        if heading:
            current = heading.group(1)
            groups[current] = [{"before": heading.group(2), "after": heading.group(3)}]
        elif current and (row := ROW.match(line)):
            groups[current].append(row.groupdict())
    return groups


def test_show_prints_every_part_with_group_totals_and_badges(hango, demo_session):
    session = demo_session["session_id"]
    assert hango("context", "exclude", "--session", session, "message:6").code == 0
    snapshot = inspect_json(hango, session)

    result = hango("context", "show", "--session", session, "--all")
    assert (result.code, result.err) == (0, "")
    assert "\x1b" not in result.out  # not a terminal: no colour
    groups = table(result.out)
    assert list(groups) == ["SYSTEM", "TOOLS", "MESSAGES"]
    for title, key in (("SYSTEM", "system"), ("TOOLS", "tools"), ("MESSAGES", "messages")):
        heading, *rows = groups[title]
        assert [r["id"] for r in rows] == [p["id"] for p in snapshot[key]]
        assert (
            int(heading["before"]) == sum(int(r["tokens"]) for r in rows) == snapshot["totals"][key]["before"]
        )
        assert int(heading["after"]) == sum(int(r["tokens"]) for r in rows if r["box"] == "x")
    rows = {r["id"]: r for group in groups.values() for r in group[1:]}
    assert len(rows) == 6 + 8 + 22
    assert (rows["message:6"]["box"], rows["message:7"]["box"]) == (" ", " ")
    assert rows["message:7"]["badges"] == "paired cached"
    # the demo's offline provider caches as its reference model does: its last call's prefix is "cached"
    assert rows["system:agent"]["badges"] == "cached" and rows["system:todo"]["badges"] == "cached"
    share = round(100 * snapshot["total_after"] / snapshot["context_window"])
    total = f"total {snapshot['total_before']} → {snapshot['total_after']} tokens ({share}%)  [estimate]"
    assert total in result.out
    assert all(len(line) <= 120 for line in result.out.splitlines())


def test_exclude_then_include_a_tool_use_message(hango, demo_session):
    session = demo_session["session_id"]
    result = hango("context", "exclude", "--session", session, "message:2")
    assert (result.code, result.out.splitlines()) == (
        0,
        ["excluded message:2", "pulled in as tool pair companions: message:3"],
    )
    parts = {p["id"]: p for p in inspect_json(hango, session)["messages"]}
    assert (parts["message:2"]["included"], parts["message:3"]["included"]) == (False, False)
    assert (parts["message:2"]["paired"], parts["message:3"]["paired"]) == (False, True)

    result = hango("context", "include", "--session", session, "message:2")
    assert (result.code, result.out.splitlines()) == (
        0,
        ["included message:2", "released tool pair companions: message:3"],
    )
    assert all(p["included"] for p in inspect_json(hango, session)["messages"])


def test_including_the_companion_releases_the_part_that_pulled_it_in(hango, demo_session):
    session = demo_session["session_id"]
    assert (
        hango("context", "exclude", "--session", session, "message:2", "system:todo", "tool:grep").code == 0
    )
    result = hango("context", "include", "--session", session, "message:3", "tool:grep", "message:21")
    assert result.code == 0
    assert result.out.splitlines() == [
        "included tool:grep, message:3",
        "released tool pair companions: message:2",
        "no override to remove: message:21",
        "saved for the agent: applies to 1 session of Demo agent",
    ]
    snapshot = inspect_json(hango, session)
    excluded = [
        p["id"] for group in ("system", "tools", "messages") for p in snapshot[group] if not p["included"]
    ]
    assert excluded == ["system:todo"]


def test_a_range_expands_to_the_sessions_messages(hango, demo_session):
    session = demo_session["session_id"]
    result = hango("context", "exclude", "--session", session, "message:20..99")
    assert (result.code, result.out) == (0, "excluded message:20, message:21, message:22\n")
    result = hango("context", "include", "--session", session, "message:21..21")
    assert (result.code, result.out) == (0, "included message:21\n")
    excluded = [p["id"] for p in inspect_json(hango, session)["messages"] if not p["included"]]
    assert excluded == ["message:20", "message:22"]
    result = hango("context", "include", "--session", session, "message:0..1")
    assert (result.code, result.out) == (0, "no override to remove: message:1\n")


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("message:9..3", "is empty"),
        ("message:3..x", "is not a range"),
        ("message:90..99", "names no message"),
    ],
)
def test_a_bad_range_is_a_usage_error(hango, demo_session, spec, says):
    result = hango("context", "exclude", "--session", demo_session["session_id"], spec)
    assert (result.code, result.out) == (2, "")
    assert says in result.err


def test_a_refused_set_prints_the_reason_and_parts_with_exit_1(hango, demo_session):
    session = demo_session["session_id"]
    result = hango("context", "exclude", "--session", session, "message:1..22")
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith("hango: the history has no user message (422 no_user_message); parts: ")
    assert "message:1, message:2, message:3" in result.err and "Traceback" not in result.err

    result = hango("context", "replace", "--session", session, "tool:grep", "--text", "anything")
    assert result.code == 1
    assert "(422 replace_not_allowed_for_tools); parts: tool:grep" in result.err
    result = hango("context", "exclude", "--session", session, "bogus")  # the server judges it
    assert (result.code, result.err) == (
        1,
        "hango: 'bogus' is not a part id (422 malformed_part); parts: bogus\n",
    )


def test_a_stale_etag_is_said_plainly_and_nothing_is_saved(hango, demo_session, monkeypatch):
    session = demo_session["session_id"]
    url = f"{os.environ['HANGO_API_URL']}/v1/sessions/{session}/context-overrides"
    headers = {"Authorization": f"Bearer {demo_session['owner_key']}"}
    read = context.Routes.read

    def read_then_someone_else_saves(routes, route):
        stored = read(routes, route)
        body = {"overrides": [{"part": "message:21", "action": "exclude"}]}
        requests.put(url, json=body, headers=headers, timeout=10).raise_for_status()
        return stored

    monkeypatch.setattr(context.Routes, "read", read_then_someone_else_saves)
    result = hango("context", "exclude", "--session", session, "message:2")
    assert (result.code, result.out) == (1, "")
    assert "the session's overrides changed while this command ran" in result.err
    assert "nothing was saved for the session" in result.err
    stored = requests.get(url, headers=headers, timeout=10).json()["overrides"]
    assert [o["part"] for o in stored] == ["message:21"]


def test_replace_saves_a_replace_override(hango, demo_session, tmp_path):
    session = demo_session["session_id"]
    result = hango("context", "replace", "--session", session, "message:1", "--text", "Start the notes.")
    assert (result.code, result.out) == (0, "replaced message:1: the next runs send the new text\n")
    full = hango("context", "show", "--session", session, "--full", "message:1")
    assert full.out.splitlines()[-1] == "Start the notes."
    assert "replaced by (this is what is sent):" in full.out

    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Be terse.", encoding="utf-8")
    assert hango("context", "replace", "--session", session, "system:agent", "--file", str(prompt)).code == 0
    rows = {
        r["id"]: r
        for g in table(hango("context", "show", "--session", session, "--all").out).values()
        for r in g[1:]
    }
    assert rows["system:agent"]["badges"] == "replaced cached"  # a replaced part was cached as sent
    assert rows["message:1"]["badges"] == "replaced cached"

    missing = hango("context", "replace", "--session", session, "message:1", "--file", str(tmp_path / "none"))
    assert (missing.code, "cannot read the replacement" in missing.err) == (2, True)


def test_try_prints_the_answer_tool_calls_and_usage_and_stores_nothing(hango, demo_session):
    session = demo_session["session_id"]
    result = hango("context", "try", "--session", session, "--exclude", "message:2", "--message", READ_NOTES)
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0].startswith("answer from offline/echo (")
    assert "stop reason: tool_use" in lines
    assert lines[lines.index("tool calls (not executed):") + 1] == '  read_file {"path": "/notes.md"}'
    assert any(
        re.fullmatch(r"usage: input \d+ · output \d+ · cache read \d+ · cache write \d+", li) for li in lines
    )
    assert "left out: message:2, message:3" in lines
    assert "  of which tool pair companions: message:3" in lines
    assert 'Last user text: "Read it again.' in result.out

    history = hango("messages", "--session", session, "--json")
    assert len(json.loads(history.out)["items"]) == 22


def test_try_turn_prints_the_steps_then_the_answer_a_summary_and_the_would_be_diffs(hango, demo_session):
    session = demo_session["session_id"]
    write = '/tool write_file {"path": "/turn.md", "content": "from the turn"}'

    result = hango("context", "try", "--session", session, "--turn", "--message", f"Write it.\n{write}")

    assert result.code == 0, result.err
    assert "model call (context_try) offline/echo..." in result.err.splitlines()
    assert any(line.startswith("tool write_file done in ") for line in result.err.splitlines())
    lines = result.out.splitlines()
    assert lines[0] == "answer:"
    assert "stop reason: end_turn" in lines
    assert re.search(
        r"2 calls · 1 tool call · input \d+ · output \d+ · cache read \d+ · cache write \d+ · "
        r"\$\d+\.\d+ \(simulated at anthropic/claude-sonnet-4-6 prices\)",
        " ".join(li.strip() for li in lines),  # the summary, wrapped to the terminal
    ), lines
    diff = lines[lines.index("would change (nothing was stored):") + 1 :]
    assert diff[:3] == ["created /turn.md", "--- a/turn.md", "+++ b/turn.md"]
    assert "+from the turn" in diff and "\\ No newline at end of file" in diff
    history = hango("messages", "--session", session, "--json")
    assert len(json.loads(history.out)["items"]) == 22


def test_json_output_parses(hango, demo_session):
    session = demo_session["session_id"]
    assert inspect_json(hango, session)["session_id"] == session
    request = json.loads(hango("context", "show", "--session", session, "--request").out)
    assert [m["role"] for m in request["messages"]][:2] == ["user", "assistant"]
    full = json.loads(hango("context", "show", "--session", session, "--full", "tool:ls", "--json").out)
    assert full["id"] == "tool:ls" and "input_schema" in full["content"]
    excluded = json.loads(hango("context", "exclude", "--session", session, "message:2..3", "--json").out)
    assert excluded["excluded"] == ["message:2", "message:3"]
    assert excluded["saved"]["session"]["added"] == []
    tried = json.loads(hango("context", "try", "--session", session, "--include", "message:2", "--json").out)
    # the try re-answers the last user turn: the demo's trailing assistant answer is left out, and said
    assert (tried["stop_reason"], tried["excluded"], tried["added"]) == ("end_turn", ["message:22"], [])


def test_an_unreachable_server_exits_3(hango, monkeypatch):
    monkeypatch.setenv("HANGO_API_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("HANGO_API_KEY", "hgo_000000000000_nope")
    for argv in (["show"], ["exclude", "message:2"], ["try", "--message", "hi"]):
        result = hango("context", argv[0], "--session", "00000000-0000-0000-0000-000000000000", *argv[1:])
        assert (result.code, result.out) == (3, "")
        assert "cannot reach the hango server" in result.err and "Traceback" not in result.err


def test_usage_errors_exit_2(hango, monkeypatch, capsys):
    monkeypatch.delenv("HANGO_API_KEY", raising=False)
    assert hango("context", "show", "--session", "00000000-0000-0000-0000-000000000000").code == 2
    with pytest.raises(SystemExit) as usage:
        hango("context", "replace", "--session", "00000000-0000-0000-0000-000000000000", "message:1")
    assert usage.value.code == 2
    assert "one of the arguments --text --file is required" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly(demo_session):
    """``hango context show | head -1``: no traceback when the reader goes away."""
    argv = [sys.executable, "-m", "hango", "context", "show", "--session", demo_session["session_id"]]
    with subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        child.stdout.close()
        err = child.stderr.read().decode()
        code = child.wait(timeout=60)
    assert (code, err) == (1, "")


def test_show_request_prints_the_agents_provider_wire_format(hango, demo_session):
    session, agent = demo_session["session_id"], demo_session["agent_id"]
    neutral = json.loads(hango("context", "show", "--session", session, "--request").out)
    url = f"{os.environ['HANGO_API_URL']}/v1/agents/{agent}"
    headers = {"Authorization": f"Bearer {demo_session['owner_key']}"}
    requests.patch(
        url, json={"model": "anthropic/claude-test"}, headers=headers, timeout=10
    ).raise_for_status()

    wire = json.loads(hango("context", "show", "--session", session, "--request").out)

    assert isinstance(neutral["system"][0]["cache_control"], bool)  # offline: the neutral request
    assert wire["model"] == "claude-test" and wire["max_tokens"] == neutral["max_tokens"]
    assert all(b["type"] == "text" for b in wire["system"])
    assert [b["cache_control"] for b in wire["system"] if "cache_control" in b] == [{"type": "ephemeral"}]


def test_cli_lists_parts_in_part_order(hango, demo_session):
    session = demo_session["session_id"]

    result = hango("context", "exclude", "--session", session, "message:20", "message:4", "message:10")

    assert result.code == 0
    assert result.out.splitlines()[0] == "excluded message:4, message:10, message:20"


def test_exclude_tool_ls_prints_the_scope_once(hango, demo_session):
    result = hango("context", "exclude", "--session", demo_session["session_id"], "tool:ls")

    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "excluded tool:ls",
        "saved for the agent: applies to 1 session of Demo agent",
    ]
    assert "applies to" not in result.err
