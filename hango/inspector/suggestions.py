"""Optimize context: which parts of the next request are dead weight, what dropping them saves and costs.

Everything is read from the inspector's own assembly and snapshot, so a
suggestion speaks about exactly the request inspect shows; nothing calls a
model and nothing is written. Kinds:

- ``superseded_result``: a ``read_file``/``grep`` result about a path that a
  later call wrote or edited (anything under it), an ``ls``/``glob`` listing of
  a folder a later call wrote a file into, or any of them read again the same way;
- ``duplicate_result``: results a later result repeats word for word;
- ``large_old_result``: a result above ``HANGO_SUGGEST_LARGE_RESULT_TOKENS`` with
  more than ``HANGO_SUGGEST_OLD_TURNS`` assistant messages after it;
- ``unused_tool``: a tool none of the agent's recent answers called (an agent
  override, so it says how many sessions it affects); an MCP server none of whose
  tools was called is one suggestion, its whole server (``tool:<server>/*``);
- ``defer_server``: an MCP server whose tools are all sent on every call, deferred
  (``hango/inspector/defer_suggestion.py``): applied by the agent PATCH's ``defer``, not an override;
- ``would_compact``: the next call would compact; the preview of that split.

A message suggestion excludes one tool-result message and, through the
inspector's pairing closure, the assistant message that called the tools.
Every result of the message must be dead for the first two kinds, and a
message holding user text is never suggested. Parts that already carry an
override are never touched. Each suggestion passes the session PUT's own
validator (see ``_valid``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from hango.agent.compaction import plan_compaction, summary_max_tokens
from hango.agent.estimator import estimate_content
from hango.agent.options import TOOL_PATHS
from hango.agent.overrides import EXCLUDE, Override
from hango.agent.parts import PartID, SourcedMessage, in_part_order, part_key, server_part
from hango.agent.tools.base import PathUse
from hango.agent.validate import is_valid
from hango.config import Config
from hango.inspector.inspection import Assembly
from hango.inspector.override_rules import OverrideRejected, close_set, companions, distinct
from hango.inspector.snapshot import PartView, Snapshot
from hango.messages import ToolResultBlock, ToolUseBlock, holds_text
from hango.store.messages import ToolUsage

KINDS = (
    "superseded_result",
    "duplicate_result",
    "large_old_result",
    "unused_tool",
    "defer_server",
    "would_compact",
)


@dataclass(frozen=True)
class Thresholds:
    """The documented knobs (``HANGO_SUGGEST_*``) of the rules; their defaults live in ``Config``."""

    large_result_tokens: int
    old_turns: int
    tool_window: int
    tool_min_answers: int

    @classmethod
    def from_config(cls, config: Config) -> Thresholds:
        return cls(
            config.suggest_large_result_tokens,
            config.suggest_old_turns,
            config.suggest_tool_window,
            config.suggest_tool_min_answers,
        )


@dataclass(frozen=True)
class Suggestion:
    kind: str
    parts: list[PartID]
    tokens_saved: int
    cache_loss_tokens: int
    target: str  # "agent" | "session": the override route that applies it
    reason: str
    sessions_affected: int | None = None
    compaction: dict[str, Any] | None = None
    calls: int | None = None  # defer_server: the history's calls of the server's tools
    answers: int | None = None  # defer_server: the assistant messages they were counted over
    apply: dict[str, Any] | None = None  # defer_server: the agent PATCH body that applies it

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


class Candidate(NamedTuple):
    """A message suggestion before it is checked and priced: its kind, the parts it excludes, why."""

    kind: str
    parts: list[PartID]
    reason: str


@dataclass
class _Call:
    """One tool call of the visible history, with its result once it is known."""

    index: int  # the message holding the tool_use
    name: str
    input: dict[str, Any]
    result: ToolResultBlock | None = None

    @cached_property
    def uses(self) -> PathUse | None:
        """What the tool does with its path (``TOOL_PATHS``); None for a tool that touches no file."""
        return TOOL_PATHS.get(self.name)

    @cached_property
    def path(self) -> str | None:
        if self.uses is None:
            return None
        raw = self.input.get(self.uses.argument, self.uses.default)
        return raw.rstrip("/") or "/" if isinstance(raw, str) else None

    @property
    def reads(self) -> bool:
        return self.uses is not None and self.uses.reads

    @property
    def writes(self) -> bool:
        return self.uses is not None and self.uses.writes

    @cached_property
    def key(self) -> str:
        return self.name + json.dumps(self.input, sort_keys=True, ensure_ascii=False)


@dataclass
class _Later:
    """What the history holds after a point, kept while walking it backwards (included messages only)."""

    changed: set[str] = field(default_factory=set)  # written or edited paths and every folder above them
    created: set[str] = field(default_factory=set)  # the same for write_file only: what a listing shows
    calls: set[str] = field(default_factory=set)  # reader calls by tool and input
    contents: set[str] = field(default_factory=set)  # tool result texts


def suggest(
    assembly: Assembly,
    snapshot: Snapshot,
    usage: ToolUsage,
    limits: Thresholds,
    preview: dict[str, Any] | None,
) -> list[Suggestion]:
    """Every suggestion for the next request, the largest saving first; ``preview`` is ``compaction_preview``'s."""
    sent_after = _sent_tokens_after(snapshot)
    found = _message_suggestions(assembly, snapshot, limits, sent_after)
    found += _unused_tools(assembly, snapshot, usage, limits, sent_after)
    found += _would_compact(assembly, snapshot, preview)
    return sorted(found, key=lambda s: (-s.tokens_saved, s.kind, [part_key(p) for p in s.parts]))


