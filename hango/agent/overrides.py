"""Context overrides: exclude or replace parts of the outgoing request, never the stored history.

A set of overrides must leave a valid request. ``close_set`` pulls in the
tool_use/tool_result companions of every excluded message (``paired_from``
names the part that pulled them in) and rejects, with a reason, a set that
would leave no user message or a history that starts with an assistant message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from hango.agent.parts import (
    AGENT_KINDS,
    MalformedPart,
    PartID,
    SourcedBlock,
    SourcedMessage,
    in_part_order,
    kind_of,
    part_key,
    target_of,
)
from hango.agent.validate import paired_with_previous, validate_history
from hango.errors import Unprocessable
from hango.messages import Block, Message, TextBlock

EXCLUDE, REPLACE = "exclude", "replace"
SESSION_KINDS = frozenset({"message", "summary"})
MAX_REPLACEMENT = 200_000


@dataclass(frozen=True)
class Override:
    part: PartID
    action: str
    replacement: str | None = None
    paired_from: PartID | None = None


class OverrideRejected(Unprocessable):
    """An override set that would break the request; ``code`` says which rule, ``details`` which parts."""

    def __init__(self, code: str, message: str, parts: Iterable[PartID]) -> None:
        super().__init__(message, code=code, details={"reason": code, "parts": in_part_order(parts)})


@dataclass(frozen=True)
class Overrides:
    """The overrides one model call sees: the agent's (system, tools) and the session's (messages, summary)."""

    agent: dict[PartID, Override] = field(default_factory=dict)
    session: dict[PartID, Override] = field(default_factory=dict)

    @classmethod
    def of(cls, agent: Iterable[Override], session: Iterable[Override]) -> Overrides:
        return cls({o.part: o for o in agent}, {o.part: o for o in session})

    def __len__(self) -> int:
        return len(self.agent) + len(self.session)

    def get(self, part: PartID) -> Override | None:
        return self.agent.get(part) or self.session.get(part)

    def excludes(self, part: PartID) -> bool:
        """True when an override drops ``part`` from the request (a replace keeps it)."""
        override = self.get(part)
        return override is not None and override.action == EXCLUDE

    def excluded_tools(self) -> frozenset[str]:
        return frozenset(p.removeprefix("tool:") for p, o in self.agent.items() if p.startswith("tool:"))

    def agent_only(self) -> Overrides:
        """What a subagent sees: its history is its own, so no session overrides."""
        return Overrides(self.agent, {})


def check_override(override: Override, target: str) -> None:
    """Reject a malformed override for ``target`` (``agent`` or ``session``) with its reason code."""
    part = override.part
    kind = _kind(part)
    kinds = AGENT_KINDS if target == "agent" else SESSION_KINDS
    if kind not in kinds:
        route = "session" if target == "agent" else "agent"
        raise OverrideRejected("wrong_target", f"{part} is overridden on the {route}'s route", [part])
    if override.action == REPLACE and kind == "tool":
        message = "a tool's schema cannot be replaced: it must match the tool's argument validation"
        raise OverrideRejected("replace_not_allowed_for_tools", message, [part])
    if override.action == REPLACE and not (override.replacement or "").strip():
        # a blank text block is rejected by the provider APIs, so it is no replacement at all
        raise OverrideRejected(
            "replacement_required", f"replace on {part} needs a non-blank replacement", [part]
        )
    if override.action == EXCLUDE and override.replacement is not None:
        raise OverrideRejected("replacement_not_allowed", f"exclude on {part} takes no replacement", [part])


def screen(
    overrides: Sequence[Override],
    present: Iterable[PartID],
    stored: Iterable[PartID],
    target: str | None = None,
) -> dict[PartID, Override]:
    """The explicit overrides by part, after every rule a PUT and a try share (one check, both routes).

    Each part must be well formed and name a part of the next request
    (``present``) or one the stored set already holds (``stored``: it may be
    stale) — checked first, so a part that does not exist is called unknown on
    any route that sees its kind (the agent's route sees no message or summary
    parts: there such a part is a wrong target). Then each override must suit
    ``target`` (a try has none: each part goes to its own set), and no part may
    appear twice (an exclude and a replace of one part included).
    """
    known = set(present) | set(stored)
    seen = AGENT_KINDS if target == "agent" else AGENT_KINDS | SESSION_KINDS
    unknown = [
        o.part for o in overrides if o.paired_from is None and o.part not in known and _kind(o.part) in seen
    ]
    if unknown:
        message = "these parts are not in the session's next request: " + ", ".join(in_part_order(unknown))
        raise OverrideRejected("unknown_part", message, unknown)
    for override in overrides:
        check_override(override, target or target_of(override.part))
    return distinct(overrides)


def _kind(part: PartID) -> str:
    """The part's kind; a malformed id is rejected with ``malformed_part``."""
    try:
        return kind_of(part)
    except MalformedPart:
        raise OverrideRejected("malformed_part", f"{part!r} is not a part id", [part]) from None


