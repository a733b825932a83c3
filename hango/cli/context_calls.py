"""``hango context calls|call|diff``: past model calls, their cost and cache verdicts, as the server computed them.

``calls`` prints one line per call (newest first) and the session's cost;
``call ID`` the parts one call sent, marked where they changed since the
previous call, with each part's cost on the call and in total so far; ``diff A B`` the first difference between two calls and its
cause, then the parts added, removed and changed. A call is named by its id or
by the 8-character start that ``calls`` prints.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from hango.cli.client import Client, UsageError
from hango.cli.context_table import fit, visible, wrap
from hango.cli.money import money, priced
from hango.messages import prompt_tokens

PURPOSES = {"context_try": "try"}
SINCE = {"added": "+", "changed": "~", "same": " ", None: " "}
HEADER = ("call", "time", "purpose", "est/input", "read", "write", "uncached", "out", "cost", "cache")
WIDTHS = (6, 8, 9, 11, 5, 5, 8, 5, 9)  # with the badge (at most 5), 80 columns
WORDS_FROM = 24  # the verdict in words once this many columns are left for it, its badge before
PAGE = 1000


def row_cells(call: dict[str, Any]) -> tuple[str, ...]:
    usage = call["usage"]
    estimated = call["estimated_input_tokens"]
    sent = prompt_tokens(usage)
    return (
        call["id"][: WIDTHS[0]],
        call["started_at"][11:19],
        PURPOSES.get(call["purpose"], call["purpose"]),
        f"{'-' if estimated is None else estimated}/{sent}",
        str(usage["cache_read_tokens"]),
        str(usage["cache_write_tokens"]),
        str(usage["input_tokens"]),
        str(usage["output_tokens"]),
        money(call["cost"]["usd"]),
    )


def line(cells: tuple[str, ...], cache: dict[str, str], width: int) -> str:
    """The fixed columns (text left, figures right), then the verdict: in words where they fit, else its badge."""
    placed = [
        cell.ljust(size) if index < 3 else cell.rjust(size)
        for index, (cell, size) in enumerate(zip(cells, WIDTHS, strict=True))
    ]
    start = " ".join(placed)
    room = max(1, width - len(start) - 1)
    return (
        start + " " + fit(visible(cache["words"] if room >= WORDS_FROM else cache["badge"]), room)
    ).rstrip()


def render_calls(result: dict[str, Any], width: int) -> list[str]:
    """One line per call, then the session's cost."""
    calls, cost = result["calls"], result["cost"]
    if not calls:
        return ["no model calls in this session yet"]
    header = {"badge": HEADER[-1], "words": HEADER[-1]}
    lines = [line(HEADER[:-1], header, width)]
    lines += [line(row_cells(call), call["cache"], width) for call in calls]
    said = f"{cost['calls']} calls, {priced(cost['usd'], cost.get('simulated_at'))}"
    if cost["priced_calls"] < cost["calls"]:
        said += f" for {cost['priced_calls']} priced; unpriced: {cost['unpriced_reason']}"
    return lines + wrap(said, width)


