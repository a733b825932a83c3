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
from dataclasses import dataclass, field
from typing import Any

from hango.agent.deps import Deps
from hango.agent.estimator import estimate_block, estimate_message, estimate_request, estimate_tool
from hango.agent.inspect import Assembly
from hango.agent.middleware.prompt_cache import system_breakpoint
from hango.agent.middleware.summarization import compact_at
from hango.agent.overrides import companions
from hango.agent.parts import PREVIEW_CHARS, SUMMARY, PartID, kind_of, preview, tool_part
from hango.messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock

log = logging.getLogger(__name__)
GROUPS = ("system", "tools", "messages")


@dataclass
class PartView:
    id: PartID
    kind: str
    label: str
    preview: str
    tokens: int
    included: bool
    override: str | None = None
    paired: bool = False
    paired_with: list[PartID] = field(default_factory=list)
    stale: bool = False
    cached_prefix: bool = False
    cache_loss_tokens: int = 0


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
            "free": self.context_window - self.total_after,
            "would_compact": self.would_compact,
            **body,
        }


def _after(parts: list[PartView]) -> int:
    return sum(p.tokens for p in parts if p.included)


def build_snapshot(assembly: Assembly, deps: Deps) -> Snapshot:
    """Turn an assembly into the inspect response's parts and totals."""
    sent = assembly.captured
    state = assembly.state
    sent_system = {s.part: estimate_block(s.block) for s in sent.system}
    sent_tools = {tool_part(t.name): estimate_tool(t) for t in sent.tools}
    sent_messages = {m.part: estimate_message(m.message) for m in sent.messages}
    system = [_part(s.part, s.block.text, estimate_block(s.block), sent_system) for s in assembly.system]
    tools = [_part(tool_part(t.name), t.description, estimate_tool(t), sent_tools) for t in assembly.tools]
    messages = _message_parts(assembly, sent_messages)
    for view in (*system, *tools, *messages):
        _mark_override(view, state.overrides.get(view.id))
    _add_stale(state.overrides, system, tools, messages)
    _mark_cache(system, tools, sent)
    estimate = estimate_request(sent.to_request())
    counted, total = _count(deps, sent, estimate)
    before = _before(assembly)
    return Snapshot(
        system=system,
        tools=tools,
        messages=messages,
        total_before=sum(before.values()),
        total_after=total,
        counted=counted,
        would_compact=state.would_compact,
        context_window=state.agent.context_window,
        compact_at=compact_at(state),
        before=before,
    )


def _before(assembly: Assembly) -> dict[str, int]:
    """Per group, the tokens of every present part with no override applied."""
    return {
        "system": sum(estimate_block(s.block) for s in assembly.system),
        "tools": sum(estimate_tool(t) for t in assembly.tools),
        "messages": sum(estimate_message(m.message) for m in assembly.messages),
    }


def _part(part: PartID, text: str, tokens: int, sent: dict[PartID, int]) -> PartView:
    kind = kind_of(part)
    return PartView(part, kind, label_of(part), preview(text), sent.get(part, tokens), part in sent)


def _message_parts(assembly: Assembly, sent: dict[PartID, int]) -> list[PartView]:
    pairs = companions(assembly.messages)
    names = {
        b.id: b.name for m in assembly.messages for b in m.message.content if isinstance(b, ToolUseBlock)
    }
    views = []
    for sourced in assembly.messages:
        part, message = sourced.part, sourced.message
        tokens = sent.get(part)  # a sent message at its sent size (a replaced one at its new size)
        views.append(
            PartView(
                part,
                "summary" if part == SUMMARY else "message",  # the chain's own part ids: no parsing
                message_label(part, message, names),
                message_preview(message),
                estimate_message(message) if tokens is None else tokens,
                tokens is not None,
                paired_with=pairs.get(part, []),
            )
        )
    return views


def _mark_override(view: PartView, override) -> None:
    if override is not None:
        view.override = override.action
        view.paired = override.paired_from is not None


def _add_stale(overrides, system: list, tools: list, messages: list) -> None:
    """Overrides whose part is absent now: shown stale, excluded, zero tokens, harmless."""
    present = {p.id for p in (*system, *tools, *messages)}
    groups = {"system": system, "tool": tools, "message": messages, "summary": messages}
    for part, override in sorted({**overrides.agent, **overrides.session}.items()):
        if part not in present:
            view = PartView(part, kind_of(part), label_of(part), "", 0, False, override.action, stale=True)
            view.paired = override.paired_from is not None
            groups[view.kind].append(view)


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


def _count(deps: Deps, sent, estimate: int) -> tuple[str, int]:
    """The provider's token count when it has a counter and answers in time, else the estimate."""
    try:
        provider, model = deps.provider(sent.model)
        counted = provider.count_tokens(sent.to_request(model), timeout=deps.config.token_count_timeout)
    except Exception as exc:  # any counter failure falls back to the estimate, by design
        log.warning("token counter failed (%s); using the estimate", type(exc).__name__)
        counted = None
    return ("provider", counted) if counted is not None else ("estimate", estimate)


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
    if part == SUMMARY:
        return "summary of earlier messages"
    kinds = []
    for block in message.content:
        if isinstance(block, ToolUseBlock):
            kinds.append(f"tool_use {block.name}")
        elif isinstance(block, ToolResultBlock):
            kinds.append(f"tool_result {tool_names.get(block.tool_use_id, '?')}")
        elif "text" not in kinds:
            kinds.append("text")
    return f"{label_of(part)} {message.role} · {', '.join(dict.fromkeys(kinds))}"


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
        text += (" · " if text else "") + _block_text(block)[:PREVIEW_CHARS]
    return preview(text)


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