# --- message suggestions ------------------------------------------------------------------------------


def _message_suggestions(
    assembly: Assembly, snapshot: Snapshot, limits: Thresholds, sent_after: dict[PartID, int]
) -> list[Suggestion]:
    messages = assembly.draft.messages
    views = {v.id: v for v in snapshot.messages}
    calls = _calls(messages)
    pairs = companions(messages)
    answers_after = _assistants_after(messages)
    later = _Later()
    candidates: list[Candidate] = []
    made: dict[int, list[_Call]] = {}
    for call in calls:
        made.setdefault(call.index, []).append(call)
    for index in range(len(messages) - 1, -1, -1):
        sourced = messages[index]
        free = _untouched(views.get(sourced.part))
        answered = [c for c in made.get(index - 1, ()) if c.result is not None]
        if answered and free and not holds_text(sourced.message):
            found = _judge(answered, later, answers_after[index], limits, views[sourced.part].tokens)
            if found is not None:
                kind, reason = found
                candidates.append(Candidate(kind, _closure(sourced.part, pairs), reason))
        if free:
            _remember(later, sourced, made.get(index, []))
    return _priced(_valid(assembly, candidates, views), views, sent_after)


def _calls(messages: list[SourcedMessage]) -> list[_Call]:
    """Every tool call with the result the next message gives it."""
    calls, open_calls = [], {}
    for index, sourced in enumerate(messages):
        for block in sourced.message.content:
            if isinstance(block, ToolUseBlock):
                call = _Call(index, block.name, block.input)
                calls.append(call)
                open_calls[block.id] = call
            elif isinstance(block, ToolResultBlock) and block.tool_use_id in open_calls:
                call = open_calls.pop(block.tool_use_id)
                if call.index == index - 1:
                    call.result = block
    return calls


def _assistants_after(messages: list[SourcedMessage]) -> list[int]:
    """For each message index, how many assistant messages come after it."""
    after, count = [0] * len(messages), 0
    for index in range(len(messages) - 1, -1, -1):
        after[index] = count
        count += messages[index].message.role == "assistant"
    return after


def _untouched(view: PartView | None) -> bool:
    """Sent as it is: included and not overridden (a replaced or excluded part is the user's choice)."""
    return view is not None and view.included and view.override is None


