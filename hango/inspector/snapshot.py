"""The inspect response: every part of the next request with its label, preview, tokens and flags.

Per-part tokens come from the Estimator, which is additive, so the sum of the
included parts (a replaced part at its new size) equals ``estimate_request`` of
the captured request. The request total uses the provider's token counter when
it has one (``counted: "provider"``), else that estimate.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from hango.agent.compaction import compact_at
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.estimator import (
    MessageMemo,
    estimate_block,
    estimate_message,
    estimate_request,
    estimate_tool,
)
from hango.agent.ledger.record import Previous
from hango.agent.ledger.verdict import Outlook, cached_marks, part_cache_losses
from hango.agent.overrides import REPLACE, Overrides
from hango.agent.parts import (
    SUMMARY,
    PartID,
    in_part_order,
    kind_of,
    part_of,
    preview,
    target_of,
    tool_server,
)
from hango.inspector.inspection import Assembly
from hango.inspector.labels import held, label_of, labelled, message_preview
from hango.inspector.override_rules import companions
from hango.messages import ToolDef, ToolUseBlock

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
    paired_with: tuple[PartID, ...] = ()  # most parts pair with nothing: the shared empty tuple
    stale: bool = False
    excluded_by: PartID | None = None  # the part whose override left this one out (pending.mark_excluded_by)
    cached_prefix: bool = False
    cache_loss_tokens: int = 0
    role: str | None = None  # a message's (or the summary's) role
    tools: tuple[str, ...] = ()  # the tools it defines, calls or answers


@dataclass
class ToolView(PartView):
    """A tool part's view: the only one that names an MCP server, so no message's answer carries it."""

    server: str | None = None  # ``tool:<server>/…``'s server; None for a built-in
    deferred: bool = False  # not sent until ``tool_search`` reveals it
    revealed_at: int | None = None  # a deferred tool ``tool_search`` revealed: the seq of that answer


def part_view(part: PartID, kind: str, **fields: Any) -> PartView:
    """The view of ``part`` of ``kind``: a tool's names its server."""
    if kind == "tool":
        return ToolView(id=part, kind=kind, server=tool_server(part), **fields)
    return PartView(id=part, kind=kind, **fields)


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


def build_snapshot(assembly: Assembly, deps: Deps, ahead: Outlook, held: Previous | None) -> Snapshot:
    """Turn an assembly (the call before and after overrides) into the inspect response's parts and totals.

    ``ahead`` is the next call's cache outlook (``hango/inspector/cache_outlook.py``) and ``held`` the
    previous call the provider holds: they price each part's ``cache_loss_tokens``.
    """
    draft, sent, state = assembly.draft, assembly.captured, assembly.state
    sent_system = {s.part: s.block for s in sent.system}
    sent_tools = sent.report.toolset.sent  # the call's toolset: which tools the overrides leave in
    system = [
        _view(s.part, s.block.text, estimate_block(s.block), _sent_block(sent_system, s.part))
        for s in draft.system
    ]
    toolset = sent.report.toolset
    every_tool = draft.every_tool  # the deferred ones last: a reveal sends them there
    tools = [
        ToolView(**fields, included=t.name in sent_tools)
        for t, fields in zip(every_tool, _TOOL_FIELDS.each(every_tool, _tool_fields), strict=True)
    ]
    if toolset.defers:
        for view, tool in zip(tools, every_tool, strict=True):
            view.deferred = tool.name in toolset.deferred
            view.revealed_at = toolset.revealed.get(tool.name)
    messages = _message_parts(draft, sent, state.overrides)
    if state.overrides:
        for view in (*system, *tools):
            _mark_override(view, state.overrides.get(view.id))
        _add_stale(state.overrides, system, tools, messages, draft)
    else:
        for view in system:
            view.original_tokens = None
    _mark_cache([*tools, *system, *messages], assembly, ahead, held)
    counted, total_before, total_after = _count(deps, draft, sent)
    return Snapshot(
        system=system,
        tools=tools,
        messages=messages,
        total_before=total_before,
        total_after=total_after,
        counted=counted,
        would_compact=assembly.captured.report.would_compact,
        context_window=state.agent.context_window,
        compact_at=compact_at(state),
        output_reserve=sent.max_tokens,
        before=_before(system, tools, messages),
    )


def _sent_block(sent: dict[PartID, Any], part: PartID) -> tuple[str, int] | None:
    block = sent.get(part)
    return None if block is None else (block.text, estimate_block(block))


def _before(*groups: list[PartView]) -> dict[str, int]:
    """Per group, the tokens of every present part with no override applied (a deferred tool is not sent
    with or without one)."""
    return {
        name: sum(
            p.original_tokens if p.original_tokens is not None else p.tokens
            for p in views
            if not p.stale and not getattr(p, "deferred", False)
        )
        for name, views in zip(GROUPS, groups, strict=True)
    }


# A tool's view but whether it is sent, kept on its definition: the definitions are immutable and a
# worker keeps them (the built-ins' for its life, an MCP server's per stored list, ``mcp_tools``), so a
# tool's label, preview and tokens are made once, not at every inspect for every tool.
_TOOL_FIELDS = MessageMemo()


