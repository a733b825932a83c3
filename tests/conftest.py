"""Fixtures: a throwaway embedded PostgreSQL, the app, and tenants with keys per role."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from hypothesis import HealthCheck, settings
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hango.app import create_app
from hango.cli.admin import create_principal
from hango.db import make_engine
from hango.db.schema import metadata
from hango.providers import ProviderSettings, close_providers, load_sdks
from tests.fakes.provider_server import FakeProviderServer
from tests.support.clients import As, Tenant
from tests.support.database import migrated_postgres, worker_database
from tests.support.mcp import write_catalog
from tests.support.provider_env import clear_provider_env
from tests.support.server import gunicorn_server

TEST_RATE_LIMIT = 100_000

# Property tests judge behaviour, never speed: on a loaded 2-core machine one example may
# take seconds, so Hypothesis's per-example deadline and its too-slow checks are off.
settings.register_profile(
    "hango", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("hango")
SPANS = InMemorySpanExporter()
METRICS = InMemoryMetricReader()


def pytest_configure(config: pytest.Config) -> None:
    """Install in-memory telemetry before any app exists (``telemetry.setup`` then keeps it).

    And, before anything is collected, clear the shell's real provider keys and base URLs.
    """
    clear_provider_env()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(SPANS))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[METRICS]))


# The files that take longest (seconds at load 10-13 on 2 cores, pytest-xdist, December 2026), longest
# first. Under xdist a worker takes a whole file at a time (``--dist loadfile``) in collection order:
# handed out first, these overlap the many short files instead of leaving one worker alone at the end.
LONGEST_FILES = (
    "tests/foundation/test_run_command.py",  # 155: set-up and start from a clean clone
    "tests/perf/test_bench_quick.py",  # 112
    "tests/reliability/test_fuzz_openapi.py",  # 107
    "tests/perf/test_bench_suggestions_quick.py",  # 98
    "tests/reliability/test_inspector_properties.py",  # 94
    "tests/reliability/test_suggestion_properties.py",  # 77
    "tests/traces/test_phoenix.py",  # 67: Phoenix's start
    "tests/reliability/test_faults.py",  # 59
    "tests/reliability/test_tool_deadlines.py",  # 58
    "tests/perf/test_calibration_bench.py",  # 55
    "tests/browser/test_context_panel.py",  # 55
    "tests/inspector/test_try.py",  # 54
    "tests/api/test_isolation.py",  # 47
    "tests/agent/test_previews.py",  # 46
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, move the longest files to the front; a serial run keeps file order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {path: n for n, path in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


@pytest.fixture
def spans() -> Callable[[], tuple[ReadableSpan, ...]]:
    """The spans finished since the test started (call it after acting)."""
    SPANS.clear()
    return SPANS.get_finished_spans


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    """The in-memory reader of every metric recorded in this process (cumulative)."""
    return METRICS


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A migrated PostgreSQL: ``HANGO_TEST_DATABASE_URL``, or an embedded one in a temp folder.

    Each pytest-xdist worker is a process of its own, so it starts its own embedded server;
    on ``HANGO_TEST_DATABASE_URL`` it gets a database of its own beside the one named.
    """
    url = os.environ.get("HANGO_TEST_DATABASE_URL")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if url and worker:
        with worker_database(url, worker) as own:
            yield own
    elif url:
        yield url
    else:
        with migrated_postgres() as (_, url):
            yield url


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


DEADLOCK = "40P01"
LOCK_NOT_AVAILABLE = "55P03"
TRUNCATE_TRIES = 60  # each waits at most TRUNCATE_LOCK_TIMEOUT for its locks, then gives way
TRUNCATE_LOCK_TIMEOUT = "2s"


