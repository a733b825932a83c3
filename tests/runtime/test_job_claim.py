"""Which job a worker takes next: fair between tenants, then members, then by age; and when it wakes.

The claim is one statement in the database (``procrastinate_fetch_job_v2``, revision
0016), so these tests pin it where it lives: jobs deferred through procrastinate as the
web defers them, claimed with the statement procrastinate's worker runs, one claim at a
time, the rows read back. Two tests run procrastinate's own worker: a quiet tenant's run
takes the slot a busy tenant's queue would have taken, and a worker waiting for a
session's lock wakes as soon as the reaper frees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import procrastinate
import pytest
import sqlalchemy as sa

from hango.agent.deps import Deps
from hango.jobs import defer_run, web_queue
from hango.store.job_slots import others_waiting
from hango.store.runs import SCRATCH_TURN_KIND
from hango.worker import STALLED_HEARTBEATS, fail_stalled_jobs, reap_task, worker_queue
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.conftest import OpenChat
from tests.support.clients import As, Tenant
from tests.support.net import wait_until
from tests.support.queue import drain, worker_thread

WAIT = 60.0
NOOP_TASK = "tests.noop"


@dataclass(frozen=True)
class Run:
    """What ``defer_run`` reads of a run row."""

    tenant_id: uuid.UUID
    user_id: uuid.UUID
    session_id: uuid.UUID
    kind: str = "message"
    id: uuid.UUID = dataclasses.field(default_factory=uuid.uuid4)


class Queue:
    """One queue of the test database: defer jobs as the web does, claim them as a worker does."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.name = f"claim-{uuid.uuid4().hex[:12]}"
        self.web = web_queue(engine)
        with engine.begin() as conn:
            self.worker_id = conn.execute(sa.text("select procrastinate_register_worker_v1()")).scalar_one()

    def defer(self, run: Run) -> int:
        with self.engine.begin() as conn:
            return defer_run(self.web, conn, run, None, self.name)

    def defer_periodic(self, task: procrastinate.Task) -> int:
        """A job with no tenant, as the periodic reaper's and fold's are."""
        with self.engine.begin() as conn:
            deferrer = self.web.configure_task(task.name, connection=conn, queue=self.name)
            return deferrer.defer(timestamp=0)

    def claim(self, open_slots: int | None = None) -> int | None:
        """The job the next worker's fetch takes (``None``: nothing it may take); ``open_slots`` as a
        worker with ``HANGO_QUEUE_HEADROOM`` sets it on its connections."""
        query = sa.text("select id from procrastinate_fetch_job_v2(array[:queue]::varchar[], :worker)")
        with self.engine.begin() as conn:
            if open_slots is not None:
                conn.execute(
                    sa.text("select set_config('hango.claim_open_slots', :n, true)"), {"n": str(open_slots)}
                )
            return conn.execute(query, {"queue": self.name, "worker": self.worker_id}).scalar_one()

    def give_back(self, job_id: int) -> None:
        """The running job goes back to the queue as a run giving its slot back does (procrastinate's retry)."""
        with self.engine.begin() as conn:
            conn.execute(
                sa.text("select procrastinate_retry_job_v2(:id, now(), null, null, null)"), {"id": job_id}
            )

    def wants_slot(self, job_id: int, open_slots: int | None = None) -> bool:
        """Whether the running job, at a turn boundary, gives its slot back (``others_waiting``)."""
        with self.engine.begin() as conn:
            return others_waiting(conn, job_id, open_slots)

    def boundaries(self, running: list[int], rounds: int) -> list[tuple[int, int]]:
        """Each running job meets ``rounds`` turn boundaries, one job after the other as a worker's runs do:
        a job that gives its slot back goes back to the queue and the worker claims its next job at once.
        The slots that moved, each (the job that gave it, the job that took it)."""
        moves = []
        for _ in range(rounds):
            for job in list(running):
                if job in running and self.wants_slot(job):
                    self.give_back(job)
                    taken = self.claim()
                    assert taken is not None
                    running[running.index(job)] = taken
                    moves.append((job, taken))
        return moves

    def finish(self, job_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                sa.text("select procrastinate_finish_job_v1(:id, 'succeeded', false)"), {"id": job_id}
            )


@pytest.fixture
def queue(engine: sa.Engine, clean_db: None) -> Queue:
    return Queue(engine)


def member_of(tenant: uuid.UUID) -> Run:
    """A run of a fresh member of ``tenant``, on a session of its own."""
    return Run(tenant, uuid.uuid4(), uuid.uuid4())