def _judge(
    calls: list[_Call], later: _Later, age: int, limits: Thresholds, tokens: int
) -> tuple[str, str] | None:
    """The kind and reason for one result message, judged against what comes later; None when it stays."""
    superseded = [_is_superseded(c, later) for c in calls]
    if all(superseded):
        paths = ", ".join(sorted({c.path or "?" for c in calls}))
        return (
            "superseded_result",
            f"a later call wrote, edited or read again {paths}: this result is out of date",
        )
    repeated = [
        c for c, old in zip(calls, superseded, strict=True) if not old and c.result.content in later.contents
    ]
    if repeated and len(repeated) == superseded.count(False) and not any(c.writes for c in repeated):
        names = ", ".join(sorted({c.name for c in repeated}))
        return "duplicate_result", f"a later {names} result says exactly the same"
    if age <= limits.old_turns or tokens < limits.large_result_tokens:  # the message bounds its results
        return None
    large = [c for c in calls if estimate_content(c.result) >= limits.large_result_tokens]
    if large:
        names = ", ".join(sorted({c.name for c in large}))
        return "large_old_result", f"a large {names} result from {age} assistant messages ago"
    return None


def _is_superseded(call: _Call, later: _Later) -> bool:
    if not call.reads:
        return False
    if call.key in later.calls:
        return True
    # an edit changes contents, not a listing: a listing goes out of date only with a write
    touched = later.created if call.uses.access == "list" else later.changed
    return call.path is not None and call.path in touched


def _remember(later: _Later, sourced: SourcedMessage, calls: list[_Call]) -> None:
    """Add a sent message's calls and results to what later messages hold."""
    for block in sourced.message.content:
        if isinstance(block, ToolResultBlock):
            later.contents.add(block.content)
    for call in calls:
        if call.result is None or call.result.is_error:
            continue  # a failed write changed nothing; a failed read shows nothing
        if call.reads:
            later.calls.add(call.key)
        elif call.writes and call.path is not None:
            later.changed.update(_folders(call.path))
            if call.uses.access == "write":
                later.created.update(_folders(call.path))


def _folders(path: str) -> list[str]:
    """``path`` and every folder above it: an ``ls``/``grep`` of any of them no longer shows the same."""
    out = [path]
    while path != "/":
        path = path.rsplit("/", 1)[0] or "/"
        out.append(path)
    return out


def _closure(part: PartID, pairs: dict[PartID, list[PartID]]) -> list[PartID]:
    """``part`` and the companions the inspector's pairing closure pulls in with it."""
    return in_part_order([part, *pairs.get(part, ())])  # ``companions`` gives the whole group


def _valid(assembly: Assembly, candidates: list[Candidate], views: dict[PartID, PartView]) -> list[Candidate]:
    """The candidates whose override set, with the stored one, passes the session PUT's validator.

    Removing a whole tool_use/tool_result pair from a valid history leaves it
    valid (its neighbours hold no tool blocks that pointed into the pair), so
    when the history as sent is valid one check of all candidates together
    answers for each; otherwise each is checked alone.
    """
    candidates = [c for c in candidates if all(_untouched(views.get(p)) for p in c.parts)]
    stored = [o for o in assembly.state.overrides.session.values() if o.paired_from is None]
    sent_valid = is_valid([m.message for m in assembly.captured.messages])
    if sent_valid and _passes(stored, [p for c in candidates for p in c.parts], assembly.draft.messages):
        return candidates
    return [c for c in candidates if _passes(stored, c.parts, assembly.draft.messages)]


def _passes(stored: list[Override], parts: Iterable[PartID], messages: list[SourcedMessage]) -> bool:
    try:
        close_set(distinct([*stored, *(Override(p, EXCLUDE) for p in parts)]), messages)
    except OverrideRejected:
        return False
    return True


def _priced(
    candidates: list[Candidate],
    views: dict[PartID, PartView],
    sent_after: dict[PartID, int],
) -> list[Suggestion]:
    """Tokens saved, and the cache price: the sent messages after the first dropped one are re-read uncached."""
    out = []
    for kind, parts, reason in candidates:
        saved = sum(views[p].tokens for p in parts)
        first = parts[0]  # parts come in part order (``_closure``), the messages' order
        loss = views[first].tokens + sent_after[first] - saved
        out.append(Suggestion(kind, parts, saved, loss, "session", reason))
    return out