def empty_tables(engine: sa.Engine) -> None:
    """Truncate every table.

    A request a live server is still answering for the test that just ended (a page's last
    fetch) can hold a table the truncate needs while waiting for one it has taken; PostgreSQL
    then ends the truncate as a deadlock's victim. A queue worker's run still in flight can hold
    a table in one connection while it writes in another, which queues behind the waiting
    truncate: a deadlock PostgreSQL cannot see, so the truncate waits for its locks only
    ``TRUNCATE_LOCK_TIMEOUT`` and then gives way. The other work finishes either way, so the
    truncate is tried again (bounded) rather than leaving rows for the next test.
    """
    # procrastinate_jobs too (its events and periodic defers go with it): no job outlives its test.
    names = ", ".join([*(t.name for t in metadata.sorted_tables), "procrastinate_jobs"])
    for attempt in range(TRUNCATE_TRIES):
        try:
            with engine.begin() as conn:
                conn.execute(sa.text(f"set local lock_timeout = '{TRUNCATE_LOCK_TIMEOUT}'"))
                conn.execute(sa.text(f"truncate {names} cascade"))
            return
        except sa.exc.OperationalError as exc:
            given_way = getattr(exc.orig, "pgcode", None) in (DEADLOCK, LOCK_NOT_AVAILABLE)
            if not given_way or attempt == TRUNCATE_TRIES - 1:
                raise
            time.sleep(0.5)


@pytest.fixture
def clean_db(engine: sa.Engine) -> Iterator[None]:
    """Empty every table after the test."""
    yield
    empty_tables(engine)


# Each in-process app queues its runs on a queue of its own: the session's live servers run queue
# workers on the same database, and no worker or drain may take a job of an app configured
# differently (another app's provider settings, or a job a previous test left queued).
def in_process() -> dict[str, str]:
    return {"job_queue": f"in-process-{uuid.uuid4().hex[:12]}"}


@pytest.fixture(scope="session")
def mcp_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The operator catalog every test app has: the reference ``time`` and ``git`` stdio servers."""
    return write_catalog(tmp_path_factory.mktemp("mcp"))


@pytest.fixture(scope="session")
def session_app(database_url: str, mcp_catalog: Path) -> Flask:
    return create_app({"database_url": database_url, "mcp_catalog": mcp_catalog, **in_process()})


@pytest.fixture
def app(session_app: Flask, clean_db: None) -> Flask:
    return session_app


@pytest.fixture
def make_app(database_url: str, mcp_catalog: Path, clean_db: None):
    """Build an app with configuration overrides."""

    def build(**overrides) -> Flask:
        app = create_app(
            {"database_url": database_url, "mcp_catalog": mcp_catalog, **in_process(), **overrides}
        )
        # As each server worker does before it serves (wsgi.py): no call pays for an SDK's import
        # while its deadline runs. Under xdist a worker's first such test may come early in its run.
        load_sdks(ProviderSettings.from_config(app.config["HANGO"]))
        return app

    return build


@pytest.fixture
def client(app: Flask):
    return app.test_client()


def _principal(engine: sa.Engine, client, tenant: str, email: str, role: str) -> As:
    with engine.begin() as conn:
        made = create_principal(conn, tenant, email, role, TEST_RATE_LIMIT)
    return As(client, made["api_key"], made["tenant_id"], made["user_id"], role)


def _tenant(engine: sa.Engine, client, name: str) -> Tenant:
    slug = name.lower()
    owner = _principal(engine, client, name, f"owner@{slug}.test", "owner")
    return Tenant(
        id=owner.tenant_id,
        owner=owner,
        admin=_principal(engine, client, name, f"admin@{slug}.test", "admin"),
        member=_principal(engine, client, name, f"member@{slug}.test", "member"),
        member2=_principal(engine, client, name, f"member2@{slug}.test", "member"),
    )


@pytest.fixture
def acme(engine: sa.Engine, client) -> Tenant:
    """Tenant A: owner, admin and two members."""
    return _tenant(engine, client, "Acme")


@pytest.fixture
def globex(engine: sa.Engine, client) -> Tenant:
    """Tenant B, for isolation cases."""
    return _tenant(engine, client, "Globex")


@pytest.fixture(scope="session")
def live_server(database_url: str) -> Iterator[str]:
    """The base URL of a gunicorn server (2 workers) on the test database."""
    with gunicorn_server(database_url) as url:
        yield url


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    """A fake Anthropic/OpenAI server; the adapters built for it are closed with it."""
    with FakeProviderServer() as server:
        yield server
    close_providers()
