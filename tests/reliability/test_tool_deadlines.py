"""Tools on a live gunicorn: patterns that backtrack, a tool past the run's deadline, grep over 300 MB.

The servers here have one worker, so "the worker is free again" is the next request
answering, and the worker whose memory is measured is the one that ran the grep.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa

from hango.db.schema import memory_files, session_files
from tests.reliability.conftest import MakeTenant
from tests.reliability.figures import record
from tests.reliability.http import Http, make_agent, make_session
from tests.reliability.processes import gunicorn_workers
from tests.support.server import gunicorn_server

pytestmark = pytest.mark.server

RUN_TIMEOUT = 4.0
MARGIN = 10.0  # generous: one line's bounded search, and a loaded machine
MB = 1_000_000


@pytest.fixture(scope="module")
def short_runs(database_url: str) -> Iterator[str]:
    """One worker whose runs have a 4 s deadline (its gunicorn timeout is 34 s)."""
    env = {"HANGO_RUN_TIMEOUT": str(RUN_TIMEOUT), "HANGO_CONTEXT_TRY_TIMEOUT": str(RUN_TIMEOUT)}
    with gunicorn_server(database_url, workers=1, env=env) as url:
        yield url


def offline_session(who: Http) -> tuple[str, str]:
    """A session of an ``offline/echo`` agent with every filesystem tool; (agent id, session id)."""
    agent = make_agent(who, "offline/echo")
    return agent, make_session(who, agent)


def send_tools(who: Http, session_id: str, *calls: tuple[str, dict]):
    """One user message of ``/tool`` lines (the offline model calls them in order)."""
    lines = "\n".join(f"/tool {name} {json.dumps(args)}" for name, args in calls)
    return who.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": lines})


def tool_results(answer) -> list[dict]:
    return next(m["content"] for m in answer.json()["messages"] if m["content"][0]["type"] == "tool_result")


def test_a_backtracking_grep_pattern_answers_at_once_and_leaves_the_worker_free(
    short_runs: str, live_tenant: MakeTenant
) -> None:
    member = live_tenant(short_runs).member
    _, session = offline_session(member)

    started = time.monotonic()
    answer = send_tools(
        member,
        session,
        ("write_file", {"path": "/bait.txt", "content": "a" * 40 + "b"}),
        ("grep", {"pattern": "(a+)+$", "path": "/"}),
        ("grep", {"pattern": "(a+)+b", "path": "/"}),
    )
    took = time.monotonic() - started

    assert answer.status_code == 201, answer.text
    results = tool_results(answer)
    assert [r["is_error"] for r in results] == [False, False, False]
    assert results[1]["content"] == "no matches for (a+)+$ in /"
    assert results[2]["content"] == "/bait.txt:1: " + "a" * 40 + "b"
    assert member.get("/healthz").status_code == 200
    record("tools/backtracking_grep", seconds=round(took, 2), status=answer.status_code)


def test_a_glob_of_repeated_double_stars_against_a_deep_path_answers_at_once(
    short_runs: str, live_tenant: MakeTenant
) -> None:
    member = live_tenant(short_runs).member
    _, session = offline_session(member)
    deep = "/" + "/".join(["d"] * 60) + "/y.txt"

    started = time.monotonic()
    answer = send_tools(
        member,
        session,
        ("write_file", {"path": deep, "content": "deep"}),
        ("glob", {"pattern": "**/" * 30 + "x", "path": "/"}),
        ("glob", {"pattern": "**/" * 30 + "y.txt", "path": "/"}),
    )
    took = time.monotonic() - started

    assert answer.status_code == 201, answer.text
    results = tool_results(answer)
    assert results[1]["content"] == "no files match " + "**/" * 30 + "x in /"
    assert results[2]["content"] == deep
    assert member.get("/healthz").status_code == 200
    record("tools/repeated_double_star_glob", seconds=round(took, 2), status=answer.status_code)


def random_ab(rng: random.Random, size: int) -> str:
    return format(rng.getrandbits(size), f"0{size}b").translate(str.maketrans("01", "ab"))


def seed_session_files(engine: sa.Engine, tenant_id: str, session_id: str, rows: dict[str, str]) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.insert(session_files),
            [
                {"tenant_id": tenant_id, "session_id": session_id, "path": p, "content": c}
                for p, c in rows.items()
            ],
        )


def test_a_tool_past_the_run_deadline_ends_the_run_with_run_timeout_and_frees_the_worker(
    short_runs: str, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    member = live_tenant(short_runs).member
    _, session = offline_session(member)
    rng = random.Random(7)
    # 40 different random lines of a and b, which RE2 searches for this pattern in about half a
    # second each (its DFA gives up): far more work than the run's 4 s allow.
    lines = {f"/ab/{n:03}.txt": random_ab(rng, MB) for n in range(40)}
    seed_session_files(engine, member.tenant_id, session, lines)

    started = time.monotonic()
    answer = send_tools(member, session, ("grep", {"pattern": "[ab]*a[ab]{50}c", "path": "/ab"}))
    took = time.monotonic() - started

    assert answer.status_code == 504, answer.text
    assert answer.json()["error"]["code"] == "run_timeout"
    assert took < RUN_TIMEOUT + MARGIN
    runs = member.get(f"/v1/sessions/{session}/runs").json()["items"]
    assert [(r["status"], r["error"]["code"]) for r in runs] == [("timeout", "run_timeout")]
    assert member.get(f"/v1/sessions/{session}/messages").json()["items"] == []  # as it was
    again = member.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "still there?"})
    assert again.status_code == 201, again.text  # the worker and the session are free
    record("tools/grep_past_deadline", run_timeout_s=RUN_TIMEOUT, answered_s=round(took, 2), status=504)


@pytest.fixture(scope="module")
def one_worker(database_url: str) -> Iterator[str]:
    with gunicorn_server(database_url, workers=1) as url:
        yield url


def peak_rss(pid: int) -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    kb = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(kb) * 1024


def test_grep_over_300_mb_of_memory_files_grows_the_workers_memory_well_under_100_mb(
    one_worker: str, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(one_worker).owner
    agent, session = offline_session(owner)
    rng = random.Random(3)
    body = "\n".join(rng.randbytes(50).hex()[:99] for _ in range(1000))  # 100 KB of 1,000 lines
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "insert into memory_files (tenant_id, agent_id, path, content) "
                "select :tenant, :agent, '/memories/f' || lpad(n::text, 5, '0') || '.md', :body || n "
                "from generate_series(1, 3000) n"
            ),
            {"tenant": owner.tenant_id, "agent": agent, "body": body},
        )
        stored = conn.execute(sa.select(sa.func.sum(sa.func.length(memory_files.c.content)))).scalar_one()
    (worker,) = gunicorn_workers(one_worker)
    assert owner.get("/healthz").status_code == 200
    rss_before, peak_before = psutil.Process(worker).memory_info().rss, peak_rss(worker)

    answer = send_tools(owner, session, ("grep", {"pattern": "needle", "path": "/memories"}))

    rss_after, peak_after = psutil.Process(worker).memory_info().rss, peak_rss(worker)
    assert answer.status_code == 201, answer.text
    assert stored >= 300 * MB
    assert tool_results(answer)[0]["content"].startswith("no matches for needle in /memories")
    growth = max(rss_after - rss_before, peak_after - peak_before)
    assert growth < 50 * MB, growth
    record(
        "tools/grep_memory",
        stored_mb=stored // MB,
        rss_growth_mb=round((rss_after - rss_before) / MB, 1),
        peak_growth_mb=round((peak_after - peak_before) / MB, 1),
    )
