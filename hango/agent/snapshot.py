"""The inspect response: every part of the next request with its label, preview, tokens and flags.

Per-part tokens come from the Estimator, which is additive, so the sum of the
included parts (a replaced part at its new size) equals ``estimate_request`` of
the captured request. The request total uses the provider's token counter when
it has one (``counted: "provider"``), else that estimate.
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass
from typing import Any

from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.estimator import estimate_block, estimate_message, estimate_request, estimate_tool
from hango.agent.inspect import Assembly
from hango.agent.middleware.prompt_cache import system_breakpoint
from hango.agent.middleware.summarization import compact_at
from hango.agent.overrides import REPLACE, Overrides, companions
from hango.agent.parts import (
    PREVIEW_CHARS,
    SUMMARY,
    PartID,
    in_part_order,
    kind_of,
    preview,
    target_of,
    tool_part,
)
from hango.messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock

log = logging.getLogger(__name__)
GROUPS = ("system", "tools", "messages")


@dataclass
class PartView:
    """One part as the inspect response shows it: what is sent (a replaced part at its replacement)."""

    id: PartID
    kind: str
    target: str
    label: str
    preview: str
    truncated: bool
    tokens: int
    included: bool
    original_tokens: int | None = None
    override: str | None = None
    paired: bool = False
    paired_with: tuple[PartID, ...] = ()
    stale: bool = False
    cached_prefix: bool = False
    cache_loss_tokens: int = 0
    role: str | None = None  # a message's (or the summary's) role
    tools: tuple[str, ...] = ()  # the tools it defines, calls or answers


@dataclass
class Snapshot:
    system: list[PartView]
    tools: list[PartView]
    messages: list[PartView]
    total_before: int
    total_after: int
    counted: str
    would_compact: bool
    context_window: int
    compact_at: int
    output_reserve: int
    before: dict[str, int]

    def totals(self) -> dict[str, dict[str, int]]:
        """Per group: tokens before overrides (replaced parts at their original size) and after them."""
        return {
            group: {"before": self.before[group], "after": _after(parts)}
            for group, parts in zip(GROUPS, (self.system, self.tools, self.messages), strict=True)
        }

    def as_dict(self) -> dict[str, Any]:
        # Each view's own attribute dict (views are built for this one response): dataclasses.asdict
        # deep-copied every value, 14 % of a 1,000-message inspect.
        body = {name: [vars(p) for p in getattr(self, name)] for name in GROUPS}
        return {
            "counted": self.counted,
            "total_before": self.total_before,
            "total_after": self.total_after,
            "totals": self.totals(),
            "context_window": self.context_window,
            "compact_at": self.compact_at,
            "output_reserve": self.output_reserve,
            # the answer needs room too: the provider refuses input + max_tokens above the window
            "free": self.context_window - self.total_after - self.output_reserve,
            "free_before_compaction": max(0, self.compact_at - self.total_after),
            "would_compact": self.would_compact,
            **body,
        }


def _after(parts: list[PartView]) -> int:
    return sum(p.tokens for p in parts if p.included)


def build_snapshot(assembly: Assembly, deps: Deps) -> Snapshot:
    """Turn an assembly (the call before and after overrides) into the inspect response's parts and totals."""
    draft, sent, state = assembly.draft, assembly.captured, assembly.state
    sent_system = {s.part: s.block for s in sent.system}
    sent_tools = {t.name for t in sent.tools}
    system = [
        _view(s.part, s.block.text, estimate_block(s.block), _sent_block(sent_system, s.part))
        for s in draft.system
    ]
    tools = [
        _view(tool_part(t.name), t.description, estimate_tool(t), (t.description, estimate_tool(t)))
        if t.name in sent_tools
        else _view(tool_part(t.name), t.description, estimate_tool(t), None)
        for t in draft.tools
    ]
    messages = _message_parts(draft, sent, state.overrides)
    for view in (*system, *tools):
        _mark_override(view, state.overrides.get(view.id))
    if state.overrides:
        _add_stale(state.overrides, system, tools, messages)
    _mark_cache(system, tools, sent)
    counted, total_before, total_after = _count(deps, draft, sent)
    return Snapshot(
        system=system,
        tools=tools,
        messages=messages,
        total_before=total_before,
        total_after=total_after,
        counted=counted,
        would_compact=state.would_compact,
        context_window=state.agent.context_window,
        compact_at=compact_at(state),
        output_reserve=sent.max_tokens,
        before=_before(system, tools, messages),
    )


