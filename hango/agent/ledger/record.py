"""The call ledger: what one model call sent, as part ids, content hashes and estimates, never content.

A call's parts are listed in the order a provider's prompt cache reads them:
tools, then system blocks, then messages. Each part is hashed as hango sent it
(after overrides, without the cache marks), so a later reader can tell whether
the part's source still holds the same content without the ledger keeping a
copy. The hash is SHA-256 (32 hex digits) of the part's fields joined by NUL:
``system, text`` for a system block; ``tool, name, description, schema`` for a
tool; the role, then per block ``text, <text>``, ``tool_use, <id>, <name>,
<input>`` or ``tool_result, <tool_use_id>, <content>, ok|error`` for a message
(JSON values in sorted, compact JSON). No hashed text holds a NUL: PostgreSQL
stores none, and model answers are made NUL-free before anything uses them.
Joining fields costs a fifth of serializing whole messages to sorted JSON, and a
stored message is hashed once, by the run that stores it (``messages.content_hash``,
remembered with the loaded message); older rows are hashed when sent.

Successive calls of a session share long prefixes, so a call is stored as a
delta against its **base** (the previous call of its lineage): how many leading
parts it shares with the base, and the parts after them. So that rebuilding one
call never reads the whole session, a call is stored whole (``prefix_parts = 0``,
every part in its tail) when its base lies ``SNAPSHOT_EVERY - 1`` deltas from a
whole row: rebuilding any call reads at most ``SNAPSHOT_EVERY`` rows, back along
``base_id`` to the nearest whole one (``ModelCalls.chain``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from hango.agent.draft import Draft
from hango.agent.estimator import MessageMemo, estimate_block, estimate_message, estimate_tool
from hango.agent.ledger.recent import RECENT, Known
from hango.agent.parts import PartID, part_of
from hango.cache_rules import CacheRules
from hango.messages import (
    Block,
    Message,
    ServerToolBlock,
    TextBlock,
    ToolDef,
    ToolUseBlock,
    message_from_dict,
)

if TYPE_CHECKING:
    from hango.store.model_calls import ModelCalls

HASH_CHARS = 32
# At most this many rows rebuild one call: a whole row and the deltas after it.
SNAPSHOT_EVERY = 32
# The calls whose prefix a call of each purpose may share, and so is stored against.
LINEAGES: dict[str, tuple[str, ...]] = {
    "run": ("run",),
    "context_try": ("run", "context_try"),
    "subagent": ("subagent",),
    "summarize": ("summarize",),
}
_HASHES = MessageMemo()
_BLOCKS = MessageMemo()
_SENT_TOOLS = MessageMemo()  # a tool's ``SentPart``: a definition is immutable, and a worker keeps it


class SentPart(NamedTuple):
    """One part as sent (a tuple, so comparing long prefixes of parts runs in C)."""

    part: PartID
    hash: str
    tokens: int


@dataclass(frozen=True)
class SentCall:
    """The ordered parts one call sent, and the indexes of the parts that carried a cache breakpoint.

    ``blocks`` counts each part's blocks as the provider's cache counts them (a tool, a system
    block, each content block of a message sent): its lookback is counted in blocks. A call
    rebuilt from the ledger does not know them (empty: one block a part); only a call about to
    be sent needs them.
    """

    parts: tuple[SentPart, ...]
    breakpoints: tuple[int, ...]
    blocks: tuple[int, ...] = field(default=(), compare=False)

    def tokens_through(self, index: int) -> int:
        """The estimated tokens of the parts up to and including ``index``."""
        return sum(p.tokens for p in self.parts[: index + 1])

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.parts)

    def blocks_through(self) -> list[int]:
        """For each index, how many blocks the parts up to and including it hold."""
        return list(itertools.accumulate(self.blocks or (1,) * len(self.parts)))


def fields_hash(fields: Sequence[str]) -> str:
    """The hash of a part's fields."""
    return hashlib.sha256("\x00".join(fields).encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def tool_hash(tool: ToolDef) -> str:
    return _HASHES.get(tool, lambda t: fields_hash(("tool", t.name, t.description, _json(t.input_schema))))


def block_hash(block: Block) -> str:
    return fields_hash(("system", block.text))


def message_hash(message: Message) -> str:
    """A message's hash, remembered per message object (a run re-sends its history every turn)."""
    return _HASHES.get(message, _message_hash)


def stored_hash(role: str, content: list[dict[str, Any]]) -> str:
    """The hash of a message about to be stored (``content`` as stored blocks)."""
    return _message_hash(message_from_dict({"role": role, "content": content}))


def remember_hash(message: Message, digest: str) -> None:
    """Remember ``message``'s hash as stored with it, so it is not computed again."""
    _HASHES.put(message, digest)


def _message_hash(message: Message) -> str:
    fields = [message.role]
    for block in message.content:
        if isinstance(block, TextBlock):
            fields += ("text", block.text)
        elif isinstance(block, ToolUseBlock):
            fields += ("tool_use", block.id, block.name, _json(block.input))
        elif isinstance(block, ServerToolBlock):
            fields += ("server_tool", _json(block.data))
        else:
            fields += ("tool_result", block.tool_use_id, block.content, "error" if block.is_error else "ok")
    return fields_hash(fields)


def sent_call(draft: Draft) -> SentCall:
    """The ledger's view of ``draft`` as it goes to the provider: tools, system blocks, messages."""
    parts = _SENT_TOOLS.each(draft.tools, _sent_tool)
    marks = []
    for sourced in draft.system:
        if sourced.block.cache_control:
            marks.append(len(parts))
        parts.append(SentPart(sourced.part, block_hash(sourced.block), estimate_block(sourced.block)))
    blocks = [1] * len(parts)
    for sourced in draft.messages:
        if sourced.message.cache_control:
            marks.append(len(parts))
        message = sourced.message
        parts.append(SentPart(sourced.part, message_hash(message), estimate_message(message)))
        blocks.append(sent_blocks(message))
    return SentCall(tuple(parts), tuple(marks), tuple(blocks))


def _sent_tool(tool: ToolDef) -> SentPart:
    return SentPart(part_of(tool), tool_hash(tool), estimate_tool(tool))


def sent_blocks(message: Message) -> int:
    """How many lookback blocks ``message`` counts (``CacheRules.blocks_of``), remembered per message like
    its hash."""
    return _BLOCKS.get(message, CacheRules.blocks_of)


def common_prefix(a: Sequence[SentPart], b: Sequence[SentPart]) -> int:
    """How many leading parts ``a`` and ``b`` share (same id, same hash)."""
    shortest = min(len(a), len(b))
    if tuple(a[:shortest]) == tuple(b[:shortest]):  # the usual case, compared in C: a call extends the last
        return shortest
    for index, (left, right) in enumerate(zip(a, b, strict=False)):
        if left.part != right.part or left.hash != right.hash:
            return index
    return shortest


@dataclass(frozen=True)
class Delta:
    """What a ledger row stores: the parts shared with the base, and the rest."""

    prefix_parts: int
    tail: list[list[Any]]


def delta(base: SentCall | None, call: SentCall) -> Delta:
    """``call`` as a delta against ``base`` (the whole call when there is no base, a snapshot)."""
    shared = common_prefix(base.parts, call.parts) if base is not None else 0
    return Delta(shared, [[p.part, p.hash, p.tokens] for p in call.parts[shared:]])


def rebuild(rows: Iterable[Any], known: Mapping[uuid.UUID, Known] | None = None) -> dict[uuid.UUID, SentCall]:
    """Every row's whole call, from rows with ``id``, ``base_id``, ``prefix_parts``, ``tail``, ``breakpoints``.

    A delta row's base is another row of ``rows``; rows come oldest first, so a base is
    always rebuilt before the rows built on it. A whole row (``prefix_parts = 0``) needs
    no base, even when ``base_id`` names the lineage's previous call. A row of a ``known``
    call is that call, whatever its row holds.
    """
    known = known or {}
    calls: dict[uuid.UUID, SentCall] = {}
    for row in rows:
        if row.id in known:
            calls[row.id] = known[row.id].call
            continue
        base = calls[row.base_id].parts[: row.prefix_parts] if row.prefix_parts else ()
        tail = tuple(map(SentPart._make, row.tail))
        calls[row.id] = SentCall(base + tail, tuple(row.breakpoints))
    return calls


@dataclass
class Lineage:
    """The previous call of one gateway's lineage: read from the ledger once, then followed in memory.

    ``depth`` is how many deltas the previous call lies from a whole row: the next call
    is stored whole when it would lie ``SNAPSHOT_EVERY`` rows from one.
    """

    loaded: bool = False
    base_id: uuid.UUID | None = None
    previous: Previous | None = None
    # the agent's calibration ratio for the model: the expected read's unit without a plausible report
    calibrated: float | None = None
    calibration_read: bool = False
    depth: int = 0
    session_id: uuid.UUID | None = None

    def load(self, calls: ModelCalls, session_id: uuid.UUID, purpose: str) -> None:
        """Rebuild the lineage's latest call from its chain of ledger rows: one query, back to a whole row
        or to a call this process keeps (``hango.agent.ledger.recent``), at most ``SNAPSHOT_EVERY`` rows."""
        self.session_id = session_id
        known = RECENT.of(session_id)
        rows = calls.latest_chain(session_id, LINEAGES[purpose], known=list(known))
        self.loaded = True
        if rows:
            first, last = rows[0], rows[-1]
            depth = (known[first.id].depth if first.id in known else 0) + len(rows) - 1
            ended = last.started_at + dt.timedelta(milliseconds=last.duration_ms)
            self.advance(last.id, rebuild(rows, known)[last.id], ended, depth, last.reported_prompt)

    def advance(
        self,
        call_id: uuid.UUID,
        call: SentCall,
        ended_at: dt.datetime,
        depth: int,
        reported_prompt: int | None = None,
    ) -> None:
        """``call`` (stored ``depth`` deltas from a whole row) is the lineage's newest now: the base of the next one.

        The process keeps it for the next lineage of the session to continue from.
        """
        self.base_id = call_id
        self.previous = Previous(call, ended_at, reported_prompt)
        self.depth = depth
        if self.session_id is not None:
            RECENT.put(self.session_id, call_id, Known(call, depth))

    def delta(self, call: SentCall) -> Delta:
        """``call`` as its ledger row stores it: a delta against the previous call, or whole every ``SNAPSHOT_EVERY``."""
        whole = self.previous is None or self.depth + 1 >= SNAPSHOT_EVERY
        return delta(None if whole else self.previous.call, call)

    def depth_after(self, stored: Delta) -> int:
        """How many deltas a call stored as ``stored`` lies from a whole row."""
        return self.depth + 1 if stored.prefix_parts else 0


@dataclass(frozen=True)
class Previous:
    """The previous call of a lineage, as the cache verdict needs it.

    ``reported_prompt`` is the prompt the provider counted for it (input, cache read and cache
    write tokens), when known: the verdict's expected read is in the provider's units.
    """

    call: SentCall
    ended_at: dt.datetime
    reported_prompt: int | None = None
