"""Part ids: the stable names of the pieces of an assembled request.

- ``system:<contributor>`` for a contributor's block (``system:agent``,
  ``system:filesystem``, ``system:memory:/memories/AGENTS.md`` …);
- ``tool:<name>`` for one built-in tool definition, ``tool:<server>/<tool>`` for one tool of an
  attached MCP server, its name as the server lists it (sent to the model as ``<server>__<tool>``:
  ``tool_part`` and ``tool_name`` turn one into the other; a server's name has no ``__`` and does
  not end in ``_``, so the first ``__`` of a sent name ends the server's). When ``<server>__<tool>``
  is a name a provider cannot take (past 64 characters, or a character other than letters, digits,
  ``_`` and ``-``), the model knows the tool by a substitute (``server_tool_name``) and its
  definition carries its part (``part_of``). And ``tool:<server>/*`` for every tool of that server: an
  override target only, never sent, whose exclusion leaves out whatever tools the server's stored list
  holds at each call (a tool the list gains later included);
- ``message:<seq>`` for one stored message, ``summary`` for the compaction summary;
- ``scratch:<try>:<seq>`` for a message only a try sent (its new turn, a whole-turn try's answers and
  tool results): ``<try>`` is 8 hex digits drawn once per try, ``<seq>`` the place the message takes
  after the history. No stored message ever has such an id, and a try takes no seq from the session,
  so ``message:<seq>`` names one stored message forever and the history keeps no gap a try made.
  Scratch ids are ledger parts only: no override names one (``kind_of`` refuses them).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import regex

from hango.messages import Block, Message, ToolDef
from hango.seqs import message_seq, parse_seq

PartID = str

SUMMARY = "summary"
SCRATCH_PART_KIND = "scratch"
# The summarizer's one message: a transcript of the messages it folds (a ledger part, never overridden).
TRANSCRIPT = "transcript"
PREVIEW_CHARS = 200
_CONTRIBUTOR = re.compile(r"^[a-z][a-z_]*$")
_TOOL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# an MCP tool's part: the server's name (the catalog's NAME, its length exact) and the tool's name
_SERVER_TOOL_PATTERN = "[a-z0-9][a-z0-9_-]{0,31}/[A-Za-z0-9_.-]{1,128}"  # the MCP spec's tool names
MODEL_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a tool name every provider takes
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_-]")
SUBSTITUTE_HASH = 8  # hex digits of the tool name's SHA-256 that end a substitute
_SERVER_TOOL = re.compile(f"^{_SERVER_TOOL_PATTERN}$")
_SERVER_PATTERN = "[a-z0-9][a-z0-9_-]{0,31}/\\*"
_SERVER = re.compile(f"^{_SERVER_PATTERN}$")
EVERY_TOOL = "*"  # ``tool:<server>/*``: every tool of the server
SERVER_SEPARATOR = "__"
_MEMORY_PATH = re.compile(r"^/memories/[^\x00-\x1f]{1,490}$")
_GRAPHEMES = regex.compile(r"\X")
MAX_PART_CHARS = len("system:memory:/memories/") + 490
_KIND_ORDER = {"system": 0, "tool": 1, "summary": 2, "message": 3, SCRATCH_PART_KIND: 4}
# The order system blocks are sent in (memory files by path within "memory").
_SYSTEM_ORDER = {
    name: i for i, name in enumerate(("agent", "filesystem", "subagent", "skills", "memory", "todo"))
}
AGENT_KINDS = frozenset({"system", "tool"})  # overridden on the agent's route
SESSION_KINDS = frozenset({"message", "summary"})  # overridden on the session's route


class MalformedPart(ValueError):
    """A part id that no part could ever have."""


@dataclass(frozen=True)
class SourcedBlock:
    """A system block with the part id of its contributor; never serialized to a provider."""

    part: PartID
    block: Block


@dataclass(frozen=True)
class SourcedMessage:
    """A history message with its part id (``message:<seq>`` or ``summary``)."""

    part: PartID
    message: Message


def system_part(contributor: str) -> PartID:
    return f"system:{contributor}"


def memory_part(path: str) -> PartID:
    return f"system:memory:{path}"


def tool_part(name: str) -> PartID:
    """The part of the tool the model knows as ``name``: ``tool:<name>``, or ``tool:<server>/<tool>``
    for an MCP server's ``<server>__<tool>``."""
    server, sep, tool = name.partition(SERVER_SEPARATOR)
    return f"tool:{server}/{tool}" if sep and server else f"tool:{name}"