def apply_system(blocks: Sequence[SourcedBlock], overrides: Overrides) -> list[SourcedBlock]:
    """Drop excluded system blocks and swap the text of replaced ones."""
    out = []
    for sourced in blocks:
        override = overrides.agent.get(sourced.part)
        if override is None:
            out.append(sourced)
        elif override.action == REPLACE:
            out.append(replace(sourced, block=Block(override.replacement)))
    return out


def apply_messages(
    messages: Sequence[SourcedMessage], overrides: dict[PartID, Override]
) -> list[SourcedMessage]:
    """Drop excluded messages; a replace swaps a message's text blocks, its tool blocks stay."""
    out = []
    for sourced in messages:
        override = overrides.get(sourced.part)
        if override is None:
            out.append(sourced)
        elif override.action == REPLACE:
            out.append(replace(sourced, message=replaced_text(sourced.message, override.replacement)))
    return out


def replaced_text(message: Message, text: str) -> Message:
    """``message`` with its text blocks replaced by one block holding ``text`` (where the first one was)."""
    content, placed = [], False
    for block in message.content:
        if not isinstance(block, TextBlock):
            content.append(block)
        elif not placed:
            content.append(TextBlock(text))
            placed = True
    return replace(message, content=tuple(content))


def companions(messages: Sequence[SourcedMessage]) -> dict[PartID, tuple[PartID, ...]]:
    """For each message part, every part sent or left out with it: its tool pairs, transitively.

    Pairs only link neighbours, so each group is a run of consecutive linked
    messages; the tuples are in part order and leave the part itself out (a
    message paired with nothing shares the empty tuple).
    """
    groups: list[list[PartID]] = []
    for sourced, linked in zip(messages, paired_with_previous([m.message for m in messages]), strict=True):
        if linked:
            groups[-1].append(sourced.part)
        else:
            groups.append([sourced.part])
    out: dict[PartID, tuple[PartID, ...]] = {}
    for group in groups:
        for part in group:
            out[part] = tuple(p for p in group if p != part) if len(group) > 1 else ()
    return out


def close_set(
    chosen: dict[PartID, Override],
    messages: Sequence[SourcedMessage],
    *,
    strict: bool = False,
    already: Iterable[PartID] = (),
) -> tuple[list[Override], list[PartID]]:
    """The session set closed under pairing, and the companions it newly pulled in; rejects an invalid set.

    ``chosen`` is the screened explicit set. A stored set answers only for the
    problems it brings in (an empty session has no user message yet);
    ``strict`` — a call about to be sent — rejects any problem of the filtered
    history. A companion already excluded before (``already``) is not new.
    """
    chosen = dict(chosen)
    present = {m.part: m for m in messages}
    for o in chosen.values():
        if o.action == REPLACE and o.part in present and not _has_text(present[o.part].message):
            raise OverrideRejected("replace_needs_text", f"{o.part} holds no text to replace", [o.part])
    added: list[PartID] = []
    groups = companions(messages)
    for origin in [o.part for o in chosen.values() if o.action == EXCLUDE]:
        for part in groups.get(origin, ()):
            if part not in chosen or chosen[part].action != EXCLUDE:
                chosen[part] = Override(part, EXCLUDE, None, origin)
                added.append(part)
    _check_history(messages, chosen, strict)
    before = set(already)
    return sorted(chosen.values(), key=lambda o: part_key(o.part)), in_part_order(
        p for p in added if p not in before
    )


def distinct(overrides: Iterable[Override]) -> dict[PartID, Override]:
    """The explicit overrides by part (companions sent back are dropped: they are recomputed)."""
    chosen: dict[PartID, Override] = {}
    for o in overrides:
        if o.paired_from is not None:
            continue
        if o.part in chosen:
            raise OverrideRejected("duplicate_part", f"{o.part} appears more than once", [o.part])
        chosen[o.part] = o
    return chosen


def _has_text(message: Message) -> bool:
    return any(isinstance(b, TextBlock) for b in message.content)


def _check_history(messages: Sequence[SourcedMessage], chosen: dict[PartID, Override], strict: bool) -> None:
    """Reject the first problem of the filtered history (unless not strict and the history had it already)."""
    kept = apply_messages(messages, chosen)
    problems = validate_history([m.message for m in kept])
    if problems and not strict:
        own = {p.code for p in validate_history([m.message for m in messages])}
        problems = [p for p in problems if p.code not in own]
    if not problems:
        return
    problem = problems[0]
    culprits = [p for p, o in chosen.items() if o.action == EXCLUDE]
    if problem.code == "starts_with_assistant" and kept:
        culprits = [p for p in chosen if _seq_or_zero(p) < _seq_or_zero(kept[0].part)] or culprits
    raise OverrideRejected(problem.code, problem.message, culprits)


def _seq_or_zero(part: PartID) -> int:
    return int(part.removeprefix("message:")) if part.startswith("message:") else 0
