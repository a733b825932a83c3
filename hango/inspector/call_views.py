"""What the calls API shows: ledger entries as parts rebuilt from current sources, and diffs.

The ledger keeps no content, so a past call's parts are shown from what the
session and its agent hold now: a part is shown (label, preview) only when a
current source has exactly the hash the call sent (a stored message counts though a compaction
summarized it since: it is stored as it was sent); otherwise it is marked
``changed_since_call`` and shows nothing but its id and tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hango.agent.compaction import SUMMARIZER, SUMMARIZER_PROMPT
from hango.agent.deps import Deps
from hango.agent.ledger.record import (
    LINEAGES,
    SentCall,
    SentPart,
    block_hash,
    message_hash,
    rebuild,
    tool_hash,
)
from hango.agent.ledger.verdict import Outlook, prompt_stretches
from hango.agent.parts import (
    SCRATCH_PART_KIND,
    TRANSCRIPT,
    SourcedBlock,
    SourcedMessage,
    is_scratch,
    kind_of,
    message_seq,
    part_of,
    preview,
    tool_server,
)
from hango.agent.state import StoredMessage
from hango.inspector.inspection import Assembly
from hango.inspector.labels import label_of, message_label, message_preview
from hango.messages import Block, ToolUseBlock, message_from_dict
from hango.providers.prices import prices_of
from hango.store import TenantStore

Shown = tuple[str, str]  # (label, preview)
# The calls the session's next call continues from (a try's lineage): ``from=last`` in a diff.
CONVERSATION = LINEAGES["context_try"]


def ledger_kind(part: str) -> str:
    """A part's kind; the summarizer's transcript and a try's scratch messages are kinds of their own."""
    if part == TRANSCRIPT:
        return "transcript"
    return SCRATCH_PART_KIND if is_scratch(part) else kind_of(part)


def ledger_label(part: str) -> str:
    return "transcript of the summarized messages" if part == TRANSCRIPT else label_of(part)


def current_sources(
    assembly: Assembly, summarized: Sequence[StoredMessage] = ()
) -> dict[tuple[str, str], Shown]:
    """Every (part id, hash) the session's sources can produce now, with its label and preview.

    Both the original and the overridden form of each part count: a call sent
    before an override was saved, or after, matches what it sent. ``summarized``: stored messages a
    compaction folded into the summary since (the next call no longer sends them, but they are stored
    as they were sent).
    """
    shown: dict[tuple[str, str], Shown] = {}
    for tool in assembly.draft.every_tool:
        part = part_of(tool)
        shown[(part, tool_hash(tool))] = (label_of(part), preview(tool.description).text)
    summarizer = SourcedBlock(SUMMARIZER, Block(SUMMARIZER_PROMPT))
    for sourced in (*assembly.draft.system, *assembly.captured.system, summarizer):
        block = sourced.block
        shown[(sourced.part, block_hash(block))] = (label_of(sourced.part), preview(block.text).text)
    stored = [SourcedMessage(m.part, m.message) for m in (*summarized, *assembly.state.history)]
    messages = [*stored, *assembly.draft.messages, *assembly.captured.messages]
    names = {b.id: b.name for m in messages for b in m.message.content if isinstance(b, ToolUseBlock)}
    for sourced in messages:
        label = message_label(sourced.part, sourced.message, names)
        shown[(sourced.part, message_hash(sourced.message))] = (
            label,
            preview(message_preview(sourced.message)).text,
        )
    return shown


def since_previous(sent: SentPart, previous: dict[str, str] | None) -> str | None:
    """``same``, ``changed`` or ``added`` against the previous call's parts (None without one)."""
    if previous is None:
        return None
    if sent.part not in previous:
        return "added"
    return "same" if previous[sent.part] == sent.hash else "changed"


def call_parts(
    call: SentCall,
    assembly: Assembly,
    previous: SentCall | None = None,
    summarized: Sequence[StoredMessage] = (),
) -> list[dict[str, Any]]:
    """A past call's parts in the inspect part shape, rebuilt from current sources where they still match.

    A part is ``changed_since_call`` only when no source hashes to what was sent (an edit, a replace
    override, a deletion); a message a later compaction summarized is stored unchanged
    (``summarized``, ``summarized_messages``). Each part says how it stands against ``previous`` (the
    previous call of its lineage).
    """
    shown = current_sources(assembly, summarized)
    marks = set(call.breakpoints)
    before = None if previous is None else {p.part: p.hash for p in previous.parts}
    views = []
    for index, sent in enumerate(call.parts):
        found = shown.get((sent.part, sent.hash))
        label, text = found if found is not None else (ledger_label(sent.part), None)
        kind = ledger_kind(sent.part)
        views.append(
            {
                "id": sent.part,
                "kind": kind,
                "label": label,
                "server": tool_server(sent.part) if kind == "tool" else None,
                "tokens": sent.tokens,
                "preview": text,
                "hash": sent.hash,
                "cache_breakpoint": index in marks,
                "changed_since_call": found is None,
                "since_previous": since_previous(sent, before),
            }
        )
    return views


def summarized_messages(store: TenantStore, call: SentCall, assembly: Assembly) -> list[StoredMessage]:
    """The stored messages ``call`` sent that the next call no longer carries (a compaction folded them
    into its summary since), read by seq: one bounded query, none when there are none."""
    carried = {m.seq for m in assembly.state.history}
    seqs = [seq for p in call.parts if (seq := message_seq(p.part)) is not None and seq not in carried]
    if not seqs:
        return []
    rows = store.messages.of_seqs(assembly.state.session_id, seqs)
    # hashed from the stored content, not the stored hash: what is shown is what the content hashes to
    return [StoredMessage(r.seq, message_from_dict({"role": r.role, "content": r.content})) for r in rows]


def ledger_call(store: TenantStore, session_id: Any, call_id: Any) -> SentCall | None:
    """One call's parts rebuilt from its chain of ledger rows (one query, bounded), or None."""
    return rebuild(store.model_calls.chain(session_id, call_id)).get(call_id)


def call_and_previous(store: TenantStore, session_id: Any, call_id: Any) -> tuple[SentCall, SentCall | None]:
    """A call and the previous call of its lineage (None for a lineage's first), from one bounded query."""
    rows = store.model_calls.chain(session_id, call_id, with_base=True)
    calls = rebuild(rows)
    base_id = rows[-1].base_id
    return calls[call_id], calls.get(base_id) if base_id is not None else None


def last_of_conversation(store: TenantStore, session_id: Any) -> Any | None:
    """The id of the latest run or try call: what the session's next call continues from."""
    return store.model_calls.latest_id(session_id, CONVERSATION)


def next_call_cost(
    assembly: Assembly, cache: dict[str, Any], ahead: Outlook, deps: Deps, total: int
) -> dict[str, Any]:
    """What the next call's input (``total`` tokens, as inspect counts them) is expected to cost.

    Its stretches are the cache's (``prompt_stretches``); output is not known before the call, so
    it is not priced.
    """
    tokens = prompt_stretches(total, cache["expected_read_tokens"], assembly.sent, ahead)
    cost = prices_of(deps.config.prices).cost(assembly.state.agent.model, tokens)
    return {"tokens": tokens._asdict(), **cost.as_dict()}