def server_tool_name(server: str, tool: str) -> str:
    """The name the model knows an MCP server's tool by: ``<server>__<tool>``, or when a provider cannot
    take that, the stable substitute ``<server>__<tool, cut to fit, other characters as _>_<hash>``
    (``<hash>``: the first 8 hex digits of the SHA-256 of the tool's name), 64 characters at most."""
    name = f"{server}{SERVER_SEPARATOR}{tool}"
    if MODEL_TOOL_NAME.match(name):
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:SUBSTITUTE_HASH]
    room = 64 - len(server) - len(SERVER_SEPARATOR) - 1 - SUBSTITUTE_HASH
    return f"{server}{SERVER_SEPARATOR}{_NOT_IN_NAMES.sub('_', tool)[:room]}_{digest}"


def server_tool_part(server: str, tool: str) -> PartID:
    """The part of an MCP server's tool: ``tool:<server>/<tool>``, the tool's name as the server lists it."""
    return f"tool:{server}/{tool}"


def part_of(tool: ToolDef) -> PartID:
    """The part of a tool definition: the one it carries (an MCP tool's), else its name's."""
    return tool.part or tool_part(tool.name)


def shown_tool_name(name: str) -> str:
    """How every surface names the tool the model knows as ``name``: ``read_file``, or ``<server>/<tool>``
    for an MCP server's (its part id without ``tool:``); the model's name stays on the wire only."""
    return tool_part(name).removeprefix("tool:")


def tool_name(part: PartID) -> str:
    """The name the model knows the tool of a ``tool:`` part by (``tool_part``'s inverse)."""
    rest = part.removeprefix("tool:")
    server, sep, tool = rest.partition("/")
    return server_tool_name(server, tool) if sep else rest


def tool_server(part: PartID) -> str | None:
    """The MCP server a ``tool:`` part belongs to (its tool's or, ``tool:<server>/*``, all of them), or
    None for a built-in tool."""
    server, sep, _ = part.removeprefix("tool:").partition("/")
    return server if sep else None


def server_part(server: str) -> PartID:
    """The part that stands for every tool of ``server``: ``tool:<server>/*``."""
    return f"tool:{server}/{EVERY_TOOL}"


def is_server_part(part: PartID) -> bool:
    """Whether ``part`` is a whole server's (``tool:<server>/*``), not one tool's."""
    return part.startswith("tool:") and part.endswith(f"/{EVERY_TOOL}")


def covering_parts(part: PartID) -> tuple[PartID, ...]:
    """The override targets that cover ``part``: itself and, for an MCP server's tool, ``tool:<server>/*``
    (the one matcher: what an override leaves out, and what a recorded override explains)."""
    server = tool_server(part) if part.startswith("tool:") and not is_server_part(part) else None
    return (part,) if server is None else (part, server_part(server))


def message_part(seq: int) -> PartID:
    return f"message:{seq}"


def scratch_part(try_id: str, seq: int) -> PartID:
    return f"{SCRATCH_PART_KIND}:{try_id}:{seq}"


def new_try_id() -> str:
    """A try's own id in its scratch parts (``scratch:<try>:<seq>``)."""
    return secrets.token_hex(4)


def is_scratch(part: PartID) -> bool:
    """Whether ``part`` is a message only a try sent."""
    return part.startswith(f"{SCRATCH_PART_KIND}:")


def kind_of(part: PartID) -> str:
    """``system``, ``tool``, ``message`` or ``summary``; raises ``MalformedPart`` for anything else."""
    if part == SUMMARY:
        return "summary"
    kind, sep, rest = part.partition(":")
    if not sep or not _valid(kind, rest):
        raise MalformedPart(part)
    return kind


def _valid(kind: str, rest: str) -> bool:
    if kind == "message":
        return parse_seq(rest) is not None
    if kind == "tool":
        return bool(_TOOL.fullmatch(rest) or _SERVER_TOOL.fullmatch(rest) or _SERVER.fullmatch(rest))
    if kind != "system":
        return False
    if rest.startswith("memory:"):
        path = rest.removeprefix("memory:")
        return bool(_MEMORY_PATH.fullmatch(path)) and ".." not in path.split("/") and "//" not in path
    return bool(_CONTRIBUTOR.fullmatch(rest))


