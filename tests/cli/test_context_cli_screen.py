"""``hango context show`` on a screen, ``--sort/--top/--all``, ``try --replace``, clear errors, few imports.

Everything runs against a real gunicorn server on the test database with the
seeded demo session (6 system parts, 8 tools, 22 messages).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from hango.cli.context_table import width_of
from hango.config import REPO_ROOT
from tests.cli.test_context_cli import inspect_json, table

pytestmark = pytest.mark.server

SCREEN_ROWS = 50
SERVER_MODULES = (
    "sqlalchemy",
    "flask",
    "flask_smorest",
    "hango.store",
    "hango.agent",
    "hango.app",
    "hango.db",
)


def every_part(snapshot):
    return [p for group in ("system", "tools", "messages") for p in snapshot[group]]


def test_show_fits_80_columns_and_the_header_stays_on_a_50_row_screen(hango, demo_session, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = hango("context", "show", "--session", demo_session["session_id"])
    lines = result.out.splitlines()
    assert result.code == 0 and max(map(width_of, lines)) <= 80
    assert len(lines) < SCREEN_ROWS  # one row left for the prompt: the first line is still on screen
    assert lines[0] == f"session {demo_session['session_id']}"


def test_no_label_column_repeats_the_id(hango, demo_session):
    out = hango("context", "show", "--session", demo_session["session_id"], "--all").out
    rows = [line for line in out.splitlines() if line.startswith("[")]
    assert not [r for r in rows if "system:agent  agent" in r or "tool:ls  ls" in r]
    assert not [r for r in rows if r.split()[1].startswith("message:") and " #" in r]
    assert any(re.match(r"\[x\] message:2 +assistant · text, tool_use write_file: ", r) for r in rows)


def test_long_groups_show_their_largest_parts_and_every_user_turn_and_count_the_rest(hango, demo_session):
    session = demo_session["session_id"]
    snapshot = inspect_json(hango, session)
    groups = table(hango("context", "show", "--session", session).out)
    shown = [r["id"] for r in groups["MESSAGES"][1:]]
    largest = {p["id"] for p in sorted(snapshot["messages"], key=lambda p: -p["tokens"])[:8]}
    turns = {p["id"] for p in snapshot["messages"] if p["role"] == "user" and "text" in p["label"]}
    assert set(shown) == largest | turns
    assert shown == [p["id"] for p in snapshot["messages"] if p["id"] in shown]  # still in order
    rest = [p for p in snapshot["messages"] if p["id"] not in shown]
    tokens = sum(p["tokens"] for p in rest if p["included"])
    excluded = sum(1 for p in rest if not p["included"])
    out = hango("context", "show", "--session", session).out
    left_out = f", {excluded} excluded" if excluded else ""
    assert f"… {len(rest)} more parts, {tokens} tokens{left_out} (--all shows every part)" in out
    every = table(hango("context", "show", "--session", session, "--all").out)
    assert len(every["MESSAGES"]) - 1 == 22 and "more parts" not in out.split("TOOLS")[0]


def test_each_group_has_one_summary_line_with_its_share_of_the_window(hango, demo_session):
    session = demo_session["session_id"]
    snapshot = inspect_json(hango, session)
    out = hango("context", "show", "--session", session).out
    for title, key in (("SYSTEM", "system"), ("TOOLS", "tools"), ("MESSAGES", "messages")):
        totals = snapshot["totals"][key]
        share = round(100 * totals["after"] / snapshot["context_window"])
        count = len(snapshot[key])
        line = (
            f"{title}  {count} parts  {totals['before']} → {totals['after']} tokens  {share}% of the window"
        )
        assert out.splitlines().count(line) == 1


def test_show_sort_tokens_top_n_prints_the_n_largest_parts_largest_first(hango, demo_session):
    session = demo_session["session_id"]
    parts = every_part(inspect_json(hango, session))
    result = hango("context", "show", "--session", session, "--sort", "tokens", "--top", "5")
    groups = table(result.out)
    rows = [r for title in ("SYSTEM", "TOOLS", "MESSAGES") for r in groups[title][1:]]
    sent = [p["tokens"] for p in parts if p["included"]]
    assert sorted(int(r["tokens"]) for r in rows) == sorted(sent)[-5:]
    for title in groups:
        tokens = [int(r["tokens"]) for r in groups[title][1:]]
        assert tokens == sorted(tokens, reverse=True)


def test_a_bad_top_is_a_usage_error(hango, demo_session, capsys):
    with pytest.raises(SystemExit) as usage:
        hango("context", "show", "--session", demo_session["session_id"], "--top", "0")
    assert usage.value.code == 2 and "is not a whole number of at least 1" in capsys.readouterr().err


def test_try_replace_sends_the_part_with_the_new_text_and_stores_nothing(hango, demo_session):
    session = demo_session["session_id"]
    users = [p for p in inspect_json(hango, session)["messages"] if " user · text" in p["label"]]
    last = users[-1]["id"]
    result = hango("context", "try", "--session", session, "--replace", f"{last}=Is the launch on time?")
    assert (result.code, result.err) == (0, "")
    assert 'Last user text: "Is the launch on time?"' in " ".join(result.out.split())
    assert [p["override"] for p in inspect_json(hango, session)["messages"] if p["id"] == last] == [None]
    with pytest.raises(SystemExit) as usage:
        hango("context", "try", "--session", session, "--replace", "no-equals-sign")
    assert usage.value.code == 2


def test_a_session_id_that_is_not_a_uuid_is_a_usage_error(hango, demo_session, capsys):
    with pytest.raises(SystemExit) as usage:
        hango("context", "show", "--session", "planning")
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "'planning' is not a session id (a UUID)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "localhost", "ftp://127.0.0.1", "http://"])
def test_an_api_url_without_a_scheme_is_a_usage_error(hango, monkeypatch, url):
    monkeypatch.setenv("HANGO_API_URL", url)
    monkeypatch.setenv("HANGO_API_KEY", "hgo_000000000000_nope")
    result = hango("context", "show", "--session", "00000000-0000-0000-0000-000000000000")
    assert (result.code, result.out) == (2, "")
    assert "HANGO_API_URL must start with http:// or https://" in result.err and repr(url) in result.err


def test_a_client_command_imports_no_server_code(demo_session):
    """``hango context show`` loads ``requests`` and its own modules, not SQLAlchemy, Flask or the server."""
    probe = (
        "import sys, runpy; sys.argv = ['hango', 'context', 'show', '--session', sys.argv[1]];\n"
        "try: runpy.run_module('hango', run_name='__main__')\n"
        "except SystemExit as done: code = done.code\n"
        "print(__import__('json').dumps([code, sorted(sys.modules)]), file=sys.stderr)"
    )
    child = subprocess.run(
        [sys.executable, "-c", probe, demo_session["session_id"]],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    code, modules = json.loads(child.stderr.splitlines()[-1])
    assert code == 0 and "requests" in modules and "hango.cli.context" in modules
    loaded = [m for m in modules if m.split(".")[0] in SERVER_MODULES or m.startswith(SERVER_MODULES)]
    assert loaded == []
