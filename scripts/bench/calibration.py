"""Measure calibration: how close inspect's calibrated total comes to what the provider reports.

Run from the repository root after ``.venv/bin/pip install -r requirements-bench.txt``::

    .venv/bin/python -m scripts.bench.calibration            # 9 agents x 30 calls: the docs' table
    .venv/bin/python -m scripts.bench.calibration --quick    # 3 agents x 8 calls: a correctness check

``hango serve`` (gunicorn, embedded PostgreSQL) runs agents whose ``anthropic/...``
model is a fake Anthropic server in this process. The fake reports as input tokens
what the reference tokenizer (``anthropic_tokenizer.count_tokens``, the BPE in the
``anthropic-tokenizer`` wheel) counts in the request it received: every system
block, every tool's JSON, and per message a role line plus each block's text, tool
input JSON or tool result. Each agent talks about one kind of content (the
Estimator benchmark's generated categories), one agent about all of them in turn;
a new session starts every ``SESSION_TURNS`` calls (every call for one more
agent that talks about all of them: the hardest case, no two requests alike).

For every call ``i`` after the first ``n`` of its agent, the calibrated estimate is
``estimate_i x median(reported / estimated of calls i-n .. i-1)``, the figure inspect
would have shown with ``n`` calls behind it; the error is against call ``i``'s
reported input. The script also checks that inspect's own ``calibration`` and
``calibrated_total`` equal that rule on each agent's last ``CALLS`` calls, and exits
non-zero when they differ.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import random
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import requests
import sqlalchemy as sa

from hango.db import make_engine
from hango.db.schema import agents, usage_records
from hango.inspector.calibration import CALLS
from scripts.bench.estimator import GENERATORS
from scripts.bench.hango_server import database, serving
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer

SESSION_TURNS = 10
MODEL = "anthropic/claude-bench"
TOOLS = ["ls", "read_file"]
ROLE_LINES = {"user": "\n\nHuman:", "assistant": "\n\nAssistant:"}
VARIED = "varied (all kinds in turn)"
VARIED_ALONE = "varied, a new session per call"
TIMEOUT = 60


@dataclass(frozen=True)
class Plan:
    agents: tuple[str, ...]  # a category of GENERATORS, VARIED or VARIED_ALONE each
    calls: int  # per agent
    after: tuple[int, ...]  # the calibration sizes reported


FULL = Plan((*GENERATORS, VARIED, VARIED_ALONE), 30, (1, 5, 20))
QUICK = Plan(("english prose", VARIED, VARIED_ALONE), 8, (1, 5))


# -- the fake's count ----------------------------------------------------------------------------


def block_texts(block: dict[str, Any] | str) -> list[str]:
    """The texts of one content block as the tokenizer sees them."""
    if isinstance(block, str):
        return [block]
    if block["type"] == "text":
        return [block["text"]]
    if block["type"] == "tool_use":
        return [block["name"], json.dumps(block["input"], ensure_ascii=False)]
    content = block.get("content", "")
    return [content] if isinstance(content, str) else [b.get("text", "") for b in content]


def request_texts(body: dict[str, Any]) -> list[str]:
    """Every text of an Anthropic Messages request: system blocks, tools' JSON, role lines and blocks."""
    system = body.get("system") or []
    texts = [system] if isinstance(system, str) else [b["text"] for b in system]
    texts += [json.dumps(t, ensure_ascii=False) for t in body.get("tools") or []]
    for message in body.get("messages", []):
        texts.append(ROLE_LINES[message["role"]])
        content = message["content"]
        for block in [content] if isinstance(content, str) else content:
            texts += block_texts(block)
    return texts


def reference_counter() -> Callable[[dict[str, Any]], int]:
    """The fake's input-token count: the reference tokenizer over every text of the request."""
    from anthropic_tokenizer import count_tokens

    return lambda body: sum(count_tokens(text) for text in request_texts(body) if text)


# -- driving hango -------------------------------------------------------------------------------