def _part_id_pattern() -> str:
    """The grammar ``kind_of`` accepts, as one regular expression (ECMA-262, Python and Rust alike).

    With ``maxLength`` ``MAX_PART_CHARS`` it is exact: the memory path's 490 characters are the rest.
    """
    seq = "[1-9][0-9]{0,8}|1[0-9]{9}|20[0-9]{8}|21[0-3][0-9]{7}|214[0-6][0-9]{6}|2147[0-3][0-9]{5}"
    seq += "|21474[0-7][0-9]{4}|214748[0-2][0-9]{3}|2147483[0-5][0-9]{2}|21474836[0-3][0-9]|214748364[0-7]"
    char, start = "[^/\\x00-\\x1f]", "[^./\\x00-\\x1f]"
    segment = f"(?:{start}{char}*|\\.{start}{char}*|\\.\\.{char}+|\\.)"
    memory = f"/memories/{segment}(?:/{segment})*/?"
    return f"^(?:summary|message:(?:{seq})|tool:[A-Za-z0-9_-]{{1,64}}|tool:{_SERVER_TOOL_PATTERN}|tool:{_SERVER_PATTERN}|system:[a-z][a-z_]*|system:memory:{memory})$"


PART_ID_PATTERN = _part_id_pattern()
# a ``tool:`` part of ``kind_of``'s grammar: a built-in's, an MCP server's tool's or a whole server's
TOOL_PART_PATTERN = f"^tool:(?:[A-Za-z0-9_-]{{1,64}}|{_SERVER_TOOL_PATTERN}|{_SERVER_PATTERN})$"


def seq_of(part: PartID) -> int:
    """The sequence number of a ``message:<seq>`` part, or the place of a ``scratch:<try>:<seq>`` one."""
    seq = parse_seq(part.rpartition(":")[2])
    if seq is None:
        raise MalformedPart(part)
    return seq


def target_of(part: PartID) -> str:
    """Which stored set overrides ``part``: ``agent`` (system and tool parts) or ``session`` (the rest)."""
    return "agent" if part.partition(":")[0] in AGENT_KINDS else "session"


def part_key(part: PartID) -> tuple[int, int, str]:
    """The sort key of part order, the order of the request: system blocks as they are sent, tools by
    name, the summary, then messages by seq (``message:2`` before ``message:10``)."""
    kind, _, rest = part.partition(":") if part != SUMMARY else (SUMMARY, "", "")
    if kind == "message":
        rank = message_seq(part) or 0
    elif kind == SCRATCH_PART_KIND:
        rank = seq_of(part)
    elif kind == "system":
        rank = _SYSTEM_ORDER.get(rest.partition(":")[0], len(_SYSTEM_ORDER))
    else:
        rank = 0
    return _KIND_ORDER.get(kind, len(_KIND_ORDER)), rank, part


def in_part_order(parts: Iterable[PartID]) -> list[PartID]:
    """``parts`` without repeats, in part order."""
    return sorted(set(parts), key=part_key)


class Preview(NamedTuple):
    """A part's preview (a tuple: one is made for every message of every inspect)."""

    text: str
    truncated: bool


def preview(text: str) -> Preview:
    """The first 200 characters, cut on a grapheme-cluster boundary (a letter with its marks, an emoji
    family stays whole), and whether anything was cut."""
    if len(text) <= PREVIEW_CHARS:
        return Preview(text, False)
    # Between two ASCII characters (CR LF aside) there is always a cluster boundary (UAX #29): the
    # cut is found from the last such boundary before it, so only a few clusters are segmented.
    start = PREVIEW_CHARS
    while start > 0 and not _ascii_boundary(text, start):
        start -= 1
    if start == PREVIEW_CHARS:
        return Preview(text[:PREVIEW_CHARS], True)
    cut = start
    # a slice: the regex module copies the string it searches, and a memory file is long
    for cluster in _GRAPHEMES.finditer(text[start : PREVIEW_CHARS + 64]):
        if start + cluster.end() > PREVIEW_CHARS:
            break
        cut = start + cluster.end()
    return Preview(text[:cut], True)


def _ascii_boundary(text: str, index: int) -> bool:
    before, after = text[index - 1], text[index]
    return before < "\x80" and after < "\x80" and (before, after) != ("\r", "\n")
