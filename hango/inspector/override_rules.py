"""The rules an override set must pass before it is saved or tried: it must leave a valid request.

``screen`` checks each override (a known, well-formed part on the right route);
``close_set`` pulls in the tool_use/tool_result companions of every excluded
message (``paired_from`` names the part that pulled them in) and rejects, with a
reason, a set that would leave no user message or a history that starts with an
assistant message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hango.agent.assembly import capture
from hango.agent.chain import Chain
from hango.agent.draft import Draft
from hango.agent.overrides import EXCLUDE, REPLACE, Override, Overrides, apply_messages
from hango.agent.parts import (
    AGENT_KINDS,
    SESSION_KINDS,
    MalformedPart,
    PartID,
    SourcedMessage,
    in_part_order,
    kind_of,
    message_seq,
    part_key,
    target_of,
)
from hango.agent.state import RunState
from hango.agent.validate import paired_with_previous, validate_history
from hango.errors import Unprocessable
from hango.inspector.inspection import parts_of
from hango.messages import holds_text

MAX_REPLACEMENT = 200_000


class OverrideRejected(Unprocessable):
    """An override set that would break the request; ``code`` says which rule, ``details`` which parts."""

    def __init__(self, code: str, message: str, parts: Iterable[PartID]) -> None:
        super().__init__(message, code=code, details={"reason": code, "parts": in_part_order(parts)})


@dataclass(frozen=True)
class Screened:
    """A proposed set screened on the next request: that request without overrides, and the set by part."""

    draft: Draft
    chosen: dict[PartID, Override]


def validate_set(
    chain: Chain,
    state: RunState,
    wanted: Sequence[Override],
    stored: Iterable[PartID],
    target: str | None = None,
) -> Screened:
    """Screen ``wanted`` on ``state``'s next request as it is without overrides (a PUT and a try alike).

    ``stored`` names the parts the stored set holds (they may be stale);
    ``target`` is the route (``agent`` or ``session``), None for a try.
    """
    draft = capture(chain, dataclasses.replace(state, overrides=Overrides()))
    return Screened(draft, screen(wanted, parts_of(draft), stored, target))


def closed_for_put(
    screened: Screened, target: str, already: Iterable[PartID]
) -> tuple[list[Override], list[PartID]]:
    """The set a PUT stores, and the companions it newly pulled in (an agent's set has no pairs)."""
    if target == "agent":
        return sorted(screened.chosen.values(), key=lambda o: part_key(o.part)), []
    return close_set(screened.chosen, screened.draft.messages, already=already)


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
    strays = [o.part for o in overrides if o.paired_from is not None and o.paired_from not in known]
    if strays:  # a companion sent back is recomputed, but one naming no part of the request is a mistake
        message = "paired_from names a part the request does not hold: " + ", ".join(in_part_order(strays))
        raise OverrideRejected("unknown_paired_from", message, strays)
    for override in overrides:
        check_override(override, target or target_of(override.part))
    return distinct(overrides)


def _kind(part: PartID) -> str:
    """The part's kind; a malformed id is rejected with ``malformed_part``."""
    try:
        return kind_of(part)
    except MalformedPart:
        raise OverrideRejected("malformed_part", f"{part!r} is not a part id", [part]) from None


def companions(messages: Sequence[SourcedMessage]) -> dict[PartID, tuple[PartID, ...]]:
    """Each message part paired with others, mapped to every part sent or left out with it: its tool
    pairs, transitively.

    Pairs only link neighbours, so each group is a run of consecutive linked
    messages; the tuples are in part order and leave the part itself out. A part
    paired with nothing (most are) has no entry: ``.get(part, ())``.
    """
    linked = paired_with_previous([m.message for m in messages])
    out: dict[PartID, tuple[PartID, ...]] = {}
    start = 0
    for index in range(1, len(messages) + 1):
        if index < len(messages) and linked[index]:
            continue
        if index - start > 1:  # messages[start:index] is one group of two or more
            group = [m.part for m in messages[start:index]]
            for part in group:
                out[part] = tuple(p for p in group if p != part)
        start = index
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
        if o.action == REPLACE and o.part in present and not holds_text(present[o.part].message):
            raise OverrideRejected("replace_needs_text", f"{o.part} holds no text to replace", [o.part])
    added: list[PartID] = []
    origins = [o.part for o in chosen.values() if o.action == EXCLUDE]
    groups = companions(messages) if origins else {}  # only an excluded part pulls companions in
    for origin in origins:
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


def _check_history(messages: Sequence[SourcedMessage], chosen: dict[PartID, Override], strict: bool) -> None:
    """Reject the first problem of the filtered history (unless not strict and the history had it already)."""
    kept = apply_messages(messages, chosen) if chosen else messages
    problems = validate_history([m.message for m in kept])
    if problems and not strict:
        own = {p.code for p in validate_history([m.message for m in messages])}
        problems = [p for p in problems if p.code not in own]
    if not problems:
        return
    problem = problems[0]
    culprits = [p for p, o in chosen.items() if o.action == EXCLUDE]
    if problem.code == "starts_with_assistant" and kept:
        first = message_seq(kept[0].part) or 0
        culprits = [p for p in chosen if (message_seq(p) or 0) < first] or culprits
    raise OverrideRejected(problem.code, problem.message, culprits)