def test_the_next_job_claimed_is_the_tenant_with_fewest_running_not_the_oldest(queue: Queue) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    member = uuid.uuid4()
    flood = [queue.defer(Run(a, member, uuid.uuid4())) for _ in range(3)]
    quiet = queue.defer(member_of(b))

    claimed = [queue.claim(), queue.claim(), queue.claim(), queue.claim()]

    assert claimed == [flood[0], quiet, flood[1], flood[2]]


def test_busy_tenants_take_turns_one_job_each(queue: Queue) -> None:
    tenants = [uuid.uuid4() for _ in range(3)]
    jobs = {t: [queue.defer(member_of(t)) for _ in range(3)] for t in tenants}  # each tenant's in a row

    claimed = [queue.claim() for _ in range(9)]

    assert claimed == [jobs[t][i] for i in range(3) for t in tenants]


def test_a_tenant_whose_jobs_ended_is_served_before_one_still_running(queue: Queue) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    first_a, first_b = queue.defer(member_of(a)), queue.defer(member_of(b))
    second_a, second_b = queue.defer(member_of(a)), queue.defer(member_of(b))
    assert [queue.claim(), queue.claim()] == [first_a, first_b]

    queue.finish(first_b)  # b's slot frees: b has none running, a has one

    assert queue.claim() == second_b
    assert queue.claim() == second_a


def test_inside_a_tenant_members_take_turns(queue: Queue) -> None:
    tenant, busy, quiet = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    busy_jobs = [queue.defer(Run(tenant, busy, uuid.uuid4())) for _ in range(3)]
    quiet_job = queue.defer(Run(tenant, quiet, uuid.uuid4()))

    claimed = [queue.claim() for _ in range(4)]

    assert claimed == [busy_jobs[0], quiet_job, busy_jobs[1], busy_jobs[2]]


def test_a_sessions_jobs_still_run_one_at_a_time_in_the_order_queued(queue: Queue) -> None:
    tenant, member, session = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    first, second = (queue.defer(Run(tenant, member, session)) for _ in range(2))
    other = queue.defer(member_of(uuid.uuid4()))

    assert [queue.claim(), queue.claim(), queue.claim()] == [first, other, None]  # second waits for first
    queue.finish(first)
    assert queue.claim() == second


def test_a_try_job_without_a_lock_runs_beside_its_sessions_run(queue: Queue) -> None:
    tenant, member, session = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    running = queue.defer(Run(tenant, member, session))
    waiting = queue.defer(Run(tenant, member, session))
    tried = queue.defer(Run(tenant, member, session, kind=SCRATCH_TURN_KIND))

    assert [queue.claim(), queue.claim(), queue.claim()] == [running, tried, None]
    queue.finish(running)
    assert queue.claim() == waiting


def test_the_periodic_jobs_without_a_tenant_are_claimed_while_tenants_are_busy(queue: Queue) -> None:
    tenant = uuid.uuid4()
    flood = [queue.defer(member_of(tenant)) for _ in range(2)]
    reap = queue.defer_periodic(reap_task)

    assert [queue.claim(), queue.claim(), queue.claim()] == [flood[0], reap, flood[1]]


def test_headroom_keeps_a_workers_other_slots_for_tenants_with_nothing_running(queue: Queue) -> None:
    busy, quiet = uuid.uuid4(), uuid.uuid4()
    flood = [queue.defer(member_of(busy)) for _ in range(3)]

    assert queue.claim(open_slots=1) == flood[0]
    assert queue.claim(open_slots=1) is None  # the worker holds its one open slot: the flood waits
    reap = queue.defer_periodic(reap_task)
    quick = queue.defer(member_of(quiet))
    assert [queue.claim(open_slots=1), queue.claim(open_slots=1)] == [
        reap,
        quick,
    ]  # nothing running: kept slots
    assert queue.claim(open_slots=1) is None
    queue.finish(flood[0])
    assert queue.claim(open_slots=3) == flood[1]  # two held (the reaper, the quick run) of three open
    assert queue.claim(open_slots=3) is None  # three held: none left open to a tenant with jobs running


def test_a_run_yields_only_to_a_job_the_freed_slot_may_take(queue: Queue) -> None:
    busy, served, quiet = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    running = [queue.defer(member_of(busy)) for _ in range(3)]
    assert [queue.claim() for _ in range(3)] == running
    first = queue.defer(member_of(served))
    waiting = queue.defer(member_of(served))
    assert queue.claim() == first  # the worker holds 4: busy 3, served 1 (one waits)

    def yields(open_slots: int | None) -> bool:
        with queue.engine.begin() as conn:
            return others_waiting(conn, running[0], open_slots)

    assert yields(None)  # served would run 2 and busy 2: less served than busy's 3
    assert not yields(3)  # with headroom 1, the freed slot is kept for tenants with nothing running
    queue.defer(member_of(quiet))
    assert yields(3)  # which the quiet tenant is
    queue.finish(first)  # served's first ends: the freed slot takes its waiting job, nobody yields for it
    assert queue.claim() == waiting