def _tool_fields(tool: ToolDef) -> dict[str, Any]:
    """The fields of ``tool``'s view that its definition alone decides (a tool is never replaced)."""
    part = part_of(tool)
    cut = preview(tool.description)
    label = label_of(part)
    return {
        "id": part,
        "kind": kind_of(part),
        "server": tool_server(part),
        "target": target_of(part),
        "label": label,
        "preview": cut.text,
        "truncated": cut.truncated,
        "tokens": estimate_tool(tool),
        "tools": (label,),  # ``read_file``, ``<server>/<tool>``
    }


def _view(part: PartID, text: str, tokens: int, sent: tuple[str, int] | None) -> PartView:
    """A part from its content before overrides and, when it is sent, its content as sent."""
    shown, sent_tokens = sent if sent is not None else (text, tokens)
    cut = preview(shown)
    kind = kind_of(part)
    return part_view(
        part,
        kind,
        target=target_of(part),
        label=label_of(part),
        preview=cut.text,
        truncated=cut.truncated,
        tokens=sent_tokens,
        included=sent is not None,
        original_tokens=tokens,  # kept by ``_mark_override`` on replaced parts only
        tools=(label_of(part),) if kind == "tool" else (),  # ``read_file``, ``<server>/<tool>``
    )


def _message_parts(draft: Draft, sent: Draft, overrides: Overrides) -> list[PartView]:
    """Every message part with its override marked, each message's blocks walked once for its label and
    its tools.

    A message sent as it is (the usual case: at most a breakpoint is added) is
    previewed and estimated once. A message part is ``message:<seq>`` or the
    summary, so its kind and target are known without parsing its id.
    """
    pairs = companions(draft.messages)
    # without overrides the call sent is the draft: each message is shown as it is
    sent_messages = None if sent is draft else {m.part: m.message for m in sent.messages}
    names = {b.id: b.name for m in draft.messages for b in m.message.content if isinstance(b, ToolUseBlock)}
    get_override = overrides.get if overrides else lambda part: None
    views = []
    for sourced in draft.messages:
        part, message = sourced.part, sourced.message
        tokens = estimate_message(message)
        shown = message if sent_messages is None else sent_messages.get(part)
        if shown is None or shown.content is message.content:
            cut, sent_tokens = preview(message_preview(message)), tokens
        else:
            cut, sent_tokens = preview(message_preview(shown)), estimate_message(shown)
        kinds, tools = held(message, names)
        override = get_override(part)
        views.append(
            PartView(
                id=part,
                kind="summary" if part == SUMMARY else "message",
                target="session",
                label=labelled(part, message, kinds),
                preview=cut.text,
                truncated=cut.truncated,
                tokens=sent_tokens,
                included=shown is not None,
                original_tokens=tokens if override is not None and override.action == REPLACE else None,
                override=None if override is None else override.action,
                paired=override is not None and override.paired_from is not None,
                paired_with=pairs.get(part, ()),
                role=message.role,
                tools=tools,
            )
        )
    return views


def _mark_override(view: PartView, override) -> None:
    if override is not None:
        view.override = override.action
        view.paired = override.paired_from is not None
    if override is None or override.action != REPLACE:
        view.original_tokens = None


def _add_stale(overrides, system: list, tools: list, messages: list, draft: Draft) -> None:
    """Overrides whose part is absent now: shown stale, excluded, zero tokens, harmless. A source serving
    a tool of the call (``tool:<server>/*``) is present."""
    present = {p.id for p in (*system, *tools, *messages)}
    present.update(draft.report.toolset.served_sources(t.name for t in draft.every_tool))
    groups = {"system": system, "tool": tools, "message": messages, "summary": messages}
    stale = {**overrides.agent, **overrides.session}
    for part in in_part_order(p for p in stale if p not in present):
        override = stale[part]
        kind = kind_of(part)
        view = part_view(
            part,
            kind,
            target=target_of(part),
            label=label_of(part),
            preview="",
            truncated=False,
            tokens=0,
            included=False,
            override=override.action,
            paired=override.paired_from is not None,
            stale=True,
        )
        groups[kind].append(view)


def _mark_cache(views: list[PartView], assembly: Assembly, ahead: Outlook, held: Previous | None) -> None:
    """What a change of each part costs the prompt cache: the expected read of the prefixes the provider
    holds (``held``, the previous call) from that part on.

    The one cache model (``hango/agent/ledger/verdict.py``): the breakpoints hango places, the
    provider's minimum cacheable length, the cache lifetime (after it nothing is cached, so no
    change costs any) and the unit of the next call's expected read (provider units from the
    previous call's report); a provider without a cache loses nothing. A part left out would
    come back before the next sent part, so it is priced there. ``views`` are in cache order
    (tools, system blocks, messages).
    """
    if ahead.state == "none":
        return
    call = assembly.sent
    losses = part_cache_losses(held, call, ahead)
    last = max(cached_marks(call, ahead), default=-1)  # a prefix below the minimum is not cached
    at = {p.part: i for i, p in enumerate(call.parts)}
    following = len(call.parts)
    priced = ahead.priced  # an expired cache holds no prefix
    for view in reversed(views):
        if view.stale:
            continue
        index = at.get(view.id) if view.included else None
        position = following if index is None else index
        following = position
        view.cached_prefix = priced and position <= last
        view.cache_loss_tokens = losses[position]


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
