"""Property: the price shown before a change is the verdict seen after it, on the offline default.

Random sequences of saving and undoing overrides on system, tool, server and message parts,
attaching and detaching an MCP server (the reference ``mcp-server-time``), runs, and waits past
the cache lifetime (simulated: the session's calls are moved back in time). Before each run,
inspect's and the preview's predicted cache read and write for the next call equal, token for
token, what the call then reports (its write less the run's own user message, sent after the
prediction); each previewed change's cache price is inspect's expected read before it less the
one after it (a change that restores the cache shows a gain), and inspect after saving shows
what the preview showed.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from hango.agent.ledger.verdict import rules_for
from tests.inspector.conftest import OFFLINE, Lab, assistant, user
from tests.support.mcp import attach
from tests.support.queue import finished_in_process

SERVER = "tool:time/*"
# (route, part, replacement or None for an exclude)
OVERRIDES = (
    ("agent", "system:agent", "Be brief."),
    ("agent", "tool:grep", None),
    ("agent", SERVER, None),
    ("session", "message:2", "a shorter answer"),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(("save", "undo")), st.sampled_from(OVERRIDES)),
        st.tuples(st.sampled_from(("attach", "detach", "run", "wait")), st.none()),
    ),
    min_size=2,
    max_size=7,
)
PROPERTY = settings(
    max_examples=int(os.environ.get("HANGO_PROPERTY_EXAMPLES", "4")),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PAST_THE_LIFETIME = rules_for("offline").ttl_seconds + 60


class Walk:
    """One example: an offline agent's session, its override sets, and its time server."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.agent = lab.agent(model=OFFLINE)
        self.session = lab.session(self.agent, [user("hello"), assistant("a long answer " * 40)])
        self.sets: dict[str, dict[str, dict[str, Any]]] = {"agent": {}, "session": {}}
        self.server: str | None = None
        self.attached = False

    def path(self, route: str) -> str:
        owner = self.agent if route == "agent" else self.session
        return f"/v1/{route}s/{owner}/context-overrides"

    def proposal(self, route: str, part: str, replacement: str | None, keep: bool) -> dict[str, Any]:
        wanted = {p: o for p, o in self.sets[route].items() if p != part}
        if keep:
            action = (
                {"action": "exclude"}
                if replacement is None
                else {"action": "replace", "replacement": replacement}
            )
            wanted[part] = {"part": part, **action}
        return {"overrides": list(wanted.values())}

    def change(self, route: str, part: str, replacement: str | None, keep: bool) -> None:
        """Preview the change, check its price, save it, and check inspect sees what the preview showed."""
        body = self.proposal(route, part, replacement, keep)
        before = self.lab.inspect(self.session)["cache"]["expected_read_tokens"]
        shown = self.lab.who.post(f"/v1/sessions/{self.session}/context/preview", json={route: body})
        if shown.status_code == 422:  # refused (a server's part while it is detached): the save is too
            assert self.lab.who.put(self.path(route), json=body).status_code == 422
            return
        assert shown.status_code == 200, shown.get_json()
        answer = shown.get_json()
        after = answer["cache"]["expected_read_tokens"]
        if not (keep and replacement is None):  # nothing left out: the price is the outlook difference
            assert answer["pending"]["cache_loss_tokens"] == before - after
        saved = self.lab.who.put(self.path(route), json=body)
        assert saved.status_code == 200, saved.get_json()
        self.sets[route] = {o["part"]: _wanted(o) for o in saved.get_json()["overrides"]}
        assert predicted(self.lab.inspect(self.session)) == predicted(answer)

    def attach_server(self) -> None:
        if self.server is None:
            listed = self.lab.who.get("/v1/mcp-servers").get_json()["items"]
            known = [s["id"] for s in listed if s["name"] == "time"]
            if not known:  # the tenant's first example registers it; later ones attach the same server
                self.server = attach(self.lab.who, self.agent, "time", catalog="time")["id"]
                self.attached = True
                return
            self.server = known[0]
        put = self.lab.who.put(f"/v1/agents/{self.agent}/mcp-servers/{self.server}", json={"tools": None})
        assert put.status_code == 200, put.get_json()
        self.attached = True

    def detach_server(self) -> None:
        if self.attached:
            path = f"/v1/agents/{self.agent}/mcp-servers/{self.server}"
            assert self.lab.who.delete(path).status_code == 204
            self.attached = False

    def wait(self) -> None:
        """Past the cache lifetime, in simulated time: every call of the session ended that much earlier."""
        with self.lab.engine.begin() as conn:
            conn.execute(
                sa.text(
                    "update model_calls set started_at = started_at - make_interval(secs => :s) where session_id = :id"
                ),
                {"s": PAST_THE_LIFETIME, "id": uuid.UUID(self.session)},
            )

    def run(self, turn: int) -> None:
        """One turn (one call): inspect's and the preview's prediction first, then the call's report."""
        queued = self.lab.who.post(f"/v1/sessions/{self.session}/messages", json={"content": f"turn {turn}"})
        assert queued.status_code == 202, queued.get_json()
        body = self.lab.inspect(self.session)
        inspected = predicted(body)
        stored = {route: {"overrides": list(self.sets[route].values())} for route in ("agent", "session")}
        previewed = self.lab.who.post(f"/v1/sessions/{self.session}/context/preview", json=stored)
        assert previewed.status_code == 200, previewed.get_json()
        finished = finished_in_process(self.lab.who, queued)
        assert finished.status_code == 201, finished.body
        (call,) = self.lab.who.get(f"/v1/sessions/{self.session}/calls?limit=1").get_json()["items"]
        # the run's own user message is sent after the prediction: written on top of what was foreseen
        appended = call["estimated_input_tokens"] - body["total_after"]
        reported = {
            "read": call["usage"]["cache_read_tokens"],
            "write": call["usage"]["cache_write_tokens"] - appended,
        }
        assert inspected == predicted(previewed.get_json()) == reported, call["cache"]


def _wanted(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored override as a PUT names it again (companions included, as the server closed the set)."""
    found = {"part": stored["part"], "action": stored["action"]}
    if stored.get("replacement") is not None:
        found["replacement"] = stored["replacement"]
    if stored.get("paired_from") is not None:
        found["paired_from"] = stored["paired_from"]
    return found


def predicted(body: dict[str, Any]) -> dict[str, int]:
    """The next call's predicted cache read and write: the verdict's expected read and the cost's stretches."""
    tokens = body["next_call_cost"]["tokens"]
    assert tokens["cache_read"] == body["cache"]["expected_read_tokens"]
    return {"read": tokens["cache_read"], "write": tokens["cache_write"]}


@PROPERTY
@given(steps=STEPS)
def test_the_price_shown_before_a_change_is_the_verdict_seen_after_it(lab: Lab, steps) -> None:
    walk = Walk(lab)
    for turn, (step, override) in enumerate([*steps, ("run", None)]):
        if step in ("save", "undo"):
            walk.change(*override, keep=step == "save")
        elif step == "attach":
            walk.attach_server()
        elif step == "detach":
            walk.detach_server()
        elif step == "wait":
            walk.wait()
        else:
            walk.run(turn)