class Api:
    """hango's API with the bench principal's key."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.http = url, requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key}"

    def call(self, method: str, path: str, want: int, **kw: Any) -> dict[str, Any]:
        answer = self.http.request(method, self.url + path, timeout=TIMEOUT, **kw)
        if answer.status_code != want:
            raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text[:500]}")
        return answer.json()

    def send(self, session: str, content: str) -> None:
        """Send a user message and wait until its queued run has succeeded (the client's poll loop)."""
        run = self.call("POST", f"/v1/sessions/{session}/messages", 202, json={"content": content})
        deadline = time.monotonic() + TIMEOUT
        while run["state"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.05)
            run = self.call("GET", f"/v1/runs/{run['id']}", 200)
        if run["state"] != "succeeded":
            raise RuntimeError(f"run {run['id']} of session {session}: {run['status']} {run['error']}")


def texts_of(category: str, rng: random.Random) -> Callable[[], str]:
    """A source of texts of one category (all categories in turn for the varied agent)."""
    kinds = itertools.cycle(GENERATORS) if category in (VARIED, VARIED_ALONE) else itertools.repeat(category)
    return lambda: GENERATORS[next(kinds)](rng)[:1500]


def talk(api: Api, fake: FakeProviderServer, category: str, calls: int, rng: random.Random) -> dict[str, str]:
    """One agent of ``category`` making ``calls`` model calls; returns its id and its last session's."""
    text = texts_of(category, rng)
    body = {"name": category[:60], "model": MODEL, "system_prompt": text(), "tools": TOOLS}
    agent = api.call("POST", "/v1/agents", 201, json=body)["id"]
    session, every = "", 1 if category == VARIED_ALONE else SESSION_TURNS
    for turn in range(calls):
        if turn % every == 0:
            session = api.call("POST", "/v1/sessions", 201, json={"agent_id": agent})["id"]
        fake.reply(text())
        api.send(session, text())
    return {"agent": agent, "session": session}


def recorded(database_url: str, tenant_id: str) -> dict[str, list[tuple[int, int]]]:
    """Per agent name, its calls' (estimated, reported input) in call order."""
    reported = (
        usage_records.c.input_tokens + usage_records.c.cache_read_tokens + usage_records.c.cache_write_tokens
    )
    query = (
        sa.select(agents.c.name, usage_records.c.estimated_input_tokens, reported)
        .join(agents, agents.c.id == usage_records.c.agent_id)
        .where(usage_records.c.tenant_id == uuid.UUID(tenant_id))
        .order_by(usage_records.c.created_at)
    )
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(query).all()
    finally:
        engine.dispose()
    calls: dict[str, list[tuple[int, int]]] = {}
    for name, estimated, total in rows:
        calls.setdefault(name, []).append((estimated, total))
    return calls


# -- the figures ---------------------------------------------------------------------------------


def ratio_median(calls: Sequence[tuple[int, int]]) -> float:
    return statistics.median(reported / estimated for estimated, reported in calls)


def errors(calls: Sequence[tuple[int, int]], n: int | None) -> list[float]:
    """Per call after the first ``n``: the % error of its calibrated estimate (raw estimate if ``n`` is None)."""
    start = n or 0
    out = []
    for i in range(max(start, 1), len(calls)):
        estimated, reported = calls[i]
        ratio = 1.0 if n is None else ratio_median(calls[i - n : i])
        out.append(100 * (round(estimated * ratio) - reported) / reported)
    return out


def cell(values: Sequence[float]) -> str:
    """Mean, 90th percentile and worst absolute % error."""
    if not values:
        return "-"
    spread = sorted(abs(v) for v in values)
    p90 = spread[min(len(spread) - 1, int(0.9 * len(spread)))]
    return f"{statistics.fmean(spread):.1f} / {p90:.1f} / {spread[-1]:.1f}"


def render(calls: dict[str, list[tuple[int, int]]], after: Sequence[int]) -> str:
    """The table: per agent, the estimate's error and the calibrated error after n calls."""
    start = max(after)
    head = ["agent (content)", "calls", "estimate signed %", "estimate abs %"] + [
        f"after {n}, abs %" for n in after
    ]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    overall: dict[Any, list[float]] = {}
    for name, agent_calls in calls.items():
        # Every column is measured on the same calls: those with ``max(after)`` calls before them.
        raw = errors(agent_calls, None)[start - 1 :]
        columns = {n: errors(agent_calls, n)[start - n :] for n in after}
        for key, values in (("raw", raw), *columns.items()):
            overall.setdefault(key, []).extend(values)
        signed = f"{statistics.fmean(raw):+.1f}" if raw else "-"
        lines.append(
            f"| {name} | {len(agent_calls)} | {signed} | {cell(raw)} | "
            + " | ".join(cell(columns[n]) for n in after)
            + " |"
        )
    signed = f"{statistics.fmean(overall['raw']):+.1f}" if overall.get("raw") else "-"
    total = sum(len(c) for c in calls.values())
    lines.append(
        f"| **all** | {total} | {signed} | {cell(overall['raw'])} | "
        + " | ".join(cell(overall[n]) for n in after)
        + " |"
    )
    return "\n".join(lines)


def worst(calls: dict[str, list[tuple[int, int]]], n: int, count: int = 5) -> str:
    """The ``count`` calls with the largest calibrated error after ``n``, with their turn in their session."""
    found = [
        (abs(error), name, i)
        for name, agent_calls in calls.items()
        for i, error in enumerate(errors(agent_calls, n), start=n)
    ]
    top = sorted(found, reverse=True)[:count]
    return "; ".join(f"{name} call {i + 1} (turn {i % SESSION_TURNS + 1}): {e:.1f} %" for e, name, i in top)


def check_inspect(
    api: Api, last: dict[str, dict[str, str]], calls: dict[str, list[tuple[int, int]]]
) -> list[str]:
    """Where inspect's calibration differs from the median over each agent's last ``CALLS`` calls."""
    problems = []
    for name, ids in last.items():
        body = api.call("GET", f"/v1/sessions/{ids['session']}/context", 200)
        recent = calls[name[:60]][-CALLS:]
        ratio = ratio_median(recent)
        estimated = sum(group["after"] for group in body["totals"].values())
        if body["calibration"]["calls"] != len(recent) or abs(body["calibration"]["ratio"] - ratio) > 1e-4:
            problems.append(
                f"{name}: calibration {body['calibration']}, expected ratio {ratio:.4f} of {len(recent)}"
            )
        elif body["counted"] == "provider":  # a real count stands alone: no calibrated figure beside it
            if body["calibrated_total"] is not None:
                problems.append(
                    f"{name}: calibrated_total {body['calibrated_total']} beside the provider's count"
                )
        elif abs(body["calibrated_total"] - estimated * ratio) > 1:
            problems.append(
                f"{name}: calibrated_total {body['calibrated_total']}, expected {estimated * ratio:.0f}"
            )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """Run the agents, print the table, and check inspect's calibration against it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 agents x 8 calls (a correctness check)")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    rng = random.Random(args.seed)
    with (
        FakeProviderServer(counter=reference_counter()) as fake,
        database(rate_limit=100_000) as (data_dir, url, principal),
    ):
        env = {"HANGO_ANTHROPIC_BASE_URL": fake.anthropic_base_url, "ANTHROPIC_API_KEY": TEST_API_KEY}
        with serving(data_dir, url, principal, workers=1, env=env) as hango:
            api = Api(hango.url, principal["api_key"])
            last = {category: talk(api, fake, category, plan.calls, rng) for category in plan.agents}
            calls = recorded(url, principal["tenant_id"])
            problems = check_inspect(api, last, calls)
    print(
        f"anthropic-tokenizer {version('anthropic-tokenizer')}, Python {platform.python_version()}, seed {args.seed}"
    )
    print(
        f"{sum(len(c) for c in calls.values())} calls; absolute error % per cell: mean / 90th percentile / worst\n"
    )
    print(render(calls, plan.after))
    print(f"\nworst after {plan.after[1]}: {worst(calls, plan.after[1])}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
