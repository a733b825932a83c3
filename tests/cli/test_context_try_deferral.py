"""``hango context try --turn --defer/--undefer``: the try's deferral sent, its searches said, and the A/B
of the try's first call beside the session's next call as it stands; synthetic results, then one live
turn against a real gunicorn server."""

from __future__ import annotations

import json

import pytest

from hango.cli.context_turn import AS_IS, render_turn
from tests.cli.test_context_cli_deferred import session  # noqa: F401 (a fixture)

RESULT = {
    "answer": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    "stop_reason": "end_turn",
    "calls": [
        {
            "id": "c1",
            "usage": {"prompt_tokens": 1200},
            "cost": {"usd": 0.0051, "simulated_at": None},
            "tools_sent": 2,  # the server's figures: the CLI shows them, it counts and adds nothing
            "input_usd": 0.0036,
            "parts": [
                {"kind": "system", "cost_usd": 0.0006},
                {"kind": "tool", "cost_usd": 0.0005},
                {"kind": "tool", "cost_usd": 0.0005},
                {"kind": "message", "cost_usd": 0.002},
            ],
        }
    ],
    "tools": [{"name": "tool_search"}, {"name": "grep"}],
    "usage": {"input_tokens": 1500, "output_tokens": 40},
    "cost": 0.0051,
    "cost_simulated_at": None,
    "changes": {"files": [], "memory": [], "todos": None},
    "excluded": [],
    "added": [],
    "searches": [
        {"query": "find text in files", "revealed": ["tool:grep"], "called": ["grep"]},
        {"query": "git history", "revealed": ["tool:git/git_log"], "called": []},
        {"query": "nothing like it", "revealed": [], "called": []},
    ],
    "deferral": {"defer": ["tool:grep"], "undefer": ["tool:git/*"]},
}
AS_IS_FIGURES = {"tokens": 1450, "tools": 3, "usd": 0.0044, "simulated_at": None}


def test_the_turn_result_says_each_search_what_it_revealed_and_what_the_turn_called():
    lines = render_turn({"kind": "try", "result": RESULT}, 120)

    assert "deferred this time: tool:grep" in lines and "sent though deferred: tool:git/*" in lines
    assert "searched 'find text in files' → revealed tool:grep; called grep" in lines
    assert "searched 'git history' → revealed tool:git/git_log; called none of them" in lines
    assert "searched 'nothing like it' → revealed nothing" in lines
    assert not any(line.startswith("A/B") for line in lines)  # no next call read: no A/B


def test_the_turn_result_shows_the_try_beside_the_next_call_in_two_columns():
    lines = render_turn({"kind": "try", "result": RESULT, AS_IS: AS_IS_FIGURES}, 120)

    assert lines[-5:] == [
        "A/B:",
        "               next call as is  the try's first call",
        "  tokens sent  1,450            1,200",
        "  tools sent   3                2",
        "  input cost   $0.0044          $0.0036",
    ]


def test_a_try_without_a_call_detail_shows_its_unknown_figures_as_a_dash():
    bare = {**RESULT, "calls": [{"id": None}]}
    lines = render_turn({"kind": "try", "result": bare, AS_IS: AS_IS_FIGURES}, 120)
    assert lines[-3:] == [
        "  tokens sent  1,450            –",
        "  tools sent   3                –",
        "  input cost   $0.0044          –",
    ]


@pytest.mark.server
def test_try_turn_defer_and_undefer_send_the_lists_and_print_the_search_and_the_ab(hango, session: str):  # noqa: F811
    search = '/tool tool_search {"query": "read a file"}'
    argv = ("context", "try", "--session", session, "--turn", "--defer", "tool:read_file")
    result = hango(*argv, "--undefer", "tool:git/*", "--message", f"Look.\n{search}")

    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "deferred this time: tool:read_file" in lines and "sent though deferred: tool:git/*" in lines
    assert any(line.startswith("searched 'read a file' → revealed tool:read_file") for line in lines), lines
    ab = lines[lines.index("A/B:") :]
    assert ab[1].split() == ["next", "call", "as", "is", "the", "try's", "first", "call"]
    assert [row.split()[:-2] for row in ab[2:5]] == [["tokens", "sent"], ["tools", "sent"], ["input", "cost"]]
    assert ab[3].split()[-2:] == ["3", "4"]  # read_file, git_log (revealed), tool_search; the git server's
    assert ab[5] == "  (simulated at anthropic/claude-sonnet-4-6 prices)"  # three and tool_search

    answered = hango(*argv, "--undefer", "tool:git/*", "--json")
    assert answered.code == 0, answered.err
    turn = json.loads(answered.out)
    assert turn["result"]["deferral"] == {"defer": ["tool:read_file"], "undefer": ["tool:git/*"]}
    assert AS_IS not in turn  # --json prints the server's answer only