# --- agent and compaction suggestions -----------------------------------------------------------------


def _unused_tools(
    assembly: Assembly,
    snapshot: Snapshot,
    usage: ToolUsage,
    limits: Thresholds,
    sent_after: dict[PartID, int],
) -> list[Suggestion]:
    """Tools none of the agent's last answers called (nor this session's history): an agent override each,
    or one for a whole MCP server none of whose tools was called (``tool:<server>/*``)."""
    if usage.answers < limits.tool_min_answers:
        return []
    here = {b.name for m in assembly.draft.messages for b in m.message.content if isinstance(b, ToolUseBlock)}
    called = usage.called | here
    overrides = assembly.state.overrides
    reach = f"excluding it applies to all {usage.sessions} sessions of the agent"
    tools = assembly.draft.report.toolset
    named = {tools.part(t.name): t.name for t in assembly.draft.tools}  # the name the model calls each by
    out = []
    for server, views in tools_by_server(snapshot.tools).items():
        unused = [v for v in views if _untouched(v) and named[v.id] not in called]
        whole = server is not None and overrides.get(server_part(server)) is None
        if unused and whole and not any(named[v.id] in called for v in views):
            tokens = sum(v.tokens for v in unused)
            reason = (
                f"server `{server}`: {len(unused)} tool{'s' * (len(unused) != 1)}, {tokens:,} tokens a call, "
                f"0 calls in the last {usage.answers} answers; {reach}"
            )
            # the sent tokens after its first tool, but its other tools: measured again in ``measured``
            loss = sent_after[unused[0].id] + unused[0].tokens - tokens
            part = server_part(server)
            out.append(Suggestion("unused_tool", [part], tokens, loss, "agent", reason, usage.sessions))
            continue
        for view in unused:
            # named as every surface names it (``time/convert_time``), not as the model calls it
            reason = (
                f"none of the agent's last {usage.answers} assistant messages called {view.label}; {reach}"
            )
            loss = sent_after[view.id]
            out.append(
                Suggestion("unused_tool", [view.id], view.tokens, loss, "agent", reason, usage.sessions)
            )
    return out


def tools_by_server(tools: list[PartView]) -> dict[str | None, list[PartView]]:
    """The present tool parts by MCP server (None: the built-in tools), in request order."""
    found: dict[str | None, list[PartView]] = {}
    for view in tools:
        if not view.stale:
            found.setdefault(view.server, []).append(view)
    return found


def _sent_tokens_after(snapshot: Snapshot) -> dict[PartID, int]:
    """For each part, the sent tokens after it in request order (tools, system, messages): a changed prefix."""
    ordered = [*snapshot.tools, *snapshot.system, *snapshot.messages]
    after, total = {}, 0
    for view in reversed(ordered):
        after[view.id] = total
        total += view.tokens if view.included else 0
    return after


def _would_compact(assembly: Assembly, snapshot: Snapshot, plan: dict[str, Any] | None) -> list[Suggestion]:
    if not snapshot.would_compact or plan is None:
        return []
    room = summary_max_tokens(assembly.state)
    reason = (
        f"the next call passes the compaction trigger ({snapshot.compact_at} tokens): messages "
        f"{plan['summarize'][0]}-{plan['summarize'][1]} would become a summary of at most {room} tokens"
    )
    saved = max(0, plan["tokens_summarized"] + plan["previous_summary_tokens"] - room)
    # its cache price is measured with the others' (``measure.compaction_cache_loss``)
    return [Suggestion("would_compact", [], saved, 0, "session", reason, compaction=plan)]


def compaction_preview(assembly: Assembly) -> dict[str, Any] | None:
    """What the summarization slot would summarize and keep for this request; no summarizer is called.

    Past the trigger, what the next call's compaction does; below it, what compact-now would do.
    """
    state = assembly.state
    plan = plan_compaction(assembly.captured, state, whole=not assembly.captured.report.would_compact)
    return None if plan is None else plan.preview()
