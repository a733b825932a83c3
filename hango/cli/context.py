"""``hango context show|exclude|include|replace|try|…``: the context inspector through the public API.

``calls``, ``call`` and ``diff`` (past calls) are printed by ``hango/cli/context_calls.py``.

``show`` prints the inspect response as a table (``--request``: the exact body
the agent's provider is sent). The change commands read the session's parts
(for the agent id, ranges, each part's ``target`` route and ``paired_with``
group, all decided by the server), then read the override set of each route
they touch with its ``ETag``, change it, and save the changed sets in one request
(``POST …/context/save``, each set with its ETag).
A part the session's next request does not hold is sent too, for the server to
refuse with its own message (exit 1). A command saves on both routes or on
neither: the server stores both sets in one transaction.
An agent-level change says how many sessions it applies to once saved. ``message:3..9`` (inclusive) names the session's messages in that range.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from functools import partial
from pathlib import Path
from typing import Any

from hango.cli import client
from hango.cli.client import ApiError, Client, ClientError, UsageError
from hango.cli.context_calls import diff_calls, list_calls, render_call, render_calls, render_diff, show_call
from hango.cli.context_parts import StoredSet, by_route, expand, known_parts, unknown_parts, with_pairs
from hango.cli.context_suggest import NOTHING_LOOKS_DEAD, render_compaction, render_suggestions
from hango.cli.context_table import (
    SAVED_FOR_AGENT,
    Choice,
    Style,
    render_full,
    render_snapshot,
    render_try,
    terminal_width,
)
from hango.cli.context_turn import AS_IS, next_call_figures, render_turn
from hango.cli.progress import follow, succeeded

EXCLUDE_HELP = "parts to leave out, e.g. system:todo tool:grep message:3 message:5..9"
INCLUDE_HELP = "parts to send this time although stored overrides leave them out"


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``hango context`` and its actions."""
    parser = commands.add_parser(
        "context", help="see and change what a session sends to the model (API client)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = _command(actions, "show", "print the session's next model request, part by part", show_context)
    what = show.add_mutually_exclusive_group()
    what.add_argument("--full", metavar="PART", help="print one part's whole content")
    what.add_argument(
        "--request", action="store_true", help="print the exact body the agent's provider is sent, as JSON"
    )
    rows = show.add_mutually_exclusive_group()
    rows.add_argument("--all", action="store_true", help="every part (default: a long group's largest)")
    rows.add_argument("--top", type=positive, metavar="N", help="only the N sent parts with the most tokens")
    show.add_argument(
        "--sort", choices=("order", "tokens"), default="order", help="rows as sent (default) or largest first"
    )
    for name, text, action in (
        ("exclude", "leave parts out of the session's next runs", exclude_parts),
        ("include", "remove parts' overrides (and their companions')", include_parts),
    ):
        _command(actions, name, text, action).add_argument("parts", nargs="+", metavar="PART")
    replace = _command(actions, "replace", "send a part with other text in the next runs", replace_part)
    replace.add_argument("part", metavar="PART")
    source = replace.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="the replacement text")
    source.add_argument("--file", type=Path, help="read the replacement from a file (- for stdin)")
    attempt = _command(actions, "try", "send one model call with parts left out; nothing is stored", try_call)
    attempt.add_argument(
        "--turn",
        action="store_true",
        help="run the whole turn with its tools on a scratch copy of the session (steps on stderr), "
        "then print the answer and the diffs it would have made",
    )
    attempt.add_argument(
        "--exclude", nargs="+", action="extend", default=[], metavar="PART", help=EXCLUDE_HELP
    )
    attempt.add_argument(
        "--include", nargs="+", action="extend", default=[], metavar="PART", help=INCLUDE_HELP
    )
    attempt.add_argument(
        "--replace",
        nargs="+",
        action="extend",
        default=[],
        type=replacement,
        metavar="PART=TEXT",
        help="send a part with other text this time, e.g. system:agent='Be terse.'",
    )
    attempt.add_argument("--message", help="a user message to append for this call")
    attempt.add_argument(
        "--defer",
        action="append",
        default=[],
        metavar="PART",
        help="a tool or server to defer this time (tool_search must find it), e.g. tool:grep tool:git/*",
    )
    attempt.add_argument(
        "--undefer",
        action="append",
        default=[],
        metavar="PART",
        help="a tool or server the agent defers, sent from the start this time",
    )
    suggest = _command(actions, "suggest", "list parts worth dropping, with what each saves", suggest_parts)
    suggest.add_argument("--apply", type=int, metavar="N", help="apply suggestion N of the list")
    compact = _command(actions, "compact", "summarize the session's older messages now", compact_now)
    compact.add_argument("--instructions", metavar="TEXT", help="what the summary should keep or drop")
    calls = _command(
        actions, "calls", "list the session's model calls: tokens, cost, cache verdict", list_calls
    )
    calls.add_argument("--limit", type=positive, default=100, help="the newest N calls (default 100)")
    call = _command(actions, "call", "print the parts one past call sent, and what changed since", show_call)
    call.add_argument("call", metavar="ID", help="a call id, or the start of one as `calls` prints it")
    compare = _command(
        actions, "diff", "what changed between two calls, and why the first change", diff_calls
    )
    compare.add_argument("a", metavar="A", help="a call id (or its start), or `last`: the latest run or try")
    compare.add_argument(
        "b", metavar="B", help="a call id (or its start), or `next`: the next call as inspect sees it"
    )