def _sent_block(sent: dict[PartID, Any], part: PartID) -> tuple[str, int] | None:
    block = sent.get(part)
    return None if block is None else (block.text, estimate_block(block))


def _before(*groups: list[PartView]) -> dict[str, int]:
    """Per group, the tokens of every present part with no override applied."""
    return {
        name: sum(
            p.original_tokens if p.original_tokens is not None else p.tokens for p in views if not p.stale
        )
        for name, views in zip(GROUPS, groups, strict=True)
    }


def _view(part: PartID, text: str, tokens: int, sent: tuple[str, int] | None) -> PartView:
    """A part from its content before overrides and, when it is sent, its content as sent."""
    shown, sent_tokens = sent if sent is not None else (text, tokens)
    cut = preview(shown)
    kind = kind_of(part)
    view = PartView(
        part, kind, target_of(part), label_of(part), cut.text, cut.truncated, sent_tokens, sent is not None
    )
    view.original_tokens = tokens  # kept by ``_mark_override`` on replaced parts only
    if kind == "tool":
        view.tools = (label_of(part),)
    return view


def _message_parts(draft: Draft, sent: Draft, overrides: Overrides) -> list[PartView]:
    """Every message part with its override marked, each message's blocks walked once for its label and
    its tools.

    A message sent as it is (the usual case: at most a breakpoint is added) is
    previewed and estimated once. A message part is ``message:<seq>`` or the
    summary, so its kind and target are known without parsing its id.
    """
    pairs = companions(draft.messages)
    sent_messages = {m.part: m.message for m in sent.messages}
    names = {b.id: b.name for m in draft.messages for b in m.message.content if isinstance(b, ToolUseBlock)}
    views = []
    for sourced in draft.messages:
        part, message = sourced.part, sourced.message
        tokens = estimate_message(message)
        shown = sent_messages.get(part)
        if shown is None or shown.content is message.content:
            cut, sent_tokens = preview(message_preview(message)), tokens
        else:
            cut, sent_tokens = preview(message_preview(shown)), estimate_message(shown)
        kinds, tools = _held(message, names)
        override = overrides.get(part)
        view = PartView(
            part,
            "summary" if part == SUMMARY else "message",
            "session",
            _label(part, message, kinds),
            cut.text,
            cut.truncated,
            sent_tokens,
            shown is not None,
            tokens if override is not None and override.action == REPLACE else None,
            None if override is None else override.action,
            override is not None and override.paired_from is not None,
            paired_with=pairs.get(part, ()),
            role=message.role,
            tools=tools,
        )
        views.append(view)
    return views


def _mark_override(view: PartView, override) -> None:
    if override is not None:
        view.override = override.action
        view.paired = override.paired_from is not None
    if override is None or override.action != REPLACE:
        view.original_tokens = None


def _add_stale(overrides, system: list, tools: list, messages: list) -> None:
    """Overrides whose part is absent now: shown stale, excluded, zero tokens, harmless."""
    present = {p.id for p in (*system, *tools, *messages)}
    groups = {"system": system, "tool": tools, "message": messages, "summary": messages}
    stale = {**overrides.agent, **overrides.session}
    for part in in_part_order(p for p in stale if p not in present):
        override = stale[part]
        kind = kind_of(part)
        view = PartView(
            part, kind, target_of(part), label_of(part), "", False, 0, False, None, override.action
        )
        view.stale = True
        view.paired = override.paired_from is not None
        groups[kind].append(view)


def _mark_cache(system: list[PartView], tools: list[PartView], sent) -> None:
    """Tools and system blocks up to the breakpoint are the cached prefix; what a change would cost."""
    at = system_breakpoint(sent.system)
    if at is None:
        return
    breakpoint_part = sent.system[at].part
    order = [p.id for p in system]
    last = order.index(breakpoint_part) if breakpoint_part in order else -1
    cached_system = [p for i, p in enumerate(system) if i <= last]
    prefix = [p for p in (*tools, *cached_system) if not p.stale]
    after = 0
    for view in reversed(prefix):
        view.cached_prefix = True
        if view.included:
            after += view.tokens
        view.cache_loss_tokens = after if view.included else view.tokens + after