def test_a_run_does_not_yield_to_a_tenant_that_would_then_be_served_as_much(queue: Queue) -> None:
    busy, other = uuid.uuid4(), uuid.uuid4()
    running = [queue.defer(member_of(busy)) for _ in range(2)]
    assert [queue.claim(), queue.claim()] == running
    first = queue.defer(member_of(other))
    assert queue.claim() == first
    queue.defer(member_of(other))

    with queue.engine.begin() as conn:
        assert not others_waiting(
            conn, running[0], None
        )  # other would run 2, busy 1: no trade back and forth


def post(who: As, session_id: str, text: str) -> str:
    sent = who.post(f"/v1/sessions/{session_id}/messages", json={"content": text})
    assert sent.status_code == 202, sent.get_json()
    return sent.get_json()["id"]


def session_of(who: As, agent_id: str | None = None) -> str:
    """A new session of ``agent_id`` (a new agent of the fake model when None)."""
    if agent_id is None:
        agent = who.post("/v1/agents", json={"name": "quiet", "model": "anthropic/claude-test", "tools": []})
        assert agent.status_code == 201, agent.get_json()
        agent_id = agent.get_json()["id"]
    session = who.post("/v1/sessions", json={"agent_id": agent_id})
    assert session.status_code == 201, session.get_json()
    return session.get_json()["id"]


def last_user_text(body: dict) -> str:
    return " ".join(block["text"] for block in body["messages"][-1]["content"] if block["type"] == "text")