def positive(text: str) -> int:
    """A whole number of at least 1 (``--top``)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def replacement(text: str) -> tuple[str, str]:
    """``PART=TEXT`` as ``(part, text)``: the part id ends at the first ``=``."""
    part, equals, value = text.partition("=")
    if not equals or not part:
        raise argparse.ArgumentTypeError(f"{text!r} is not PART=TEXT, e.g. system:agent='Be terse.'")
    return part, value


def _command(
    actions: argparse._SubParsersAction, name: str, text: str, action: client.Action
) -> argparse.ArgumentParser:
    """A ``hango context`` action with ``--session`` and ``--json``."""
    parser = actions.add_parser(name, help=text, description=text)
    parser.add_argument("--session", required=True, type=session_id, help="the session's id")
    parser.add_argument("--json", action="store_true", help="print the server's JSON answer")
    parser.set_defaults(handler=partial(handle, action))
    return parser


def session_id(text: str) -> str:
    """A session id as the server spells it (a UUID); anything else is a usage error, not a 404."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a session id (a UUID): `hango sessions` lists them"
        ) from None


def handle(action: client.Action, args: argparse.Namespace) -> int:
    """Run one action through the shared client runner; a closed pipe (``| head``) ends quietly."""
    try:
        code = client.run(action, partial(_print, action, args), args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
    except BrokenPipeError:
        # Python would report the broken pipe again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


def _print(action: client.Action, args: argparse.Namespace, result: Any) -> None:
    for line in PRINTERS[action](result, args):
        print(line)


def inspect(api: Client, session: str, **params: str) -> Any:
    """``GET /v1/sessions/{id}/context``."""
    return api.request("GET", f"/v1/sessions/{session}/context", params=params)


def show_context(api: Client, args: argparse.Namespace) -> Any:
    """The inspect response, one part in full, or the request body."""
    if args.full:
        return inspect(api, args.session, full=args.full)
    if args.request:
        return inspect(api, args.session, format=inspect(api, args.session)["wire_format"])
    return inspect(api, args.session)


def show_lines(result: Any, args: argparse.Namespace) -> list[str]:
    """The table, one part's content, or the request as JSON."""
    if args.full:
        return render_full(result)
    if args.request:
        return [json.dumps(result, indent=2, ensure_ascii=False)]
    choice = Choice(every=args.all, top=args.top, order=args.sort)
    return render_snapshot(result, terminal_width(), Style.for_stream(sys.stdout), choice)


class Routes:
    """The override sets of one session's routes, each read once with its ``ETag``."""

    def __init__(self, api: Client, snapshot: dict[str, Any]) -> None:
        self.api = api
        self.snapshot = snapshot
        self._read: dict[str, tuple[StoredSet, str | None]] = {}
        self._written: dict[str, str | None] = {}
        self._scope: dict[str, Any] | None = None

    def path(self, route: str) -> str:
        """The agent's override route for ``agent``, the session's for ``session``."""
        if route == "agent":
            return f"/v1/agents/{self.snapshot['agent_id']}/context-overrides"
        return f"/v1/sessions/{self.snapshot['session_id']}/context-overrides"

    def read(self, route: str) -> StoredSet:
        """The route's stored set (companions included), read once."""
        if route not in self._read:
            body, headers = self.api.exchange("GET", self.path(route))
            self._read[route] = (StoredSet(body["overrides"]), headers.get("ETag"))
            if route == "agent":  # only the agent's set has a scope
                self._scope = body.get("scope")
        return self._read[route][0]

    def save(self, changes: dict[str, StoredSet]) -> dict[str, dict[str, Any]]:
        """Save every changed route's set in one request, each with its ``ETag``: all land or none does."""
        if not changes:
            return {}
        body = {
            route: {**overrides.body(), "if_match": self._read[route][1]}
            for route, overrides in changes.items()
        }
        session = self.snapshot["session_id"]
        try:
            saved = self.api.request("POST", f"/v1/sessions/{session}/context/save", body=body)
        except ApiError as exc:
            raise self._refused(exc, [r for r in ("agent", "session") if r in changes]) from exc
        return {route: saved[route] for route in changes}

    def _refused(self, exc: ApiError, routes: list[str]) -> Exception:
        """The server's refusal in the command's words; nothing was saved on any route."""
        nothing = "nothing was saved for the " + " or the ".join(routes)
        if exc.status == 403:
            return ClientError(
                f"you may not change agent {self.snapshot['agent_id']}: system and tool parts are the "
                f"agent's, changed only by its owner or a tenant admin; {nothing}. "
                "Leave them out of one call with `hango context try --exclude` instead"
            )
        if exc.status == 412:
            route = exc.details.get("route", "session") if isinstance(exc.details, dict) else "session"
            return ClientError(
                f"the {route}'s overrides changed while this command ran (someone else saved them); "
                f"{nothing}: run the command again"
            )
        return exc


def _parts(api: Client, session: str, specs: list[str]) -> tuple[dict[str, Any], list[str]]:
    snapshot = inspect(api, session)
    return snapshot, expand(specs, known_parts(snapshot))


def exclude_parts(api: Client, args: argparse.Namespace) -> dict[str, Any]:
    """Exclude parts; the server pulls in their tool pair companions."""
    snapshot, parts = _parts(api, args.session, args.parts)
    routes, changes, already = Routes(api, snapshot), {}, []
    for route, chosen in by_route(snapshot, parts):
        before = routes.read(route)
        if before.excludes(chosen):
            already += chosen
        else:
            changes[route] = before.with_excluded(chosen)
    saved = routes.save(changes)
    companions = [
        p
        for route in saved
        for p in saved[route]["added"]
        if p not in routes.read(route).parts() and p not in parts
    ]
    return {
        "excluded": [p for p in parts if p not in already],
        "already": [p for p in parts if p in already],
        "companions": companions,
        "scope": _scope_of(saved),
        "saved": saved,
    }


def include_parts(api: Client, args: argparse.Namespace) -> dict[str, Any]:
    """Remove the parts' overrides and those of every part they pair with.

    A part the next request does not hold has no override to remove; the server
    is asked about it first (its answer is the error), so nothing is saved.
    """
    snapshot, parts = _parts(api, args.session, args.parts)
    for part in unknown_parts(snapshot, parts):
        inspect(api, args.session, full=part)
    routes, changes, freed = Routes(api, snapshot), {}, []
    for route, chosen in by_route(snapshot, parts):
        before = routes.read(route)
        released = [p for p in with_pairs(chosen, snapshot) if p in before.parts()]
        if released:
            changes[route] = before.without(released)
        freed += released
    saved = routes.save(changes)
    return {
        "included": [p for p in parts if p in freed],
        "released": [p for p in known_parts(snapshot) if p in freed and p not in parts],
        "unchanged": [p for p in parts if p not in freed],
        "scope": _scope_of(saved),
        "saved": saved,
    }


def replace_part(api: Client, args: argparse.Namespace) -> dict[str, Any]:
    """Save a replace override on one part."""
    text = _replacement(args)
    snapshot = inspect(api, args.session)
    routes = Routes(api, snapshot)
    [(route, _)] = by_route(snapshot, [args.part])
    before = routes.read(route)
    saved = routes.save({route: before.with_replaced(args.part, text)})
    return {"replaced": [args.part], "scope": _scope_of(saved), "saved": saved}


def scope_text(scope: dict[str, Any] | None) -> str:
    """``applies to 14 sessions of Demo agent``: the server's count of what an agent-level set reaches."""
    if not scope:
        return "applies to the agent's sessions"
    count = scope["sessions"]
    return (
        f"applies to {count} session{'' if count == 1 else 's'} of {scope.get('agent_name') or 'the agent'}"
    )


def _scope_of(saved: dict[str, Any]) -> list[str]:
    """The saved agent set's scope, as the one line the printers show (none for session-only changes)."""
    return [scope_text(saved["agent"].get("scope"))] if "agent" in saved else []


def _replacement(args: argparse.Namespace) -> str:
    if args.text is not None:
        return args.text
    try:
        return sys.stdin.read() if str(args.file) == "-" else args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the replacement from {args.file}: {exc}") from exc


def try_call(api: Client, args: argparse.Namespace) -> Any:
    """One model call with the stored overrides and these changes; nothing is stored.

    The session's parts are read only to expand ranges; the server brings an
    included part's tool pair companions along.
    """
    wanted = [*args.exclude, *args.include]
    known = known_parts(inspect(api, args.session)) if any(".." in s for s in wanted) else []
    body = {"exclude": expand(args.exclude, known), "include": expand(args.include, known)}
    if args.replace:
        body["replace"] = dict(args.replace)
    if args.message is not None:
        body["message"] = args.message
    if args.defer or args.undefer:
        body |= {"defer": args.defer, "undefer": args.undefer}
    if not args.turn:
        return api.request("POST", f"/v1/sessions/{args.session}/context/try", body=body)
    # the A/B's other column: the session's next call as it stands, read before the try is queued
    as_is = None if args.json else next_call_figures(inspect(api, args.session))
    queued = api.request("POST", f"/v1/sessions/{args.session}/context/try", body={**body, "mode": "turn"})
    ended = succeeded(follow(api, queued))
    return ended if as_is is None else {**ended, AS_IS: as_is}


def render_try_or_turn(result: dict[str, Any], _args: argparse.Namespace) -> list[str]:
    """A one-call try's answer, or an ended try run's turn (``--turn``)."""
    if result.get("kind") == "try":
        return render_turn(result, terminal_width())
    return render_try(result, terminal_width())


def suggest_parts(api: Client, args: argparse.Namespace) -> dict[str, Any]:
    """The ranked suggestions; with ``--apply N``, suggestion N applied as an override PUT (a compaction, or
    for ``defer_server`` the agent's deferral PATCHed)."""
    found = api.request("GET", f"/v1/sessions/{args.session}/context/suggestions")
    if args.apply is None:
        return found
    items = found["suggestions"]
    if not items:
        raise UsageError(f"--apply {args.apply}: there are no suggestions to apply ({NOTHING_LOOKS_DEAD})")
    if not 1 <= args.apply <= len(items):
        numbers = "1" if len(items) == 1 else f"1 to {len(items)}"
        raise UsageError(f"--apply takes a suggestion's number from the list: {numbers}, not {args.apply}")
    chosen = items[args.apply - 1]
    if chosen["kind"] == "would_compact":
        return {"applied": chosen, "compacted": _compact(api, args.session, None)}
    if chosen["target"] == "defer":  # the agent's deferral, as the suggestion gives it whole
        changed = api.request("PATCH", f"/v1/agents/{found['agent_id']}", body=chosen["apply"])
        return {"applied": chosen, "defer": changed["defer"]}
    routes = Routes(api, found)
    before = routes.read(chosen["target"])
    target = chosen["target"]
    saved = routes.save({target: before.with_excluded(chosen["parts"])})
    return {"applied": chosen, "saved": saved[target], "scope": _scope_of(saved)}


def _compact(api: Client, session: str, instructions: str | None) -> Any:
    """Queue the compaction and follow its run to its end (steps on stderr); its figures."""
    body = {"instructions": instructions} if instructions else {}
    queued = api.request("POST", f"/v1/sessions/{session}/compact", body=body)
    return succeeded(follow(api, queued))["result"]


def compact_now(api: Client, args: argparse.Namespace) -> Any:
    """One compaction now, with the user's focus."""
    return _compact(api, args.session, args.instructions)


EXCLUDE_SAYS = (
    ("excluded", "excluded {}"),
    ("companions", "pulled in as tool pair companions: {}"),
    ("already", "already excluded: {}"),
    ("scope", SAVED_FOR_AGENT),
)
INCLUDE_SAYS = (
    ("included", "included {}"),
    ("released", "released tool pair companions: {}"),
    ("unchanged", "no override to remove: {}"),
    ("scope", SAVED_FOR_AGENT),
)
REPLACE_SAYS = (
    ("replaced", "replaced {}: the next runs send the new text"),
    ("scope", SAVED_FOR_AGENT),
)


def said(
    phrases: tuple[tuple[str, str], ...], result: dict[str, Any], _args: argparse.Namespace
) -> list[str]:
    """One line for each non-empty list of part ids in ``result``, in the words of ``phrases``."""
    return [text.format(", ".join(result[key])) for key, text in phrases if result[key]]


PRINTERS = {
    show_context: show_lines,
    exclude_parts: partial(said, EXCLUDE_SAYS),
    include_parts: partial(said, INCLUDE_SAYS),
    replace_part: partial(said, REPLACE_SAYS),
    try_call: render_try_or_turn,
    suggest_parts: lambda result, _args: render_suggestions(result, terminal_width()),
    compact_now: lambda result, _args: render_compaction(result, terminal_width()),
    list_calls: lambda result, _args: render_calls(result, terminal_width()),
    show_call: lambda result, _args: render_call(result, terminal_width()),
    diff_calls: lambda result, _args: render_diff(result, terminal_width()),
}
