"""The production shape on one machine: nginx in front of two web nodes, two queue workers, one PostgreSQL.

Each web node is a gunicorn of its own (its own process group and port) and each
worker a ``hango worker`` process of its own; nothing but the database joins them.
Limits and locks must hold across all of them: the quota, the member's request
budget, the session lock (one run per session), ETag/If-Match, and runs spread
over both workers.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from hango.messages import Message, Response, TextBlock, Usage
from tests.fakes.provider_server import MESSAGES, TEST_API_KEY, FakeProviderServer
from tests.reliability.conftest import MODEL, MakeTenant
from tests.reliability.http import Http, make_agent, make_session
from tests.reliability.test_concurrency import together
from tests.support.minutes import wait_for_fresh_minute
from tests.support.net import wait_until
from tests.support.nginx import nginx_proxy
from tests.support.server import gunicorn_server, queue_worker_pool

pytestmark = pytest.mark.server
WAIT = 120.0


@dataclasses.dataclass(frozen=True)
class Nodes:
    proxy: str
    web: tuple[str, str]
    provider: FakeProviderServer


@pytest.fixture(scope="module")
def nodes(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    log = Path(tmp_path_factory.mktemp("nodes")) / "node.log"
    with FakeProviderServer() as provider:
        env = {
            "HANGO_ANTHROPIC_BASE_URL": provider.anthropic_base_url,
            "ANTHROPIC_API_KEY": TEST_API_KEY,
            "HANGO_TRUSTED_PROXIES": "127.0.0.1",
            "HANGO_WORKER_CONCURRENCY": "1",  # so a second run in flight must go to the other worker
            "HANGO_JOB_QUEUE": f"nodes-{uuid.uuid4().hex[:12]}",  # the nodes' own queue, shared by all four
        }
        with (
            queue_worker_pool(database_url, env, log, count=2),
            gunicorn_server(database_url, workers=1, env=env, queue_workers=0) as first,
            gunicorn_server(database_url, workers=1, env=env, queue_workers=0) as second,
            nginx_proxy(first, second) as proxy,
        ):
            yield Nodes(proxy, (first, second), provider)


@pytest.fixture
def fresh_nodes(nodes: Nodes) -> Iterator[Nodes]:
    nodes.provider.reset()
    yield nodes
    nodes.provider.reset()


def on(who: Http, url: str) -> Http:
    """The same key, talking to ``url`` (a web node directly, or the proxy)."""
    return dataclasses.replace(who, url=url)


def answer(tokens: int) -> Response:
    return Response(Message("assistant", (TextBlock("ok"),)), "end_turn", Usage(input_tokens=tokens))


def test_the_quota_holds_across_web_nodes_and_workers(fresh_nodes: Nodes, live_tenant: MakeTenant) -> None:
    owner = live_tenant(fresh_nodes.proxy).owner
    assert owner.request("PATCH", "/v1/tenant", json={"token_quota": 100}).status_code == 200
    agent = make_agent(owner, MODEL)
    fresh_nodes.provider.reply(answer(150))

    spent = owner.post_and_wait(f"/v1/sessions/{make_session(owner, agent)}/messages", json={"content": "hi"})

    assert spent.status_code == 201, spent.json()
    for url in (fresh_nodes.proxy, *fresh_nodes.web):  # every node sees the month's usage
        node = on(owner, url)
        refused = node.post(f"/v1/sessions/{make_session(node, agent)}/messages", json={"content": "more"})
        assert refused.status_code == 402, refused.text
        assert refused.json()["error"]["code"] == "quota_exhausted"
    assert len(fresh_nodes.provider.bodies(MESSAGES)) == 1


def test_the_members_request_budget_holds_across_web_nodes(
    fresh_nodes: Nodes, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    limit = 20
    owner = live_tenant(fresh_nodes.proxy, limit=limit).owner
    wait_for_fresh_minute(engine, 10)
    clients = [on(owner, url) for url in fresh_nodes.web] * 20

    answers = together([lambda who=who: who.get("/v1/me") for who in clients])

    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == limit and statuses.count(429) == 40 - limit, statuses


def test_one_run_per_session_across_web_nodes(fresh_nodes: Nodes, live_tenant: MakeTenant) -> None:
    owner = live_tenant(fresh_nodes.proxy).owner
    session = make_session(owner, make_agent(owner, MODEL))
    fresh_nodes.provider.hang(3, times=1, path=MESSAGES)
    path = f"/v1/sessions/{session}/messages"
    a, b = (on(owner, url) for url in fresh_nodes.web)

    answers = together(
        [lambda: a.post(path, json={"content": "a"}), lambda: b.post(path, json={"content": "b"})]
    )

    assert sorted(r.status_code for r in answers) == [202, 409], [r.text for r in answers]
    assert next(r for r in answers if r.status_code == 409).json()["error"]["code"] == "session_busy"
    run = next(r for r in answers if r.status_code == 202).json()["id"]
    wait_until(lambda: owner.get(f"/v1/runs/{run}").json()["status"] == "completed", timeout=WAIT)
    assert a.post(path, json={"content": "c"}).status_code == 202  # free again once it ended


def test_etag_and_if_match_hold_across_web_nodes(fresh_nodes: Nodes, live_tenant: MakeTenant) -> None:
    owner = live_tenant(fresh_nodes.proxy).owner
    session = make_session(owner, make_agent(owner, MODEL))
    path = f"/v1/sessions/{session}/context-overrides"
    a, b = (on(owner, url) for url in fresh_nodes.web)
    etag = a.get(path).headers["ETag"]
    body = {"overrides": []}

    first = b.put(path, json=body, headers={"If-Match": etag})
    stale = a.put(path, json={"overrides": []}, headers={"If-Match": '"stale"'})

    assert first.status_code == 200, first.text
    assert stale.status_code == 412, stale.text


def test_runs_spread_over_both_workers(
    fresh_nodes: Nodes, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh_nodes.proxy).owner
    agent = make_agent(owner, MODEL)
    sessions = [make_session(owner, agent) for _ in range(4)]
    fresh_nodes.provider.hang(2, times=4, path=MESSAGES)

    queued = [owner.post(f"/v1/sessions/{s}/messages", json={"content": "hi"}) for s in sessions]

    assert [q.status_code for q in queued] == [202] * 4
    ids = [q.json()["id"] for q in queued]
    wait_until(
        lambda: all(owner.get(f"/v1/runs/{r}").json()["status"] == "completed" for r in ids), timeout=WAIT
    )
    # The suite's other live servers run queue workers on this database too: count this test's jobs.
    query = sa.text(
        "select count(distinct worker_id) from procrastinate_jobs"
        " where task_name = 'hango.run' and args->>'run_id' = any(:ids)"
    )
    with engine.connect() as conn:
        assert conn.execute(query, {"ids": ids}).scalar_one() >= 2