def test_a_quiet_tenants_run_takes_the_free_slot_before_a_busy_tenants_queued_runs(
    open_chat: OpenChat, globex: Tenant, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    busy = chat.who
    quiet = dataclasses.replace(globex.owner, client=busy.client)  # the same app: the same queue
    sessions = [chat.session_id, session_of(busy, chat.agent_id), session_of(busy, chat.agent_id)]
    release = threading.Event()

    def hold_the_slow(body: dict) -> None:
        if "slow" in last_user_text(body):
            release.wait(WAIT)

    fake.validator = hold_the_slow
    flood = [post(busy, session, f"slow {n}") for n, session in enumerate(sessions)]
    quick = post(quiet, session_of(quiet), "quick")

    worker = threading.Thread(target=drain, args=(busy.client.application, 2))
    worker.start()
    try:
        wait_until(lambda: len(fake.bodies(MESSAGES)) >= 2, timeout=WAIT)
        first_two = {last_user_text(body) for body in fake.bodies(MESSAGES)[:2]}
    finally:
        release.set()
        worker.join(timeout=WAIT * 3)

    # Two slots: the flood's first run holds one; the other goes to globex, not to the flood's second.
    assert first_two == {"slow 0", "quick"}
    ended = [busy.get(f"/v1/runs/{run}").get_json()["status"] for run in flood]
    assert ended == ["completed"] * 3
    assert quiet.get(f"/v1/runs/{quick}").get_json()["status"] == "completed"


@contextlib.contextmanager
def listening_worker(app: procrastinate.App, queue: str) -> Iterator[threading.Event]:
    """Procrastinate's worker on ``queue``, waking only on a notification (its poll is an hour away).

    Yields an event set once it has found nothing to take and waits.
    """
    idle = threading.Event()
    fetch = app.job_manager.fetch_job

    async def fetch_and_tell(**kwargs):
        job = await fetch(**kwargs)
        if job is None:
            idle.set()
        return job

    app.job_manager.fetch_job = fetch_and_tell
    options = {"queues": [queue], "concurrency": 1, "fetch_job_polling_interval": 3600}
    with worker_thread(app, options, "listening-worker"):
        yield idle


def listens(engine: sa.Engine, queue: str) -> bool:
    """Whether some connection has run ``LISTEN`` on ``queue``'s channel (the worker's listener)."""
    query = sa.text(
        "select count(*) from pg_stat_activity where query like 'LISTEN %' and query like :channel"
    )
    with engine.connect() as conn:
        return conn.execute(query, {"channel": f"%procrastinate_queue_v1#{queue}%"}).scalar_one() > 0


def status(engine: sa.Engine, job_id: int) -> str:
    with engine.connect() as conn:
        return conn.execute(
            sa.text("select status from procrastinate_jobs where id = :id"), {"id": job_id}
        ).scalar_one()


def test_a_waiting_worker_starts_a_sessions_next_job_as_soon_as_the_reaper_fails_the_stalled_one(
    engine: sa.Engine, clean_db: None, make_app
) -> None:
    deps = Deps(engine, make_app().config["HANGO"])
    name = deps.config.job_queue
    with engine.begin() as conn:  # a worker that died: its heartbeat stopped an hour ago
        dead = conn.execute(
            sa.text(
                "insert into procrastinate_workers (last_heartbeat) values (now() - interval '1 hour') returning id"
            )
        ).scalar_one()
        web = web_queue(engine)
        stalled, after = (
            web.configure_task(NOOP_TASK, connection=conn, queue=name, lock="session:s").defer()
            for _ in range(2)
        )
        conn.execute(
            sa.text("update procrastinate_jobs set status = 'doing', worker_id = :w where id = :id"),
            {"w": dead, "id": stalled},
        )
    app = worker_queue(deps, periodic=False)
    app.task(name=NOOP_TASK, queue=name)(lambda: None)

    with listening_worker(app, name) as idle:
        wait_until(lambda: idle.is_set() and listens(engine, name), timeout=WAIT)
        assert status(engine, after) == "todo"  # the session's lock is held by the dead worker's job

        reaper = worker_queue(deps, periodic=False)

        async def reap() -> list[int]:
            async with reaper.open_async():
                return await fail_stalled_jobs(
                    reaper.job_manager, name, deps.config.worker_heartbeat * STALLED_HEARTBEATS
                )

        # on a thread of its own: the test's thread may hold another test's event loop
        with ThreadPoolExecutor(1) as thread:
            assert thread.submit(asyncio.run, reap()).result() == [stalled]
        wait_until(lambda: status(engine, after) == "succeeded", timeout=WAIT)  # not an hour: it was woken


def test_a_quiet_tenants_every_queued_run_takes_a_slot_at_the_busy_runs_next_turn_boundaries(
    queue: Queue,
) -> None:
    busy, quiet = uuid.uuid4(), uuid.uuid4()
    member = uuid.uuid4()
    flood = [queue.defer(Run(busy, member, uuid.uuid4())) for _ in range(8)]
    running = [queue.claim() for _ in range(4)]
    assert running == flood[:4]
    quick = [queue.defer(member_of(quiet)) for _ in range(3)]

    moves = queue.boundaries(running, rounds=3)

    # All three quiet runs at the first boundaries, the third too: a run given back still counts as
    # its tenant's (4 in progress), so the quiet tenant at 2 still has fewer; then nothing moves.
    assert moves == list(zip(flood[:3], quick, strict=True))
    assert sorted(running) == sorted([flood[3], *quick])
    for job in quick:
        queue.finish(job)
    # The slots go back to the runs given back, before the busy member's runs never started.
    assert [queue.claim() for _ in range(3)] == flood[:3]


def test_two_equally_served_tenants_do_not_pass_a_slot_back_and_forth(queue: Queue) -> None:
    first, second = uuid.uuid4(), uuid.uuid4()
    jobs = {t: [queue.defer(Run(t, uuid.uuid4(), uuid.uuid4())) for _ in range(6)] for t in (first, second)}
    running = [queue.claim() for _ in range(4)]
    assert running == [jobs[first][0], jobs[second][0], jobs[first][1], jobs[second][1]]

    assert queue.boundaries(running, rounds=5) == []  # two and two: no slot moves

    queue.finish(jobs[first][0])  # a run ends: its tenant's next run takes the slot, two and two again
    assert queue.claim() == jobs[first][2]
    running[0] = jobs[first][2]
    assert queue.boundaries(running, rounds=5) == []


def test_an_odd_slot_stays_with_its_holder_between_two_busy_tenants(queue: Queue) -> None:
    first, second = uuid.uuid4(), uuid.uuid4()
    jobs = {t: [queue.defer(Run(t, uuid.uuid4(), uuid.uuid4())) for _ in range(6)] for t in (first, second)}
    running = [queue.claim() for _ in range(3)]  # a worker of three: two and one
    assert running == [jobs[first][0], jobs[second][0], jobs[first][1]]

    # the second tenant would have two in progress to the first's one once it takes the slot: it waits
    assert queue.boundaries(running, rounds=5) == []


def test_a_member_with_runs_given_back_is_still_served_before_another_members_first_run(
    queue: Queue,
) -> None:
    tenant, busy, quiet = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    flood = [queue.defer(Run(tenant, busy, uuid.uuid4())) for _ in range(4)]
    running = [queue.claim() for _ in range(3)]
    quick = [queue.defer(Run(tenant, quiet, uuid.uuid4())) for _ in range(2)]

    moves = queue.boundaries(running, rounds=2)

    # the busy member has three in progress: the quiet member's two runs each take a slot, then none moves
    assert moves == [(flood[0], quick[0]), (flood[1], quick[1])]
