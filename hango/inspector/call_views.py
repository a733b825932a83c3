"""What the calls API shows: ledger entries as parts rebuilt from current sources, and diffs.

The ledger keeps no content, so a past call's parts are shown from what the
session and its agent hold now: a part is shown (label, preview) only when a
current source has exactly the hash the call sent; otherwise it is marked
``changed_since_call`` and shows nothing but its id and tokens.
"""

from __future__ import annotations

from typing import Any

from hango.agent.compaction import SUMMARIZER, SUMMARIZER_PROMPT
from hango.agent.ledger.record import (
    LINEAGES,
    SentCall,
    block_hash,
    message_hash,
    rebuild,
    tool_hash,
)
from hango.agent.parts import (
    TRANSCRIPT,
    SourcedBlock,
    SourcedMessage,
    kind_of,
    message_part,
    preview,
    tool_part,
)
from hango.inspector.inspection import Assembly
from hango.inspector.labels import label_of, message_label, message_preview
from hango.messages import Block, ToolUseBlock
from hango.store import TenantStore

Shown = tuple[str, str]  # (label, preview)
# The calls the session's next call continues from (a try's lineage): ``from=last`` in a diff.
CONVERSATION = LINEAGES["context_try"]


def ledger_kind(part: str) -> str:
    """A part's kind; the summarizer's transcript is a kind of its own."""
    return "transcript" if part == TRANSCRIPT else kind_of(part)


def ledger_label(part: str) -> str:
    return "transcript of the summarized messages" if part == TRANSCRIPT else label_of(part)


def current_sources(assembly: Assembly) -> dict[tuple[str, str], Shown]:
    """Every (part id, hash) the session's sources can produce now, with its label and preview.

    Both the original and the overridden form of each part count: a call sent
    before an override was saved, or after, matches what it sent.
    """
    shown: dict[tuple[str, str], Shown] = {}
    for tool in assembly.draft.tools:
        shown[(tool_part(tool.name), tool_hash(tool))] = (tool.name, preview(tool.description).text)
    summarizer = SourcedBlock(SUMMARIZER, Block(SUMMARIZER_PROMPT))
    for sourced in (*assembly.draft.system, *assembly.captured.system, summarizer):
        block = sourced.block
        shown[(sourced.part, block_hash(block))] = (label_of(sourced.part), preview(block.text).text)
    stored = [SourcedMessage(message_part(m.seq), m.message) for m in assembly.state.history]
    messages = [*stored, *assembly.draft.messages, *assembly.captured.messages]
    names = {b.id: b.name for m in messages for b in m.message.content if isinstance(b, ToolUseBlock)}
    for sourced in messages:
        label = message_label(sourced.part, sourced.message, names)
        shown[(sourced.part, message_hash(sourced.message))] = (
            label,
            preview(message_preview(sourced.message)).text,
        )
    return shown


def call_parts(call: SentCall, assembly: Assembly) -> list[dict[str, Any]]:
    """A past call's parts in the inspect part shape, rebuilt from current sources where they still match."""
    shown = current_sources(assembly)
    marks = set(call.breakpoints)
    views = []
    for index, sent in enumerate(call.parts):
        found = shown.get((sent.part, sent.hash))
        label, text = found if found is not None else (ledger_label(sent.part), None)
        views.append(
            {
                "id": sent.part,
                "kind": ledger_kind(sent.part),
                "label": label,
                "tokens": sent.tokens,
                "preview": text,
                "hash": sent.hash,
                "cache_breakpoint": index in marks,
                "changed_since_call": found is None,
            }
        )
    return views


def session_calls(store: TenantStore, session_id: Any) -> tuple[list[Any], dict[Any, SentCall]]:
    """The session's ledger rows, oldest first, and every call's parts rebuilt (one query)."""
    rows = store.model_calls.lineage(session_id)
    return rows, rebuild(rows)


def last_of_conversation(rows: list[Any]) -> Any | None:
    """The id of the latest run or try call: what the session's next call continues from."""
    ids = [row.id for row in rows if row.purpose in CONVERSATION]
    return ids[-1] if ids else None
