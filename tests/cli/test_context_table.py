"""The pieces of the ``hango context show`` table that need no server: escapes, widths, colour."""

from __future__ import annotations

import io
import re

import pytest

from hango.cli.context_table import Choice, Style, fit, render_snapshot, visible, width_of, wrap

PART = {
    "id": "message:1",
    "kind": "message",
    "label": "#1 user · text",
    "preview": "hi\nthere",
    "tokens": 5,
    "included": False,
    "override": "exclude",
    "paired": True,
    "paired_with": [],
    "stale": False,
    "cached_prefix": False,
    "cache_loss_tokens": 0,
}
SNAPSHOT = {
    "session_id": "s",
    "agent_id": "a",
    "model": "offline/echo",
    "counted": "provider",
    "total_before": 5,
    "total_after": 0,
    "totals": {
        g: {"before": 5 if g == "messages" else 0, "after": 0} for g in ("system", "tools", "messages")
    },
    "context_window": 100,
    "compact_at": 80,
    "free": 100,
    "would_compact": False,
    "last_call": None,
    "next_call_cost": {"usd": 0.0012, "simulated_at": None},
    "cache": {"badge": "none", "words": "the provider caches nothing"},
    "system": [],
    "tools": [],
    "messages": [PART],
}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\nb\tc\r", "a\\nb\\tc\\r"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("\x7f\x9b", "\\x7f\\x9b"),
        ("left\u202eright\u2028", "left\\u202eright\\u2028"),
        ("東京 🚀 é", "東京 🚀 é"),
    ],
)
def test_visible_escapes_what_could_reshape_a_line(text, shown):
    assert visible(text) == shown


def test_visible_can_keep_lines_and_tabs():
    assert visible("a\n\tb\x1b", keep_lines=True) == "a\n\tb\\x1b"


def test_fit_cuts_on_a_character_boundary_by_terminal_columns():
    assert fit("東京タワー", 7) == "東京タ…"
    assert width_of(fit("東京タワー", 6)) == 6 and fit("東京タワー", 6) == "東京… "
    assert fit("e\u0301te", 3) == "e\u0301te"  # a combining accent takes no column
    assert fit("abc", 5) == "abc  "


def test_a_wrapped_line_never_breaks_an_id_at_its_hyphens():
    # textwrap breaks at some hyphens of an id and not others, by the characters around them
    line = "from 3226bb82-d7c8-421f-800c-620920b73a7e to 41808e6d-750e-47bd-bb41-8dcbb78d2411"

    assert wrap(line, 80) == [
        "from 3226bb82-d7c8-421f-800c-620920b73a7e to",
        "  41808e6d-750e-47bd-bb41-8dcbb78d2411",
    ]


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert Style.for_stream(Terminal()).colour
    assert not Style.for_stream(io.StringIO()).colour
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Style.for_stream(Terminal()).colour


def test_colour_changes_no_column():
    plain = render_snapshot(SNAPSHOT, 60, Style(False))
    painted = render_snapshot(SNAPSHOT, 60, Style(True))
    assert painted != plain
    assert [re.sub(r"\x1b\[\d+m", "", line) for line in painted] == plain
    assert plain[12] == "[ ] message:1  user · text: hi\\nthere              5  paired"
    assert len(plain[12]) == 60
    assert plain[2] == "total 5 → 0 tokens (0%)  [counted by the provider]"


def test_the_header_shows_the_calibrated_total_labelled_with_its_ratio_and_calls():
    calibrated = {**SNAPSHOT, "calibrated_total": 1043, "calibration": {"ratio": 1.043, "calls": 5}}

    lines = render_snapshot(calibrated, 60, Style(False))

    assert "calibrated total 1043 tokens (× 1.043, from 5 calls)" in lines
    assert not any(line.startswith("calibrated") for line in render_snapshot(SNAPSHOT, 60, Style(False)))


def _message(seq: int, role: str, tokens: int, included: bool = True) -> dict:
    blocks = "text" if role == "user" and seq % 2 else "tool_result ls"
    return {
        **PART,
        "id": f"message:{seq}",
        "label": f"#{seq} {role} · {blocks}",
        "role": role,
        "tokens": tokens,
        "included": included,
        "override": None if included else "exclude",
        "paired": False,
        "tools": [] if blocks == "text" else ["ls"],  # what it answers: a tool result names its tool
    }


def _shown_ids(lines: list[str]) -> list[str]:
    rows = [line.split()[1] for line in lines if line.startswith(("[x]", "[ ]"))]
    return [r for r in rows if r.startswith("message:")]


def test_beside_the_providers_count_the_header_shows_the_calibration_ratio_alone():
    counted = {
        **SNAPSHOT,
        "counted": "provider",
        "calibrated_total": None,
        "calibration": {"ratio": 1.0066, "calls": 1},
    }

    lines = render_snapshot(counted, 60, Style(False))

    assert "calibration (× 1.0066, from 1 call)" in lines
    assert not any("None" in line for line in lines)


def test_show_sort_tokens_top_5_rows_and_more_agree_with_each_groups_count_and_show_sent_parts():
    messages = [_message(n, "user" if n % 2 else "assistant", 100 - n, included=n > 10) for n in range(1, 31)]
    snapshot = {**SNAPSHOT, "messages": messages}

    lines = render_snapshot(snapshot, 100, Style(colour=False), Choice(top=5, order="tokens"))

    shown = _shown_ids(lines)
    assert shown == [f"message:{n}" for n in range(11, 16)]  # the largest sent ones, not excluded 1-10
    sent_rest = [m for m in messages if m["included"] and m["id"] not in shown]
    more = (
        f"… 25 more parts, {sum(m['tokens'] for m in sent_rest)} tokens, 10 excluded (--all shows every part)"
    )
    assert more in lines and "MESSAGES  30 parts" in "\n".join(lines)
    for heading, count in ((line, int(line.split()[1])) for line in lines if line.endswith("of the window")):
        block = lines[lines.index(heading) + 1 :]
        block = block[: block.index("")] if "" in block else block
        rows = sum(1 for line in block if line.startswith(("[x]", "[ ]")))
        rest = [int(line.split()[1]) for line in block if line.startswith("…")]
        assert rows + sum(rest) == count, heading


def test_show_by_default_shows_the_shape_of_the_conversation_every_user_turn_at_least():
    messages = [_message(n, "user" if n % 2 else "assistant", 1000 - n) for n in range(1, 41)]
    snapshot = {**SNAPSHOT, "messages": messages}

    shown = _shown_ids(render_snapshot(snapshot, 100, Style(colour=False)))

    turns = [m["id"] for m in messages if m["role"] == "user" and not m["tools"]]
    assert turns
    assert set(turns) <= set(shown)
    assert shown == [m["id"] for m in messages if m["id"] in shown]  # in the order they are sent
