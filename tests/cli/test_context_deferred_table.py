"""Deferred and revealed tools in the ``hango context show`` table, on a synthetic inspect answer."""

from __future__ import annotations

import re

from hango.cli.context_table import Choice, Style, render_snapshot, width_of
from tests.cli.test_context_table import SNAPSHOT


def _tool(ident: str, tokens: int, server: str | None, **state) -> dict:
    included = not state.get("deferred") and state.get("included", True)
    return {
        "id": ident,
        "kind": "tool",
        "label": ident.removeprefix("tool:"),
        "preview": "does a thing",
        "tokens": tokens,
        "included": included,
        "override": None,
        "paired": False,
        "stale": False,
        "cached_prefix": False,
        "cache_loss_tokens": 0,
        "server": server,
        "deferred": state.get("deferred", False),
        "revealed_at": state.get("revealed_at"),
    }


def _group(server: str | None, tools: list[dict]) -> dict:
    deferred = [t for t in tools if t["deferred"]]
    sent = [t for t in tools if t["included"]]
    return {
        "server": server,
        "label": "built-in" if server is None else f"server {server}",
        "part": None if server is None else f"tool:{server}/*",
        "tools": len(tools),
        "sent": len(sent),
        "tokens": sum(t["tokens"] for t in sent),
        "tokens_before": sum(t["tokens"] for t in sent),
        "override": None,
        "stale": False,
        "unavailable": [],
        "deferred": len(deferred),
        "deferred_tokens": sum(t["tokens"] for t in deferred),
    }


BUILT_IN = [
    _tool("tool:read_file", 310, None),
    _tool("tool:grep", 420, None, deferred=True),
    _tool("tool:tool_search", 150, None),
]
GIT = [
    _tool("tool:git/git_log", 1234, "git", deferred=True),
    _tool("tool:git/git_diff", 900, "git", deferred=True),
    _tool("tool:git/git_status", 640, "git", revealed_at=7),
]
DEFERRING = {
    **SNAPSHOT,
    "tools": [*BUILT_IN, *GIT],
    "tool_groups": [_group(None, BUILT_IN), _group("git", GIT)],
}


def _row(lines: list[str], ident: str) -> str:
    return next(line for line in lines if line[4:].startswith(ident + " "))


def test_a_deferred_tool_row_shows_a_deferred_badge_unchecked_with_its_tokens_as_saved():
    lines = render_snapshot(DEFERRING, 100, Style(False), Choice(every=True))

    for ident, tokens in (("tool:grep", 420), ("tool:git/git_log", 1234), ("tool:git/git_diff", 900)):
        row = _row(lines, ident)
        assert row.startswith("[ ] ") and re.search(rf" {tokens}  deferred\s*$", row), row
    assert "deferred: not sent until tool_search reveals it (its tokens saved each call)" in lines
    assert max(map(width_of, lines)) <= 100


def test_a_revealed_tool_row_shows_revealed_and_the_seq_of_the_answer_that_revealed_it():
    lines = render_snapshot(DEFERRING, 100, Style(False), Choice(every=True))

    row = _row(lines, "tool:git/git_status")
    assert row.startswith("[x] ") and row.rstrip().endswith(" 640  revealed #7"), row
    assert "revealed" not in _row(lines, "tool:read_file") and "deferred" not in _row(lines, "tool:read_file")
    assert any(line.startswith("revealed #SEQ: ") for line in lines)


def test_the_tools_group_and_each_server_heading_show_the_deferred_count_and_tokens_saved():
    lines = render_snapshot(DEFERRING, 100, Style(False), Choice(every=True))

    tools = next(i for i, line in enumerate(lines) if line.startswith("TOOLS"))
    assert lines[tools + 1] == "3 deferred (2554 tokens saved): sent once tool_search reveals them"
    assert "built-in  3 tools  460 → 460 tokens  1 deferred (420 tokens saved)" in lines
    assert "server git  3 tools  640 → 640 tokens  2 deferred (2134 tokens saved)" in lines


def test_nothing_deferred_shows_no_deferred_line_heading_words_or_badge():
    plain = [{**t, "deferred": False, "included": True, "revealed_at": None} for t in [*BUILT_IN, *GIT]]
    snapshot = {
        **DEFERRING,
        "tools": plain,
        "tool_groups": [_group(None, plain[:3]), _group("git", plain[3:])],
    }

    text = "\n".join(render_snapshot(snapshot, 100, Style(False), Choice(every=True)))

    assert "deferred" not in text and "revealed" not in text


def test_rows_left_out_of_a_long_group_count_deferred_apart_from_excluded():
    lines = render_snapshot(DEFERRING, 100, Style(False), Choice(top=1))

    assert "… 3 more parts, 460 tokens, 1 deferred (--all shows every part)" in lines  # the built-ins
    assert "… 2 more parts, 0 tokens, 2 deferred (--all shows every part)" in lines  # git: status is shown


def test_colour_paints_the_deferred_and_revealed_badges_and_changes_no_column():
    plain = render_snapshot(DEFERRING, 100, Style(False), Choice(every=True))
    painted = render_snapshot(DEFERRING, 100, Style(True), Choice(every=True))

    assert "\x1b[34mdeferred\x1b[0m" in "\n".join(painted)
    assert "\x1b[32mrevealed #7\x1b[0m" in "\n".join(painted)
    assert [re.sub(r"\x1b\[\d+m", "", line) for line in painted] == plain