def _count(deps: Deps, draft: Draft, sent: Draft) -> tuple[str, int, int]:
    """Both totals in one unit: the provider's counts when it counts both in time, else both estimates.

    Without overrides the draft is the call sent: it is counted (or estimated) once.
    """
    try:
        provider, model = deps.provider(sent.model)
        timeout = deps.config.token_count_timeout
        counted_before = provider.count_tokens(draft.to_request(model), timeout=timeout)
        counted_after = counted_before
        if counted_before is not None and draft is not sent:
            counted_after = provider.count_tokens(sent.to_request(model), timeout=timeout)
    except Exception as exc:  # any counter failure falls back to the estimate, by design
        log.warning("token counter failed (%s); using the estimate", type(exc).__name__)
        counted_after = counted_before = None
    if counted_after is None or counted_before is None:
        estimated = estimate_request(draft.to_request())
        return "estimate", estimated, estimated if draft is sent else estimate_request(sent.to_request())
    return "provider", counted_before, counted_after


def label_of(part: PartID) -> str:
    """A short label for a part id: ``agent``, ``memory /memories/AGENTS.md``, ``read_file``, ``#7``."""
    if part == SUMMARY:
        return "summary"
    kind, _, rest = part.partition(":")
    if kind == "system":
        return rest.replace("memory:", "memory ", 1)
    return f"#{rest}" if kind == "message" else rest


def message_label(part: PartID, message: Message, tool_names: dict[str, str]) -> str:
    """``#7 assistant · tool_use read_file`` — seq, role, and what the message holds."""
    return _label(part, message, _held(message, tool_names)[0])


def tools_of(message: Message, tool_names: dict[str, str]) -> tuple[str, ...]:
    """The tools a message calls or answers, each once, in order."""
    return _held(message, tool_names)[1]


def _label(part: PartID, message: Message, kinds: list[str]) -> str:
    if part == SUMMARY:
        return "summary of earlier messages"
    return f"{label_of(part)} {message.role} · {', '.join(kinds)}"


def _held(message: Message, tool_names: dict[str, str]) -> tuple[list[str], tuple[str, ...]]:
    """What the blocks hold, each once in order: kinds (``text``, ``tool_use read_file``, ``tool_result
    grep``: a result names the tool it answers) and the tools called or answered."""
    kinds: list[str] = []
    tools: list[str] = []
    for block in message.content:
        if isinstance(block, ToolUseBlock):
            tool: str | None = block.name
            kind = f"tool_use {tool}"
        elif isinstance(block, ToolResultBlock):
            tool = tool_names.get(block.tool_use_id, "?")
            kind = f"tool_result {tool}"
        else:
            tool, kind = None, "text"
        if kind not in kinds:
            kinds.append(kind)
        if tool is not None and tool not in tools:
            tools.append(tool)
    return kinds, tuple(tools)  # most hold none: the shared empty tuple


def message_preview(message: Message) -> str:
    """A message's first 200 characters as one line (text, tool calls, results); stops once it has them.

    No block is rendered whole: texts are sliced, and a tool call's input is
    clipped before it is written as JSON (``clipped``), so the cost follows the
    preview's length, not the message's.
    """
    text = ""
    for block in message.content:
        if len(text) >= PREVIEW_CHARS:
            break
        # one character more than a preview shows, so a block that long still reads as cut
        text += (" · " if text else "") + _block_text(block)[: PREVIEW_CHARS + 1]
    return text


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return f"{block.name}({json.dumps(clipped(block.input, PREVIEW_CHARS), ensure_ascii=False)})"
    return block.content


def clipped(value: Any, limit: int) -> Any:
    """``value`` (parsed JSON) cut so that its JSON text starts with the same ``limit`` characters.

    A string keeps its first ``limit`` characters and a list or object its first
    ``limit`` items: each of them writes at least one character, so whatever is
    cut starts past ``limit`` characters of the text.
    """
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, list):
        return [clipped(item, limit) for item in value[:limit]]
    if isinstance(value, dict):
        items = itertools.islice(value.items(), limit)
        return {clipped(key, limit): clipped(item, limit) for key, item in items}
    return value