def render_call(call: dict[str, Any], width: int) -> list[str]:
    """A call's figures, then each part as sent: + added, ~ changed since the previous call.

    Each part shows its cost on this call and in total so far (over every call of the
    session it rode in), as the server summed them.
    """
    cells = row_cells(call)
    usage, estimated = call["usage"], call["estimated_input_tokens"]
    lines = wrap(f"call {call['id']} · {cells[2]}", width)
    cost = priced(call["cost"]["usd"], call["cost"].get("simulated_at"))
    lines += wrap(f"{call['model']} · {call['started_at'][:19].replace('T', ' ')} · cost {cost}", width)
    # One figure a phrase and at most three phrases a line: 80 columns hold them up to millions of tokens.
    estimate = "-" if estimated is None else f"{estimated:,}"
    reported = f"{prompt_tokens(usage):,} reported"
    lines += wrap(f"input {estimate} estimated · {reported} · out {usage['output_tokens']:,}", width)
    lines += wrap(
        f"cache read {usage['cache_read_tokens']:,} · cache write {usage['cache_write_tokens']:,}"
        f" · uncached {usage['input_tokens']:,}",
        width,
    )
    lines += wrap(f"cache {call['cache']['badge']}: {call['cache']['words']}", width)
    # a part's share is millionths of a dollar: ``$0.0000375`` (the one rule's four digits) is 10 columns
    lines.append(f"  {'part':<28} {'tokens':>7} {'this call':>10} {'so far':>10}".rstrip())
    for part in call["parts"]:
        mark = SINCE[part["since_previous"]]
        so_far = part["cost_so_far"]
        shown = part["label"] if part["preview"] is None else f"{part['label']}: {part['preview']}"
        if part["changed_since_call"]:
            shown += " (changed since this call)"
        if part.get("server"):  # an MCP tool's server, beside it (its id may be cut)
            shown = f"server {part['server']} · {shown}"
        start = (
            f"{mark} {part['id'][:28]:<28} {part['tokens']:>7,} {money(part['cost_usd']):>10} "
            f"{money(so_far and so_far['usd']):>10}"
        )
        lines.append((start + " " + fit(visible(shown), max(1, width - len(start) - 1))).rstrip())
    if call["removed_since_previous"]:
        lines += wrap(f"- no longer sent: {', '.join(call['removed_since_previous'])}", width)
    return lines


def render_diff(result: dict[str, Any], width: int) -> list[str]:
    """The first difference and its cause, the shared prefix, then the changed parts."""
    first = result["first_difference"]
    prefix = result["common_prefix"]
    lines = wrap(f"from {result['from']} to {result['to']}", width)
    if first is None:
        return lines + wrap("the two calls send the same parts", width)
    lines += wrap(f"first difference: {first['words']}", width)
    lines += wrap(f"shared prefix: {prefix['parts']} parts, {prefix['tokens']:,} tokens", width)
    for name in ("added", "removed", "changed"):
        if result[name]:
            lines += wrap(f"{name}: {', '.join(result[name])}", width)
    return lines


def list_calls(api: Client, args: argparse.Namespace) -> dict[str, Any]:
    """``GET …/calls`` (one page of ``--limit``, newest first) and ``GET …/cost``."""
    route = f"/v1/sessions/{args.session}"
    page = api.request("GET", f"{route}/calls", params={"limit": args.limit})
    return {
        "calls": page["items"],
        "next_cursor": page["next_cursor"],
        "cost": api.request("GET", f"{route}/cost"),
    }


def resolve(api: Client, session: str, name: str) -> str:
    """A call id from a full id (the server judges it) or the start of one (looked up in the listing)."""
    try:
        return str(uuid.UUID(name))
    except ValueError:
        pass
    found, cursor = [], None
    while True:
        page = api.request("GET", f"/v1/sessions/{session}/calls", params={"limit": PAGE, "cursor": cursor})
        found += [c["id"] for c in page["items"] if c["id"].startswith(name.lower())]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    if not found:
        raise UsageError(f"no call of this session starts with {name!r}: `hango context calls` lists them")
    if len(found) > 1:
        raise UsageError(
            f"{len(found)} calls of this session start with {name!r}: {', '.join(found)}; give more of the id"
        )
    return found[0]


def show_call(api: Client, args: argparse.Namespace) -> dict[str, Any]:
    """``GET …/calls/{id}``."""
    call = resolve(api, args.session, args.call)
    return api.request("GET", f"/v1/sessions/{args.session}/calls/{call}")


def diff_calls(api: Client, args: argparse.Namespace) -> dict[str, Any]:
    """``GET …/context/diff?from=A&to=B`` (``last`` and ``next`` as the server reads them)."""
    ends = [
        name if name in ("last", "next") else resolve(api, args.session, name) for name in (args.a, args.b)
    ]
    return api.request(
        "GET", f"/v1/sessions/{args.session}/context/diff", params={"from": ends[0], "to": ends[1]}
    )
