"""How ``hango context`` prints: the grouped parts table, one part in full, and a try answer.

Every piece of text from the server goes through ``visible`` first, so a preview
or an answer can neither break the table's lines nor send escape sequences to
the terminal. Colour only on a terminal, and never with ``NO_COLOR``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
import unicodedata
from dataclasses import dataclass
from typing import Any, TextIO

from hango.cli.money import next_call_line, priced

GROUPS = (("system", "SYSTEM"), ("tools", "TOOLS"), ("messages", "MESSAGES"))
# A group longer than this shows its largest parts and a count of the rest (``--all``: every part).
GROUP_ROWS = 8
MIN_PREVIEW = 8
GAP = "  "
ELLIPSIS = "…"
# C0/C1 controls, DEL, line/paragraph separators and bidi overrides: any of them can reshape a line.
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
BADGES = (
    ("replaced", "replaced: sent with its replacement text"),
    ("paired", "paired: excluded as a tool_use/tool_result companion"),
    ("stale", "stale: an override whose part is gone"),
    ("left-out", "left-out=PART: not sent because PART is left out (the server says so)"),
    ("cached", "cached: in the cached prompt prefix, changing it misses the cache"),
    ("deferred", "deferred: not sent until tool_search reveals it (its tokens saved each call)"),
    ("revealed", "revealed #SEQ: revealed by the tool_search of answer #SEQ, sent from then on"),
)
SAVED_FOR_AGENT = "saved for the agent: {}"  # after a change of the agent's set: what its scope is
COLOURS = {
    "heading": "1",
    "off": "2",
    "cached": "36",
    "paired": "33",
    "stale": "31",
    "replaced": "35",
    "left-out": "33",
    "deferred": "34",
    "revealed": "32",
}


@dataclass(frozen=True)
class Style:
    """Whether to colour, decided once per command."""

    colour: bool

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        """Colour on a terminal unless ``NO_COLOR`` is set (https://no-color.org) or ``TERM=dumb``."""
        wanted = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        return cls(wanted and stream.isatty())

    def paint(self, text: str, role: str) -> str:
        """``text`` in ``role``'s colour, or unchanged."""
        return f"\x1b[{COLOURS[role]}m{text}\x1b[0m" if self.colour and text else text


def visible(text: str, keep_lines: bool = False) -> str:
    """Control characters as escapes (``\\n``, ``\\x1b``); with ``keep_lines``, newlines and tabs stay."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if keep_lines and char in "\n\t":
            return char
        return _ESCAPES.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")

    return _INVISIBLE.sub(escape, text)


def char_width(char: str) -> int:
    """Terminal columns of one character: 0 for combining marks, 2 for wide East Asian ones."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def width_of(text: str) -> int:
    """Terminal columns of a one-line string."""
    return sum(map(char_width, text))


def fit(text: str, width: int) -> str:
    """``text`` in exactly ``width`` columns: cut on a character boundary (ending in …) or padded."""
    if width_of(text) > width:
        kept, used = [], 0
        for char in text:
            if used + char_width(char) > width - 1:
                break
            kept.append(char)
            used += char_width(char)
        text = "".join(kept) + ELLIPSIS
    return text + " " * (width - width_of(text))


def badges_of(part: dict[str, Any]) -> list[str]:
    """The part's flags as short words."""
    flags = {
        "replaced": part.get("override") == "replace",
        "paired": part.get("paired"),
        "stale": part.get("stale"),
        "left-out": part.get("excluded_by") and not part.get("paired"),
        "cached": part.get("cached_prefix"),
        "deferred": part.get("deferred"),
        "revealed": part.get("revealed_at") is not None,
    }
    return [name for name, _ in BADGES if flags[name]]


def badge_text(part: dict[str, Any], name: str) -> str:
    """A badge as printed: ``left-out`` names the part that left this one out, ``revealed`` the answer
    whose search revealed it."""
    if name == "left-out":
        return f"left-out={visible(part['excluded_by'])}"
    return f"revealed #{part['revealed_at']}" if name == "revealed" else name


@dataclass(frozen=True)
class Columns:
    """Column widths: the id per group, tokens and badges shared so numbers line up; the preview takes the rest."""

    ident: int
    preview: int
    tokens: int
    badges: int


def columns_for(parts: list[dict[str, Any]], tokens: int, badges: int, width: int) -> Columns:
    """Widths for one group at a terminal ``width``; the preview takes what is left."""
    ident = max((width_of(visible(p["id"])) for p in parts), default=0)
    fixed = len("[x] ") + ident + len(GAP) + tokens + (len(GAP) + badges if badges else 0)
    preview = width - fixed - len(GAP)
    return Columns(ident, preview if preview >= MIN_PREVIEW else 0, tokens, badges)


def detail_of(part: dict[str, Any]) -> str:
    """What the row says besides its id: a message's role and blocks, then the preview.

    The server's label repeats the id (``agent``, ``read_file``, ``#7``); of a
    message's label (``#7 assistant · tool_use read_file``) only the words after
    the seq are new.
    """
    preview = visible(part["preview"])
    if part["kind"] != "message":
        return preview
    what = visible(part["label"]).partition(" ")[2]
    return f"{what}: {preview}" if what and preview else what or preview


def part_line(part: dict[str, Any], cols: Columns, style: Style) -> str:
    """One row: checkbox, id, preview, tokens, badges."""
    cells = ["[x]" if part["included"] else "[ ]", fit(visible(part["id"]), cols.ident)]
    if cols.preview:
        cells.append(fit(detail_of(part), cols.preview))
    cells.append(str(part["tokens"]).rjust(cols.tokens))
    line = " ".join(cells[:2]) + GAP + GAP.join(cells[2:])
    line = line if part["included"] else style.paint(line, "off")
    badges = " ".join(style.paint(badge_text(part, name), name) for name in badges_of(part))
    return f"{line}{GAP}{badges}" if badges else line


def share(tokens: int, window: int) -> str:
    """``tokens`` as a whole percentage of the context window."""
    return f"{round(100 * tokens / window) if window else 0}%"


def group_heading(title: str, totals: dict[str, int], count: int, window: int, style: Style) -> str:
    """``SYSTEM  6 parts  385 → 385 tokens  5% of the window``: the group's totals and its share."""
    noun = "part" if count == 1 else "parts"
    return (
        f"{style.paint(title, 'heading')}  {count} {noun}  {totals['before']} → {totals['after']} tokens"
        f"  {share(totals['after'], window)} of the window"
    )


def summary_lines(snapshot: dict[str, Any], width: int, style: Style) -> list[str]:
    """The header: whose request, the totals before and after, the window and the request badges."""
    counted = "counted by the provider" if snapshot["counted"] == "provider" else "estimate"
    badges = [style.paint(counted, "heading")]
    if snapshot["would_compact"]:
        badges.append(style.paint("would compact", "stale"))
    window = snapshot["context_window"]
    model = visible(snapshot["model"])
    lines = [
        f"session {snapshot['session_id']}",
        fit(f"agent {snapshot['agent_id']} · model {model}", width).rstrip(),
        f"total {snapshot['total_before']} → {snapshot['total_after']} tokens"
        f" ({share(snapshot['total_after'], window)})  [{'] ['.join(badges)}]",
        f"window {window} · compacts at {snapshot['compact_at']} · free {snapshot['free']}",
    ]
    lines += wrap(next_call_line(snapshot), width)
    last = snapshot.get("last_call")
    if last:
        reported = "-" if last.get("reported") is None else last["reported"]
        lines.append(f"last call: estimated {last['estimated']}, reported by the provider {reported}")
        lines.append(f"  of run {last['run_id']}")  # the last call of a run that ended keeping its turn
    if snapshot.get("totals_unit") == "provider_scaled":
        lines.append("group totals: the estimates scaled to the provider's count")
    calibration = snapshot.get("calibration")
    if calibration:
        calls = f"{calibration['calls']} call" + ("s" if calibration["calls"] > 1 else "")
        total = snapshot["calibrated_total"]  # None beside the provider's own count: the ratio alone
        figure = "calibration" if total is None else f"calibrated total {total} tokens"
        lines.append(f"{figure} (× {calibration['ratio']}, from {calls})")
    return lines


@dataclass(frozen=True)
class Choice:
    """Which rows ``show`` prints: every part, the ``top`` largest sent overall, or a long group's largest.

    ``order`` is ``order`` (as sent) or ``tokens`` (largest first, within each group).
    """

    every: bool = False
    top: int | None = None
    order: str = "order"

    def rows(self, parts: list[dict[str, Any]], chosen: set[str]) -> list[dict[str, Any]]:
        """The group's rows to print, in the chosen order."""
        shown = parts if self.every else [p for p in parts if p["id"] in chosen]
        return sorted(shown, key=lambda p: -p["tokens"]) if self.order == "tokens" else shown

    def chosen(self, groups: list[list[dict[str, Any]]]) -> set[str]:
        """The ids to print when not every part is: the top N overall, or the shape of the request.

        The shape: each long group's largest parts, and every user turn and the summary, so the
        conversation reads in order however long it is.
        """
        if self.top is not None:
            sent = [p for parts in groups for p in parts if p["included"]]
            return {p["id"] for p in largest(sent, self.top)}
        turns = {p["id"] for parts in groups for p in parts if is_turn(p)}
        return turns | {p["id"] for parts in groups for p in largest(parts, GROUP_ROWS)}


def is_turn(part: dict[str, Any]) -> bool:
    """A turn of the conversation: the summary, or a user message that answers no tool call (hango stores
    a tool call's results in a message of their own), read from the part's ``kind``, ``role`` and
    ``tools`` (the tools it defines, calls or answers), never from its label."""
    return part["kind"] == "summary" or (
        part["kind"] == "message" and part.get("role") == "user" and not part.get("tools")
    )


def largest(parts: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The ``count`` parts with the most tokens (the earlier one first on a tie)."""
    return sorted(parts, key=lambda p: -p["tokens"])[:count]


def rest_line(parts: list[dict[str, Any]], shown: list[dict[str, Any]]) -> list[str]:
    """``… 14 more parts, 212 tokens, 2 excluded, 3 deferred (--all shows every part)``: every part not
    printed.

    The rows and this line add up to the group's count; the tokens are the sent ones' (an excluded
    or a deferred part adds nothing to the request).
    """
    ids = {p["id"] for p in shown}
    rest = [p for p in parts if p["id"] not in ids]
    if not rest:
        return []
    noun = "part" if len(rest) == 1 else "parts"
    tokens = sum(p["tokens"] for p in rest if p["included"])
    deferred = sum(1 for p in rest if p.get("deferred"))
    excluded = sum(1 for p in rest if not p["included"]) - deferred
    left_out = (f", {excluded} excluded" if excluded else "") + (f", {deferred} deferred" if deferred else "")
    return [f"{ELLIPSIS} {len(rest)} more {noun}, {tokens} tokens{left_out} (--all shows every part)"]


Section = tuple[
    dict[str, Any] | None, list[dict[str, Any]]
]  # a source of tools (None: no heading), its parts


def sections_of(snapshot: dict[str, Any], group: str) -> list[Section]:
    """A group's parts in sections: the tools by source (built-in, each MCP server) once a server gives
    any, every other group (and tools from built-ins only) as one section without a heading."""
    sources = (snapshot.get("tool_groups") or []) if group == "tools" else []
    if not any(source["server"] is not None for source in sources):
        return [(None, snapshot[group])]
    return [(s, [p for p in snapshot[group] if p.get("server") == s["server"]]) for s in sources]


def source_heading(source: dict[str, Any], width: int, style: Style) -> str:
    """``server git  12 tools  4380 → 0 tokens  excluded as tool:git/*``: a source of tools and its subtotal
    (the estimates of its tools, sent or not, then those sent), then what deferring its tools saves."""
    noun = "tool" if source["tools"] == 1 else "tools"
    line = f"{visible(source['label'])}  {source['tools']} {noun}  {source['tokens_before']} → {source['tokens']} tokens"
    if source["override"] == "exclude":
        line += f"  excluded as {visible(source['part'])}"
    if source["stale"]:
        line += "  stale: it gives no tool now"
    line += deferred_words(source.get("deferred") or 0, source.get("deferred_tokens") or 0, "  ")
    return style.paint(fit(line, width).rstrip(), "heading")


def deferred_words(count: int, tokens: int, before: str = "") -> str:
    """``3 deferred (1234 tokens saved)`` after ``before``, or nothing when none is deferred."""
    return f"{before}{count} deferred ({tokens} tokens saved)" if count else ""


def deferred_line(snapshot: dict[str, Any], width: int) -> list[str]:
    """Under the TOOLS heading, what every source's deferred tools save each call (none deferred: nothing)."""
    sources = snapshot.get("tool_groups") or []
    count, tokens = (sum(s.get(key) or 0 for s in sources) for key in ("deferred", "deferred_tokens"))
    words = deferred_words(count, tokens)
    return [fit(f"{words}: sent once tool_search reveals them", width).rstrip()] if words else []


def render_snapshot(
    snapshot: dict[str, Any], width: int, style: Style, choice: Choice = Choice()
) -> list[str]:
    """The whole ``hango context show`` table as lines, at most ``width`` columns wide."""
    sections = {group: sections_of(snapshot, group) for group, _ in GROUPS}
    every = [p for group, _ in GROUPS for p in snapshot[group]]
    tokens = max((len(str(p["tokens"])) for p in every), default=1)
    badges = max((len(" ".join(badge_text(p, n) for n in badges_of(p))) for p in every), default=0)
    chosen = choice.chosen([parts for group, _ in GROUPS for _, parts in sections[group]])
    printed: list[dict[str, Any]] = []
    lines = summary_lines(snapshot, width, style)
    for group, title in GROUPS:
        parts = snapshot[group]
        heading = group_heading(
            title, snapshot["totals"][group], len(parts), snapshot["context_window"], style
        )
        lines += ["", heading, *(deferred_line(snapshot, width) if group == "tools" else [])]
        for source, members in sections[group]:
            shown = choice.rows(members, chosen)
            cols = columns_for(shown, tokens, badges, width)
            head = [] if source is None else [source_heading(source, width, style)]
            lines += [*head, *(part_line(p, cols, style) for p in shown), *rest_line(members, shown)]
            printed += shown
    used = {name for p in printed for name in badges_of(p)}
    legend = [text for name, text in BADGES if name in used]
    return [*lines, "", "[x] sent  [ ] excluded", *legend]


def render_full(full: dict[str, Any]) -> list[str]:
    """One part's whole content, then its replacement when it has one."""
    content = full["content"]
    text = content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False)
    lines = [f"{full['id']} ({full['kind']})", "", visible(text, keep_lines=True)]
    if full.get("replacement") is not None:
        lines += [
            "",
            "replaced by (this is what is sent):",
            "",
            visible(full["replacement"], keep_lines=True),
        ]
    return lines


def render_try(result: dict[str, Any], width: int) -> list[str]:
    """A try answer: its text, stop reason, tool calls (not executed), usage and what was left out."""
    blocks = result["message"]["content"]
    texts = [visible(b["text"], keep_lines=True) for b in blocks if b.get("type") == "text"]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    lines = [f"answer from {visible(result['model'])} ({result['duration_ms']} ms):"]
    said = [wrapped for text in texts for line in text.splitlines() for wrapped in wrap(line, width, "  ")]
    lines += said or ["  (no text)"]
    lines.append(f"stop reason: {visible(str(result['stop_reason']))}")
    if calls:
        lines.append("tool calls (not executed):")
        args = (json.dumps(c.get("input"), ensure_ascii=False) for c in calls)
        for call, arg in zip(calls, args, strict=True):
            lines += wrap(f"{visible(call['name'])} {visible(arg)}", width, "  ")
    usage = result["usage"]
    lines += wrap(
        f"usage: input {usage.get('input_tokens', 0)} · output {usage.get('output_tokens', 0)} · "
        f"cache read {usage.get('cache_read_tokens', 0)} · cache write {usage.get('cache_write_tokens', 0)}",
        width,
    )
    lines += wrap(f"cost {priced(result['cost']['usd'], result['cost']['simulated_at'])}", width)
    if result["excluded"]:
        lines += wrap(f"left out: {', '.join(result['excluded'])}", width)
    if result["added"]:
        lines += wrap(f"of which tool pair companions: {', '.join(result['added'])}", width, "  ")
    return lines


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS`` when set, 80 when not a terminal)."""
    return shutil.get_terminal_size().columns


def wrap(line: str, width: int, indent: str = "") -> list[str]:
    """One line of text as lines of at most ``width`` columns, each after ``indent``; long words are cut.

    Hyphens are no break points: an id (a call's UUID) breaks where no one would look for it, and
    textwrap breaks a hyphen only between some characters, so where it broke depended on the id.
    """
    lines = textwrap.wrap(
        line, width, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False
    )
    return lines or [indent]
